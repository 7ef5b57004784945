"""Who holds a lock or lease, and whether that process is gone (memory-inbox.md M52, the
scheduler lease of delay.md D18).

A lock's token carries its holder: ``<random> <host> <pid> <start>``, where ``host``
is this machine's name with its boot id and ``start`` the process's start time in
clock ticks since boot (``/proc/<pid>/stat``). A waiter on the same host can then
tell a crashed holder (no such process, a reused pid with another start time, or a
zombie) from a live one at once, without waiting out the lease. Where ``/proc`` is
missing the holder is never judged gone and the lease alone frees the lock.
"""

from __future__ import annotations

import os
import secrets
import socket
from functools import cache

_PROC = "/proc"
#: Process states of /proc/<pid>/stat that mean the process has exited.
_EXITED_STATES = frozenset("ZXx")


@cache
def this_host() -> str:
    """The machine's name and boot id: pids and start times mean something only there."""
    name = socket.gethostname().replace(" ", "_") or "localhost"
    try:
        with open(f"{_PROC}/sys/kernel/random/boot_id") as handle:
            boot = handle.read().strip()
    except OSError:
        boot = "unknown-boot"
    return f"{name}/{boot}"


def process_start(pid: int) -> str | None:
    """The start time (ticks since boot) of a live process ``pid``; None when there is
    no such process, it has exited, or ``/proc`` cannot tell."""
    try:
        with open(f"{_PROC}/{pid}/stat", "rb") as handle:
            stat = handle.read()
    except OSError:
        return None
    fields = stat[stat.rfind(b")") + 2 :].split()  # the name in () may hold spaces
    if len(fields) < 20 or fields[0].decode("ascii", "replace") in _EXITED_STATES:
        return None
    return fields[19].decode("ascii", "replace")


def new_token() -> str:
    """A fresh lock token naming this process as its holder."""
    return f"{secrets.token_hex(16)} {this_host()} {os.getpid()} {process_start(os.getpid())}"


def holder_gone(token: str) -> bool:
    """True only when ``token``'s holder ran on this host and that process is gone."""
    parts = token.split(" ")
    if len(parts) != 4 or parts[1] != this_host() or not parts[2].isdigit():
        return False
    if parts[3] == "None" or not os.path.isdir(_PROC + "/self"):
        return False  # the holder's start time, or /proc, is unknown: trust the lease
    return process_start(int(parts[2])) != parts[3]
