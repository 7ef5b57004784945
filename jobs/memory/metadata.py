"""M55: a repository's metadata files are what they should be before libgit2 opens them.

libgit2 opens the files of a git directory with a blocking ``open()`` that follows
symlinks: a FIFO as ``.git/config`` or ``.git/index`` holds the observing thread for good,
and a worker's time limit cannot interrupt a C-level ``open()`` (issue 24). So before an
observation hands a repository to libgit2, every file it is about to open is checked with
``lstat``: ``.git`` must be a directory or a ``gitdir:`` file, the git directory (and a
``commondir``) a directory, and ``HEAD``, ``config``, ``commondir``, ``packed-refs``,
``index`` and the loose ref ``HEAD`` names regular files where present. Anything else makes
the observation ``unavailable`` with reason ``unreadable`` at once, naming what was found
(``.git/config is a FIFO``). The small files that name other files (a ``gitdir:`` file,
``commondir``, ``HEAD``) are read here no-follow, non-blocking and capped.

What lstat cannot see (a file swapped between the check and libgit2's ``open()``, files
that ``config`` names, ignore files, objects) is left to :mod:`watchdog`, with the limits
it states.
"""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path

from tidings.store.files import describe, safe_read

#: Files of the git directory libgit2 opens to open a repository and list its status
#: (the ``info/`` and ``objects/info/`` ones are opened while the GIL is held, so no
#: watchdog thread could release them: ``bench/memory_fifo.py``).
GIT_DIR_FILES = (
    "HEAD",
    "config",
    "commondir",
    "packed-refs",
    "index",
    "shallow",
    "info/exclude",
    "info/attributes",
    "info/grafts",
    "objects/info/alternates",
)
#: Files of a linked work tree's common directory it opens as well.
COMMON_DIR_FILES = (
    "config",
    "packed-refs",
    "shallow",
    "info/exclude",
    "info/attributes",
    "info/grafts",
    "objects/info/alternates",
)
#: The most bytes read from a ``gitdir:`` file, ``commondir`` or ``HEAD``.
POINTER_MAX_BYTES = 4096
#: The most bytes read from a ``config`` to find the files it includes, and how deep
#: includes are followed (libgit2 stops at 10 as well).
CONFIG_MAX_BYTES = 1_048_576
INCLUDE_DEPTH = 10
#: ``path = ...`` lines of ``[include]`` and ``[includeIf ...]`` sections.
_SECTION = re.compile(rb"^\s*\[\s*([A-Za-z.-]+)")
_PATH = re.compile(rb"^\s*path\s*=\s*(.*?)\s*$", re.IGNORECASE)


class RepositoryUnavailable(Exception):
    """M13: the configured path is not a usable work tree; ``reason`` says why."""

    def __init__(self, reason: str, detail: str = "") -> None:
        super().__init__(f"{reason}: {detail}" if detail else reason)
        self.reason = reason


def check(repo_path: str) -> str:
    """The git directory of the work tree at ``repo_path``, its metadata files checked;
    raises :class:`RepositoryUnavailable` (``unreadable`` or ``not_a_repository``)."""
    dotgit = os.path.join(repo_path, ".git")
    st = _lstat(dotgit)
    if st is None:
        raise RepositoryUnavailable("not_a_repository", f"no .git in {repo_path}")
    if stat.S_ISDIR(st.st_mode):
        git_dir = dotgit
    elif stat.S_ISREG(st.st_mode):
        git_dir = _pointed_dir(repo_path, ".git", b"gitdir:")
    else:
        raise _odd(".git", st)
    common_dir = git_dir
    for name in GIT_DIR_FILES:
        _regular_or_absent(git_dir, name, f".git/{name}")
    if _lstat(os.path.join(git_dir, "commondir")) is not None:
        common_dir = _pointed_dir(git_dir, "commondir", b"")
        for name in COMMON_DIR_FILES:
            _regular_or_absent(common_dir, name, f"commondir/{name}")
    _check_head_ref(git_dir, common_dir)
    for directory in {git_dir, common_dir}:
        _check_includes(directory, "config", depth=0)
    return git_dir


def _lstat(path: str) -> os.stat_result | None:
    try:
        return os.stat(path, follow_symlinks=False)
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as exc:
        raise RepositoryUnavailable("unreadable", f"{path}: {exc.strerror}") from None


def _odd(shown: str, st: os.stat_result) -> RepositoryUnavailable:
    return RepositoryUnavailable("unreadable", f"{shown} {describe(st.st_mode)}")


def _regular_or_absent(directory: str, name: str, shown: str) -> None:
    st = _lstat(os.path.join(directory, name))
    if st is not None and not stat.S_ISREG(st.st_mode):
        raise _odd(shown, st)


def _read_small(directory: str, name: str, shown: str) -> bytes:
    outcome = safe_read(Path(directory), name, POINTER_MAX_BYTES)
    if not outcome.ok:
        raise RepositoryUnavailable("unreadable", f"{shown} {outcome.what or outcome.kind}")
    return outcome.data


def _pointed_dir(base: str, name: str, prefix: bytes) -> str:
    """The directory a ``gitdir:`` file or ``commondir`` names (relative to ``base``)."""
    data = _read_small(base, name, name)
    if not data.startswith(prefix):
        raise RepositoryUnavailable("unreadable", f"{name} does not name a directory")
    target = os.path.join(base, os.fsdecode(data[len(prefix) :].strip()))
    st = _lstat(target)
    if st is None or not stat.S_ISDIR(st.st_mode):
        raise RepositoryUnavailable(
            "unreadable", f"{name} names {'nothing' if st is None else describe(st.st_mode)}"
        )
    return target


def _check_head_ref(git_dir: str, common_dir: str) -> None:
    """The loose ref a symbolic ``HEAD`` names, where git keeps it (either directory)."""
    if _lstat(os.path.join(git_dir, "HEAD")) is None:
        return  # libgit2 answers "not a repository" without opening anything more
    head = _read_small(git_dir, "HEAD", ".git/HEAD")
    if not head.startswith(b"ref: "):
        return
    ref = os.fsdecode(head[5:].strip())
    parts = ref.split("/")
    if parts[0] != "refs" or any(p in ("", ".", "..") for p in parts):
        return  # libgit2 refuses such a name itself, opening nothing
    for directory in {git_dir, common_dir}:
        _regular_or_absent(directory, ref, ref)


def _check_includes(directory: str, name: str, depth: int) -> None:
    """Files a ``config`` includes (``include.path``, ``includeIf.*.path``), which libgit2
    opens while pygit2 holds the GIL: regular files where present, followed ten deep."""
    path = os.path.join(directory, name)
    st = _lstat(path)
    if st is None or not stat.S_ISREG(st.st_mode) or depth >= INCLUDE_DEPTH:
        return
    outcome = safe_read(Path(directory), name, CONFIG_MAX_BYTES)
    section = b""
    for line in outcome.data.splitlines() if outcome.ok else ():
        header = _SECTION.match(line)
        if header is not None:
            section = header.group(1).lower()
            continue
        found = _PATH.match(line)
        if found is None or section not in (b"include", b"includeif"):
            continue
        target = os.path.expanduser(os.fsdecode(found.group(1).strip(b'"')))
        target = os.path.join(directory, target)  # relative to the including file
        included = _lstat(target)
        if included is not None and not stat.S_ISREG(included.st_mode):
            raise _odd(f"config include {target}", included)
        if included is not None:
            _check_includes(*os.path.split(target), depth=depth + 1)
