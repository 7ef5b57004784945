"""The data of one observation of a memory repository (memory-inbox.md M14-M18)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

#: M20: paths fingerprinted per observation; the rest only count towards the overflow.
MAX_PATHS = 20_000
#: M14: the checkpoint format this code writes and reads.
CHECKPOINT_FORMAT = 1

StatTuple = tuple[int, int, int, int, int]  # (dev, ino, size, mtime_ns, ctime_ns)
WorktreeType = Literal["file", "symlink", "gitlink", "directory", "other", "absent"]

# Git status flags (libgit2's GIT_STATUS_* values), kept as the listing's flags (M17, M20).
INDEX_NEW = 1
INDEX_MODIFIED = 2
INDEX_DELETED = 4
INDEX_TYPECHANGE = 16
WT_NEW = 128
WT_MODIFIED = 256
WT_DELETED = 512
WT_TYPECHANGE = 1024
WT_UNREADABLE = 4096
CONFLICTED = 32768
INDEX_FLAGS = INDEX_NEW | INDEX_MODIFIED | INDEX_DELETED | INDEX_TYPECHANGE
WORKTREE_FLAGS = WT_NEW | WT_MODIFIED | WT_DELETED | WT_TYPECHANGE | WT_UNREADABLE


@dataclass(frozen=True)
class Identity:
    """M15: which repository this is."""

    root: str
    git_dir: str  # "<st_dev>:<st_ino>" of the real git directory
    root_commit: str | None


@dataclass(frozen=True)
class HeadState:
    """M16: where HEAD points."""

    branch: str | None
    detached: bool
    unborn: bool
    head: str | None


@dataclass(frozen=True)
class IndexEntry:
    """One index entry of a path; stage 0 normally, 1-3 while conflicted."""

    stage: int
    mode: int
    id: str


@dataclass(frozen=True)
class TreeEntry:
    """A path's entry in the HEAD tree."""

    mode: int
    id: str


@dataclass(frozen=True)
class Worktree:
    """M18: what is on disk at a path: (type, mode, id)."""

    type: WorktreeType
    mode: int
    id: str | None


ABSENT = Worktree("absent", 0, None)


@dataclass(frozen=True)
class PathRecord:
    """M17: one listed path. ``head`` is its HEAD-tree entry (None: not in HEAD)."""

    flags: int
    head: TreeEntry | None
    index: tuple[IndexEntry, ...]
    worktree: Worktree
    stat: StatTuple | None

    @property
    def conflicted(self) -> bool:
        return any(entry.stage for entry in self.index)


@dataclass(frozen=True)
class Snapshot:
    """One observation. ``paths`` maps raw path bytes to records, at most MAX_PATHS."""

    identity: Identity
    head: HeadState
    paths: Mapping[bytes, PathRecord]
    overflow_count: int
    overflow_digest: str | None
    observed_at: str
    started_ns: int

    @property
    def last_path(self) -> bytes | None:
        """The last fingerprinted path when the listing overflowed (M20), else None."""
        if not self.overflow_count or not self.paths:
            return None
        return max(self.paths)


@dataclass(frozen=True)
class Unreadable:
    """M21: the stored checkpoint could not be used."""

    reason: str


@dataclass(frozen=True)
class TooNew:
    """M21: the stored checkpoint has a format newer than this code reads."""

    format: int


CheckpointState = Snapshot | Unreadable | TooNew

ObserveStatus = Literal["ok", "unstable", "unavailable"]


@dataclass(frozen=True)
class ObserveResult:
    """What :func:`tidings.jobs.memory.observe_worktree` found (M12, M13, M23)."""

    status: ObserveStatus
    snapshot: Snapshot | None = None
    reason: str | None = None
