"""The masked wake fingerprint (channels.md C25).

Starting from the raw fingerprint, an ordinary delayed target is omitted and the
``daemon.json`` entry is replaced by a token when one applies, so daemon
arrivals wake the agent only when they cross the alarm threshold, and never
while ``daemon`` is the delay target.
"""

from __future__ import annotations

from pathlib import Path

from tidings.jobs.channels import DAEMON, FpEntry, alarm_threshold, read_daemon

DAEMON_ENTRY = "daemon.json"
TOKEN_DELAYED = "daemon:delayed=1"
TOKEN_ALARM = "daemon:alarm=1"
TOKEN_QUIET = "daemon:alarm=0"


def daemon_token(root: Path, delayed: str | None, *, empty: bool = False) -> str | None:
    """``daemon:delayed=1`` wins; else, with a valid threshold, the alarm state
    (of an empty daemon directory when ``empty``)."""
    if delayed == DAEMON:
        return TOKEN_DELAYED
    threshold = alarm_threshold(root)
    if threshold is None:
        return None
    if empty:
        return TOKEN_QUIET
    batch = read_daemon(root).batch_state
    fired = bool(batch.get("alarm_fired")) or int(batch.get("count", 0)) > threshold
    return TOKEN_ALARM if fired else TOKEN_QUIET


def _masked(raw: list[FpEntry], delayed: str | None, token: str | None) -> list[FpEntry]:
    omitted = f"{delayed}.json" if delayed is not None and delayed != DAEMON else None
    masked = [list(entry) for entry in raw if entry[0] != omitted]
    if token is not None:
        masked = [entry for entry in masked if entry[0] != DAEMON_ENTRY]
        masked.append([DAEMON_ENTRY, 0, token])
    return sorted(masked, key=lambda entry: str(entry[0]))


def masked_fingerprint(root: Path, raw: list[FpEntry], delayed: str | None) -> list[FpEntry]:
    """C25: masked = raw − ordinary delayed target, daemon entry tokenised, re-sorted."""
    return _masked(raw, delayed, daemon_token(root, delayed))


def baseline(root: Path, delayed: str | None) -> list[FpEntry]:
    """C25: with nothing committed, the masked fingerprint of an empty directory."""
    return _masked([], delayed, daemon_token(root, delayed, empty=True))
