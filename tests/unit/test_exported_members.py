"""Front doors (guide.md, Layout; issue 31): each ``jobs/`` package lists its operations in its
``__init__.__all__``, and code outside the package imports only those names (the import-linter
contracts ``front-door-<package>``, checked by ``make lint``).

Pinned here as httpx's ``tests/test_exported_members.py`` pins its public names: a change to a
front door is a change to this file, seen in review; and every public name a front door binds
is in its ``__all__``, so nothing is reachable through it by accident.
"""

from __future__ import annotations

import importlib
import pkgutil
from pathlib import Path
from types import ModuleType

import pytest

import tidings.jobs

#: Each package's front door, as its ``__all__`` spells it (sorted as ruff's RUF022 sorts).
FRONT_DOORS: dict[str, list[str]] = {
    "cap": [
        "ATTENTION_STEM",
        "LOGS_DIR",
        "Block",
        "Lane",
        "Spiller",
        "Unserialisable",
        "cap_attention",
        "cap_lane",
        "cap_persistent",
        "measure",
        "planned_attention",
        "ruler_text",
        "sanitise_attention",
    ],
    "channels": [
        "CONTROL_SCOPE",
        "DAEMON",
        "DEAD_EVENT",
        "DELAY_ALARM",
        "EDITABLE",
        "MANIFEST_FIELDS",
        "NON_CHANNEL_FILES",
        "NOTIFICATION_DIR",
        "SYSTEM",
        "Allowlist",
        "DaemonControlError",
        "ErrorResult",
        "FileStat",
        "FpEntry",
        "KnownSets",
        "PublishResult",
        "add",
        "alarm_threshold",
        "allowlist",
        "channel_file",
        "channel_file_stat",
        "check_channel",
        "clear_all",
        "dead_channels",
        "dead_letter",
        "drop",
        "edit",
        "failure",
        "flush_channel",
        "list_hooks",
        "load_registry",
        "name_error",
        "not_allowlisted_message",
        "parse_mirror",
        "parse_payload",
        "peek_registry_state",
        "publish",
        "publish_daemon_event",
        "publish_event",
        "pushed_through",
        "raised",
        "read_control",
        "read_daemon",
        "read_minis",
        "reason_of",
        "refresh",
        "registry_state",
        "remove_events",
        "scan",
        "settle_intent",
        "settle_pending",
        "show",
        "summarise",
        "view_of",
        "wait_applied",
    ],
    "consumer": [
        "STATE_FILE",
        "Entry",
        "Notifications",
        "ToolResult",
        "alarm_plan",
        "attention_preview",
        "check_placeholder",
        "dismiss_channel",
        "dismiss_event",
        "dismiss_ref",
        "expire",
        "fingerprint",
        "is_placeholder",
        "latest_id",
        "observe",
        "owes_alarm",
        "prefetch",
        "prefetch_records",
        "read_state",
        "rehearse_expiry",
        "render",
        "render_attention",
        "request_delay",
        "signals_after",
        "stamp",
        "structural_problem",
        "sync_agent",
        "unavailable",
        "wait_for_wake",
        "wait_for_wake_async",
        "wake_deadline",
    ],
    "inbox": [
        "DEFAULT_PAGE",
        "MAX_OPEN",
        "MAX_TERMINAL",
        "MEMORY_SOURCE_KIND",
        "STATES",
        "STORED",
        "TRANSITIONS",
        "Admitted",
        "Ignored",
        "InboxError",
        "Item",
        "PublicItem",
        "Transition",
        "admit",
        "check_query",
        "ignore",
        "projected",
        "projection",
        "read_items",
        "recover",
        "render_inbox_text",
    ],
    "memory": [
        "DEFAULT_STANDING_FILES",
        "RECORDED",
        "CheckpointState",
        "Comparison",
        "ObservationResult",
        "ObserveResult",
        "Snapshot",
        "compare",
        "decode_checkpoint",
        "encode_checkpoint",
        "event_content",
        "observe_at_finish",
        "observe_memory",
        "observe_worktree",
        "render_memory_entry",
        "repository_problem",
        "result",
        "split_owned",
    ],
    "tick": [
        "HostSync",
        "PromptVisits",
        "prompt_visit",
        "start_prompt_visits",
        "sync_host",
    ],
    "turns": [
        "Begun",
        "PreparedTurn",
        "SideEffectMarked",
        "Startup",
        "TurnError",
        "TurnMemory",
        "begin_turn",
        "claim_turn",
        "finish_turn",
        "inline_pre_turn",
        "mark_side_effect",
        "prepare_turn",
        "skipped",
        "startup",
        "startup_all",
    ],
}


def door(package: str) -> ModuleType:
    return importlib.import_module(f"tidings.jobs.{package}")


def test_every_jobs_package_has_a_pinned_front_door() -> None:
    packages = {info.name for info in pkgutil.iter_modules(tidings.jobs.__path__) if info.ispkg}
    assert packages == set(FRONT_DOORS)


@pytest.mark.parametrize("package", sorted(FRONT_DOORS))
def test_the_front_door_lists_exactly_the_pinned_names(package: str) -> None:
    assert door(package).__all__ == FRONT_DOORS[package]


@pytest.mark.parametrize("package", sorted(FRONT_DOORS))
def test_every_public_name_of_the_front_door_is_in_all(package: str) -> None:
    module = door(package)
    submodules = {info.name for info in pkgutil.iter_modules(module.__path__)}
    public = {name for name in vars(module) if not name.startswith("_")} - submodules
    assert public == set(module.__all__)


@pytest.mark.parametrize("package", sorted(FRONT_DOORS))
def test_no_front_door_name_hides_a_module_of_its_package(package: str) -> None:
    """``from tidings.jobs.<package> import <name>`` must mean one thing: a name of
    ``__all__`` that is also a module's name would be the module to import-linter and the
    object to Python."""
    folder = Path(door(package).__file__ or "").parent
    assert not {name for name in FRONT_DOORS[package] if (folder / f"{name}.py").exists()}
