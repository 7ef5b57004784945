"""Channel names and the allowlist (channels.md C1-C7)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tidings.jobs.channels import Allowlist, add, allowlist, names, publishing
from tidings.jobs.consumer import observe
from tidings.jobs.runtime import Runtime
from tidings.store.models import AgentRecord

MANIFEST = {
    "name": "h",
    "channel": "deploys",
    "source": "s",
    "description": "d",
    "how_to_modify": "m",
    "how_to_cancel": "c",
}


def test_c1_channel_is_file_stem_and_attention_key(rt: Runtime, agent: AgentRecord) -> None:
    (agent.root / ".notification").mkdir()
    (agent.root / ".notification" / "mcp.build.json").write_text('{"header": "x"}')
    assert list(observe(rt, agent).payloads) == ["mcp.build"]


@pytest.mark.parametrize(
    ("name", "message"),
    [
        (None, "channel must be a non-empty string"),
        (5, "channel must be a non-empty string"),
        ("", "channel must be a non-empty string"),
        ("a..b", "channel must not contain '..'"),
        ("..", "channel must not contain '..'"),
        (".x", "channel must match ^[A-Za-z0-9][A-Za-z0-9_.-]*$"),
        ("-x", "channel must match ^[A-Za-z0-9][A-Za-z0-9_.-]*$"),
        ("a/b", "channel must match ^[A-Za-z0-9][A-Za-z0-9_.-]*$"),
        ("é", "channel must match ^[A-Za-z0-9][A-Za-z0-9_.-]*$"),
        ("a\n", "channel must match ^[A-Za-z0-9][A-Za-z0-9_.-]*$"),
    ],
)
def test_c2_exact_messages(name: object, message: str) -> None:
    assert names.name_error(name) == message


def test_c2_daemon_id_messages_say_daemon_id() -> None:
    assert names.name_error("", "daemon_id") == "daemon_id must be a non-empty string"
    assert names.name_error("a..b", "daemon_id") == "daemon_id must not contain '..'"


@given(st.from_regex(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,30}", fullmatch=True))
def test_c2_valid_syntax_accepted_unless_dotdot(name: str) -> None:
    assert (names.name_error(name) is None) == (".." not in name)


def test_c2_case_sensitive() -> None:
    allow = Allowlist()
    assert allow.allows("system") and not allow.allows("System")


def test_c3_builtins_exactly() -> None:
    assert {
        "bash",
        "btw",
        "cron",
        "daemon",
        "delay-alarm",
        "email",
        "goal",
        "molt",
        "nudge",
        "post-molt",
        "soul",
        "system",
        "tool_loop_guard",
    } == names.BUILTIN_CHANNELS
    allow = Allowlist()
    assert all(allow.allows(b) for b in names.BUILTIN_CHANNELS)


def test_c4_mcp_family_is_the_only_prefix() -> None:
    allow = Allowlist()
    assert allow.allows("mcp.x") and allow.allows("mcp.a.b-c_d")
    assert not allow.allows("mcp") and not allow.allows("mcpx") and not allow.allows("hook.x")
    assert not allow.allows("mcp..x")  # C2 first


def test_c5_hook_channel_allowed_for_its_agent_only(rt: Runtime, tmp_path: Path) -> None:
    from tests.conftest import make_agent

    one = make_agent(rt, tmp_path / "one", "one")
    two = make_agent(rt, tmp_path / "two", "two")
    assert add(rt, one, MANIFEST)["reason"] == "added"
    assert allowlist(rt, one).allows("deploys")
    assert not allowlist(rt, two).allows("deploys")


def test_c6_evaluation_order_and_message(rt: Runtime, agent: AgentRecord) -> None:
    bad = publishing.append_event(rt, agent, "a..b", {})
    assert bad["reason"] == "invalid_channel" and "not allowlisted" not in bad["message"]
    unknown = publishing.append_event(rt, agent, "deploys", {})
    assert unknown["reason"] == "invalid_channel"
    assert "not allowlisted" in unknown["message"]
    assert all(b in unknown["message"] for b in names.BUILTIN_CHANNELS)
    assert "mcp." in unknown["message"]


@pytest.mark.parametrize("stem", sorted(names.RESERVED_STEMS))
def test_c7_reserved_stems_refused_as_hook_channels(
    rt: Runtime, agent: AgentRecord, stem: str
) -> None:
    result = add(rt, agent, {**MANIFEST, "channel": stem})
    assert result["reason"] == "invalid_manifest" and "reserved" in result["message"]
    assert not (agent.root / ".notification" / "hooks.json").exists()


def test_c7_reserved_stems_never_channels_even_if_registered_by_hand(
    rt: Runtime, agent: AgentRecord
) -> None:
    d = agent.root / ".notification"
    d.mkdir()
    (d / "hooks.json").write_text(json.dumps([{**MANIFEST, "channel": "overflow"}]))
    (d / "overflow.json").write_text("{}")
    assert not allowlist(rt, agent).allows("overflow")
    assert "overflow" not in observe(rt, agent).payloads


def test_c7_daemon_json_is_a_report_not_a_channel(rt: Runtime, agent: AgentRecord) -> None:
    d = agent.root / ".notification"
    d.mkdir()
    (d / "daemon.json").write_text('{"header": "not a channel"}')
    obs = observe(rt, agent)
    assert "daemon" not in obs.payloads and obs.raw_fp == []
