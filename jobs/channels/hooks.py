"""The hooks registry actions ``add``, ``list``, ``edit``, ``drop`` (channels.md C38-C41).

Each mutation is a read-modify-write of ``.notification/hooks.json`` under the
``resource:hook-registry`` lock; the registry is unchanged on every error. A
successful action refreshes the agent's allowlist at once (C41) and takes a
newly registered channel out of the blocked-warning set (C28).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Literal, NotRequired, TypedDict

from tidings.jobs.channels import allowlisting, names
from tidings.jobs.channels.envelope import ErrorResult, failure, raised
from tidings.jobs.channels.manifests import Manifest
from tidings.jobs.runtime import Runtime
from tidings.store import locks
from tidings.store.errors import LockTimeout, UnsafePathError
from tidings.store.files import atomic_write, remove_file
from tidings.store.jsonfmt import compact
from tidings.store.jsonread import encodable, input_problem
from tidings.store.keys import AgentKeys
from tidings.store.models import MAX_RETAINED, MIN_RETAINED, AgentRecord

SCOPE = "resource:hook-registry"
#: C39: required non-empty strings, in stored order.
REQUIRED = ("name", "channel", "source", "description", "how_to_modify", "how_to_cancel")
#: C40: what ``edit`` may change.
EDITABLE = frozenset(
    {
        "version",
        "source",
        "description",
        "channel",
        "how_to_modify",
        "how_to_cancel",
        "instructions",
        "max_events",
    }
)
MANIFEST_FIELDS = frozenset({*REQUIRED, "version", "instructions", "max_events"})
DEFAULT_VERSION = "1.0.0"
#: C41: how much of a load error the result quotes.
LOAD_ERROR_CHARS = 300
#: C49: the largest manifest, serialised, and the largest registry file, in bytes.
#: The registry limit sits under the reader's 1 MiB (C19), so the agent can always
#: load, edit and drop what it added.
MAX_MANIFEST_BYTES = 16 * 1024
MAX_REGISTRY_BYTES = 1_048_576


class ManifestDoc(TypedDict):
    """C39: a manifest as :func:`normalise` stores it, in stored order."""

    name: str
    version: str
    channel: str
    source: str
    description: str
    how_to_modify: str
    how_to_cancel: str
    instructions: NotRequired[str]
    max_events: NotRequired[int]


class HookChanged(TypedDict):
    """C40: ``add``, ``edit`` or ``drop`` done (or an ``edit`` with nothing to change)."""

    status: Literal["ok"]
    reason: Literal["added", "edited", "dropped", "no_change"]
    name: str


class HookList(TypedDict):
    """C40 ``list``: the stored manifests as they are (outside writers' fields kept)."""

    status: Literal["ok"]
    hooks: list[dict[str, object]]


HookResult = HookChanged | ErrorResult


class _Invalid(Exception):
    pass


def load_failed(detail: str) -> ErrorResult:
    """C41: exactly this result for a registry that cannot be loaded."""
    return {
        "status": "error",
        "reason": "hook_registry_load_failed",
        "message": f"Could not load hooks.json: {detail[:LOAD_ERROR_CHARS]}",
    }


def _channel_problem(channel: str) -> str | None:
    problem = names.name_error(channel)
    if problem is not None:
        return problem
    if channel in names.BUILTIN_CHANNELS:
        return f"channel {channel!r} is a built-in channel; hooks need their own channel"
    if channel in names.RESERVED_STEMS:
        return f"channel {channel!r} is a reserved name, never a channel"
    return None


def normalise(fields: Mapping[str, object]) -> ManifestDoc:
    """C39: the manifest to store, or :class:`_Invalid` with the first problem."""
    unknown = set(fields) - MANIFEST_FIELDS
    if unknown:
        raise _Invalid(f"unknown manifest field(s): {', '.join(sorted(map(str, unknown)))}")
    shape = input_problem(fields, "manifest", max_bytes=MAX_MANIFEST_BYTES)  # C47-C49
    if shape is not None:
        raise _Invalid(shape.message)
    manifest: dict[str, str] = {}
    for key in REQUIRED:
        value = fields.get(key)
        if not isinstance(value, str) or not value.strip():
            raise _Invalid(f"{key} must be a non-empty string")
        manifest[key] = value
    if len(manifest["name"]) > names.MAX_NAME_CHARS:  # C46
        raise _Invalid(f"name must be at most {names.MAX_NAME_CHARS} characters")
    problem = _channel_problem(manifest["channel"])
    if problem is not None:
        raise _Invalid(problem)
    version = fields.get("version")
    if version is not None and not isinstance(version, str):
        raise _Invalid("version must be a string")
    instructions = fields.get("instructions")
    if instructions is not None and not isinstance(instructions, str):
        raise _Invalid("instructions must be a string")
    max_events = fields.get("max_events")
    if max_events is not None and (
        isinstance(max_events, bool)
        or not isinstance(max_events, int)
        or not MIN_RETAINED <= max_events <= MAX_RETAINED
    ):
        raise _Invalid("max_events must be an integer in 1..10000")
    ordered: ManifestDoc = {
        "name": manifest["name"],
        "version": version or DEFAULT_VERSION,
        "channel": manifest["channel"],
        "source": manifest["source"],
        "description": manifest["description"],
        "how_to_modify": manifest["how_to_modify"],
        "how_to_cancel": manifest["how_to_cancel"],
    }
    if instructions:
        ordered["instructions"] = instructions
    if max_events is not None:
        ordered["max_events"] = max_events
    return ordered


def _holder(manifests: list[Manifest], channel: str, skip: str | None) -> str | None:
    for manifest in manifests:
        if manifest.channel == channel and manifest.name != skip:
            return manifest.name if manifest.name is not None else ""
    return None


def _index(manifests: list[Manifest], name: str) -> int | None:
    return next((i for i, m in enumerate(manifests) if m.name == name), None)


class _Full(Exception):
    pass


def _write(agent: AgentRecord, manifests: list[Manifest]) -> None:
    if manifests:
        data = compact([m.document() for m in manifests]).encode("utf-8")
        if len(data) > MAX_REGISTRY_BYTES:
            raise _Full(f"hooks.json would be {len(data)} bytes; the limit is 1 MiB")
        atomic_write(agent.root, allowlisting.HOOKS_FILE, data)
    else:  # C38: an empty registry deletes the file
        remove_file(agent.root, allowlisting.HOOKS_FILE)


Mutation = Callable[[list[Manifest]], tuple[HookResult, list[Manifest] | None]]


def _mutate(rt: Runtime, agent: AgentRecord, change: Mutation) -> HookResult:
    """Locked read-modify-write; ``change`` returns the result and the new registry
    (``None``: write nothing)."""
    try:
        with locks.hold(agent.root, SCOPE):
            loaded = allowlisting.load_registry(agent.root)
            if loaded.error is not None:
                return load_failed(loaded.error)
            result, manifests = change(list(loaded.manifests))
            if manifests is None:
                return result
            try:
                _write(agent, manifests)
            except _Full as exc:
                return failure("hook_registry_full", str(exc))
            except (OSError, UnsafePathError) as exc:
                return failure(
                    "hook_registry_write_failed",
                    f"could not write hooks.json: {type(exc).__name__}: {exc}",
                )
    except LockTimeout as exc:
        return raised(exc)
    except (OSError, UnsafePathError) as exc:  # C51: the lock itself could not be taken
        return failure(
            "hook_registry_write_failed",
            f"could not lock the hook registry: {type(exc).__name__}: {exc}",
        )
    allowlisting.invalidate(agent)
    allowlisting.registry_state(rt, agent)  # refresh the last-loaded set in Redis (C41)
    return result


def _unblock(rt: Runtime, agent: AgentRecord, channel: str) -> None:
    """C28: a channel that becomes allowed leaves the blocked set."""
    rt.redis.srem(AgentKeys(agent.agent_id).blocked, channel)


def add(rt: Runtime, agent: AgentRecord, fields: Mapping[str, object]) -> HookResult:
    """C40 ``add``."""
    added: list[str] = []

    def change(manifests: list[Manifest]) -> tuple[HookResult, list[Manifest] | None]:
        try:
            manifest = normalise(fields)
        except _Invalid as exc:
            return failure("invalid_manifest", str(exc)), None
        name, channel = manifest["name"], manifest["channel"]
        if _index(manifests, name) is not None:
            return failure("duplicate_name", f"a hook named {name!r} exists", name=name), None
        holder = _holder(manifests, channel, None)
        if holder is not None:
            return failure(
                "channel_in_use",
                f"channel {channel!r} belongs to hook {holder!r}",
                channel=channel,
                name=holder,
            ), None
        added.append(channel)
        return (
            {"status": "ok", "reason": "added", "name": name},
            [*manifests, Manifest.parse(manifest)],
        )

    result = _mutate(rt, agent, change)
    if result["status"] == "ok" and result["reason"] == "added":
        _unblock(rt, agent, added[0])
    return result


def list_hooks(rt: Runtime, agent: AgentRecord) -> HookList | ErrorResult:
    """C40 ``list``: the manifests in registry order."""
    loaded = allowlisting.load_registry(agent.root)
    if loaded.error is not None:
        return load_failed(loaded.error)
    return {"status": "ok", "hooks": [m.document() for m in loaded.manifests]}


def _name_problem(name: object) -> ErrorResult | None:
    if not isinstance(name, str) or not name:
        return failure("invalid_manifest", "name must be a non-empty string")
    if len(name) > names.MAX_NAME_CHARS:  # C46
        return failure(
            "invalid_manifest", f"name must be at most {names.MAX_NAME_CHARS} characters"
        )
    if not encodable(name):  # C48
        return failure("invalid_manifest", "not valid Unicode")
    return None


def edit(rt: Runtime, agent: AgentRecord, name: object, fields: Mapping[str, object]) -> HookResult:
    """C40 ``edit``: null fields are ignored; the merged manifest is revalidated."""
    unknown = set(fields) - EDITABLE
    problem = _name_problem(name) or (
        failure("invalid_manifest", f"edit cannot change: {', '.join(sorted(unknown))}")
        if unknown
        else None
    )
    changes = {k: v for k, v in fields.items() if v is not None}
    new_channel: list[str] = []

    def change(manifests: list[Manifest]) -> tuple[HookResult, list[Manifest] | None]:
        if problem is not None or not isinstance(name, str):
            return problem or failure("invalid_manifest", "name must be a non-empty string"), None
        at = _index(manifests, name)
        if at is None:
            return failure("not_found", f"no hook named {name!r}", name=name), None
        if not changes:
            return {"status": "ok", "reason": "no_change", "name": name}, None
        stored = manifests[at].raw
        known = {k: v for k, v in stored.items() if k in MANIFEST_FIELDS}
        try:
            manifest = normalise({**known, **changes})
        except _Invalid as exc:
            return failure("invalid_manifest", str(exc), name=name), None
        # Fields an outside writer added are kept as they were.
        document = {**manifest, **{k: v for k, v in stored.items() if k not in MANIFEST_FIELDS}}
        holder = _holder(manifests, manifest["channel"], name)
        if holder is not None:
            return failure(
                "channel_in_use",
                f"channel {manifest['channel']!r} belongs to hook {holder!r}",
                channel=manifest["channel"],
                name=holder,
            ), None
        new_channel.append(manifest["channel"])
        updated = [*manifests[:at], Manifest.parse(document), *manifests[at + 1 :]]
        return {"status": "ok", "reason": "edited", "name": name}, updated

    result = _mutate(rt, agent, change)
    if result["status"] == "ok" and result["reason"] == "edited":
        _unblock(rt, agent, new_channel[0])
    return result


def drop(rt: Runtime, agent: AgentRecord, name: object) -> HookResult:
    """C40 ``drop``: revokes the channel; never stops the hook's process."""
    problem = _name_problem(name)

    def change(manifests: list[Manifest]) -> tuple[HookResult, list[Manifest] | None]:
        if problem is not None or not isinstance(name, str):
            return problem or failure("invalid_manifest", "name must be a non-empty string"), None
        at = _index(manifests, name)
        if at is None:
            return failure("not_found", f"no hook named {name!r}", name=name), None
        return (
            {"status": "ok", "reason": "dropped", "name": name},
            [*manifests[:at], *manifests[at + 1 :]],
        )

    return _mutate(rt, agent, change)
