"""The bare coherent read: C21 snapshots and C22's bookended loop, without D9.

Private to :mod:`tidings.jobs.consumer`. delay.md D9 makes every coherent read
reconcile an overdue delay first; that step writes, so it is composed one level up
in :func:`tidings.jobs.consumer.coherent.observe` (guide.md rule 8), and every
consumer-facing path takes that composed read. Calling this module directly would
skip D9: an import-linter contract (pyproject.toml, "One way down") lets only
``tidings.jobs.consumer`` and the console's read-only preview import it (issue 21).
"""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple

from redis.exceptions import RedisError

from tidings.jobs.channels import (
    DAEMON,
    NOTIFICATION_DIR,
    Allowlist,
    FpEntry,
    allowlist,
    parse_payload,
    read_daemon,
)
from tidings.jobs.consumer import delay_state, wake_mask
from tidings.jobs.consumer.read import Observation, chosen, failed_read, fingerprint, read_entry
from tidings.jobs.runtime import Runtime
from tidings.store.errors import TidingsError
from tidings.store.files import directory
from tidings.store.models import AgentRecord

#: C22: attempts before an observation is marked unstable.
COHERENT_ATTEMPTS = 3


def _snapshot(
    root: Path, allow: Allowlist, exclude: str | None
) -> tuple[dict[str, dict[str, object]], list[FpEntry]]:
    payloads: dict[str, dict[str, object]] = {}
    seen: list[FpEntry] = []
    with directory(root, NOTIFICATION_DIR) as view:
        for entry in chosen(view, allow, exclude) if view is not None else []:
            read = read_entry(root, view, entry)
            if read is None:
                continue
            seen.append(read[0])
            payload = parse_payload(read[1])
            if payload is not None:
                payloads[entry.name[:-5]] = payload
    aggregate = read_daemon(root)
    if aggregate.fp_entry is not None:
        seen.append(list(aggregate.fp_entry))
    if aggregate.payload is not None:
        payloads[DAEMON] = aggregate.payload
    ordered = {name: payloads[name] for name in sorted(payloads)}
    return ordered, sorted(seen, key=lambda item: str(item[0]))


def snapshot(
    root: Path, allow: Allowlist, exclude: str | None = None
) -> dict[str, dict[str, object]]:
    """C21: ``{channel: payload}`` of allowed, readable, parseable files (fresh objects)."""
    return _snapshot(root, allow, exclude)[0]


class Opening(NamedTuple):
    """A fingerprint pass already taken (with the delay target it excluded): the first
    attempt's opening bookend, so that a visit which has just fingerprinted the files to
    see whether they changed does not do it again before reading (C22, C27)."""

    target: str | None
    raw: list[FpEntry]


def bare_read(
    rt: Runtime, agent: AgentRecord, allow: Allowlist | None = None, opening: Opening | None = None
) -> Observation:
    """C22 without D9: a stable observation of the consumer's view, or an unstable last
    attempt. Reads only, apart from refreshing the agent's stored hook channels (C41)
    unless ``allow`` is given. ``opening``: a fingerprint pass taken just before, used as
    the first attempt's opening bookend if it excluded the same delay target."""
    try:
        allow = allow if allow is not None else allowlist(rt, agent)
        target = delay_state.live_target(rt, agent, allow)
    except (RedisError, TidingsError, OSError) as exc:
        return failed_read(agent, exc)
    exclude = target if target != DAEMON else None
    root = agent.root
    payloads: dict[str, dict[str, object]] = {}
    raw: list[FpEntry] = []
    stable = False
    attempt = 0
    first = opening.raw if opening is not None and opening.target == target else None
    for attempt in range(1, COHERENT_ATTEMPTS + 1):
        before = first if first is not None and attempt == 1 else fingerprint(root, allow, exclude)
        payloads, seen = _snapshot(root, allow, exclude)
        after = fingerprint(root, allow, exclude)
        raw = after
        if before == seen == after:
            stable = True
            break
    masked = wake_mask.masked_fingerprint(root, raw, target)
    return Observation(stable, raw, masked, payloads, delayed=target, attempts=attempt)
