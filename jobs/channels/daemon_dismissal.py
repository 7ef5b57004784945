"""Dismissing daemon events atomically (channels.md C31).

The caller holds ``resource:daemon-control``. The new control record is written
first — that is the visibility cut: from then on readers no longer see the
dismissed events — and only then are the mini-files rewritten or deleted and
their entries dropped, best effort. A crash in between leaves entries that keep
applying until the next append or dismissal finishes the job.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path

from tidings.jobs import log
from tidings.jobs.channels.daemon_control import (
    BatchState,
    Cleared,
    Control,
    event_key,
    write_control,
)
from tidings.jobs.channels.daemon_view import DaemonView, mini_file, parse_mini
from tidings.store.files import atomic_write, remove_file, safe_read
from tidings.store.jsonfmt import compact, sha256_hex


def _compact_files(root: Path, cut: Control, names: Iterable[str]) -> None:
    """Physically apply the cut's entries of ``names`` and drop them (best effort)."""
    cleared = dict(cut.cleared)
    try:
        for name in names:
            entry = cleared.get(name)
            if entry is None:
                continue
            outcome = safe_read(root, mini_file(name))
            if outcome.kind == "absent" or (
                outcome.ok and sha256_hex(outcome.data) != entry.raw_sha256
            ):
                del cleared[name]  # gone or rewritten by someone else: it no longer applies
                continue
            if not outcome.ok:
                continue
            mini = parse_mini(name, outcome.data, cut)
            if mini is None or not mini.logical:
                remove_file(root, mini_file(name))
            else:
                atomic_write(root, mini_file(name), compact(mini.logical_envelope()).encode())
            del cleared[name]
    except OSError as exc:
        log.event("daemon_compaction_failed", workdir=str(root), error=type(exc).__name__)
    finally:
        if cleared != cut.cleared:
            write_control(root, cut.with_changes(cleared=cleared))


def clear_all(root: Path, control: Control, view: DaemonView) -> None:
    """A whole clear: cut every mini-file and reset the batch to ``{0, false}``."""
    cleared = dict(control.cleared)
    for mini in view.minis:
        cleared[mini.name] = Cleared(
            raw_sha256=mini.sha, event_keys=[event_key(e) for e in mini.events]
        )
    cut = control.with_changes(
        epoch=control.epoch + 1, cleared=cleared, batch_state=BatchState(), pending=None
    )
    write_control(root, cut)
    _compact_files(root, cut, [mini.name for mini in view.minis])


def remove_events(
    root: Path, control: Control, view: DaemonView, match: Callable[[object], bool]
) -> int:
    """Cut every visible event ``match`` accepts; returns how many were removed."""
    cleared = dict(control.cleared)
    touched: list[str] = []
    removed = 0
    for mini in view.minis:
        hits = [event for event in mini.logical if match(event)]
        if not hits:
            continue
        before = list(cleared[mini.name].event_keys) if mini.entry_applies else []
        cleared[mini.name] = Cleared(
            raw_sha256=mini.sha, event_keys=before + [event_key(e) for e in hits]
        )
        touched.append(mini.name)
        removed += len(hits)
    if removed:
        cut = control.with_changes(epoch=control.epoch + 1, cleared=cleared)
        write_control(root, cut)
        _compact_files(root, cut, touched)
    return removed
