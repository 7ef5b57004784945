"""The observation lock names its holder (memory-inbox.md M52)."""

from __future__ import annotations

import os
import subprocess
import sys

from tidings.store.holder import holder_gone, new_token, process_start, this_host


def test_token_names_this_process() -> None:
    _, host, pid, start = new_token().split(" ")
    assert (host, pid) == (this_host(), str(os.getpid()))
    assert start == process_start(os.getpid()) and start != "None"


def test_a_live_holder_is_not_gone() -> None:
    assert not holder_gone(new_token())


def test_an_exited_holder_on_this_host_is_gone() -> None:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    start = process_start(child.pid)
    child.wait()
    assert holder_gone(f"t {this_host()} {child.pid} {start}")


def test_a_reused_pid_is_gone() -> None:
    """Same pid, another start time: another process."""
    assert holder_gone(f"t {this_host()} {os.getpid()} 1")


def test_other_hosts_and_odd_tokens_are_trusted_to_the_lease() -> None:
    assert not holder_gone(f"t otherhost/boot {os.getpid() + 10**7} 5")
    assert not holder_gone("someone-else")
    assert not holder_gone(f"t {this_host()} 12 None")
    assert not holder_gone(f"t {this_host()} x 5")
