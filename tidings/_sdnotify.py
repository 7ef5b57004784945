"""systemd's readiness and watchdog protocol (``sd_notify``), over ``NOTIFY_SOCKET``.

A unit with ``Type=notify`` waits for ``READY=1``; with ``WatchdogSec=`` it expects
``WATCHDOG=1`` at least every ``WATCHDOG_USEC`` microseconds. Outside systemd
(no ``NOTIFY_SOCKET``) every call does nothing.
"""

from __future__ import annotations

import os
import socket

#: Environment variables a child process must not inherit: systemd would take
#: their messages for the main process's (NotifyAccess=main drops them, loudly).
NOTIFY_VARIABLES = ("NOTIFY_SOCKET", "WATCHDOG_USEC", "WATCHDOG_PID")


def notify(state: str) -> bool:
    """Send ``state`` (e.g. ``READY=1``); ``False`` when not under systemd or on error."""
    address = os.environ.get("NOTIFY_SOCKET")
    if not address:
        return False
    if address.startswith("@"):  # an abstract socket
        address = "\0" + address[1:]
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as sock:
            sock.sendto(state.encode(), address)
    except OSError:
        return False
    return True


def watchdog_interval() -> float | None:
    """Seconds between ``WATCHDOG=1`` pings (half the timeout), or ``None`` when off."""
    usec = os.environ.get("WATCHDOG_USEC")
    pid = os.environ.get("WATCHDOG_PID")
    if not usec or (pid and pid != str(os.getpid())):
        return None
    try:
        return max(int(usec) / 2e6, 0.1)
    except ValueError:
        return None
