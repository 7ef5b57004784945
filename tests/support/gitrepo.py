"""Git repositories for tests, built with the ``git`` CLI (set-up only: the
observation under test never runs git)."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tidings.jobs.memory import ObserveResult, Snapshot, observe_worktree

GIT_ENV = {
    "GIT_AUTHOR_NAME": "Ada Example",
    "GIT_AUTHOR_EMAIL": "ada@example.invalid",
    "GIT_COMMITTER_NAME": "Ada Example",
    "GIT_COMMITTER_EMAIL": "ada@example.invalid",
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_TERMINAL_PROMPT": "0",
}

PathLike = str | bytes


def _raw(rel: PathLike) -> bytes:
    return rel if isinstance(rel, bytes) else rel.encode("utf-8")


class GitRepo:
    """A work tree under ``root`` with helpers to change it the way a person would."""

    def __init__(self, root: Path) -> None:
        self.root = root

    @classmethod
    def init(cls, root: Path, branch: str = "main") -> GitRepo:
        root.mkdir(parents=True, exist_ok=True)
        repo = cls(root)
        repo.git("init", "-q", "-b", branch)
        return repo

    @property
    def path(self) -> str:
        return str(self.root)

    def git(self, *args: str | bytes, check: bool = True) -> str:
        done = subprocess.run(
            ["git", "-c", "protocol.file.allow=always", "-c", "core.quotepath=off", *args],
            cwd=self.root,
            env={**os.environ, **GIT_ENV},
            capture_output=True,
            check=False,
        )
        if check and done.returncode:
            raise AssertionError(f"git {args!r} failed: {done.stderr.decode(errors='replace')}")
        return done.stdout.decode("utf-8", "replace").strip()

    def abspath(self, rel: PathLike) -> bytes:
        return os.path.join(os.fsencode(self.root), _raw(rel))

    def write(self, rel: PathLike, data: str | bytes = "") -> None:
        target = self.abspath(rel)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        with open(target, "wb") as handle:
            handle.write(data.encode() if isinstance(data, str) else data)

    def write_many(self, files: dict[str, bytes]) -> None:
        """Create many new files fast (directories made once, no buffering layer)."""
        root = os.fsencode(self.root)
        for folder in {os.path.dirname(rel) for rel in files}:
            os.makedirs(os.path.join(root, os.fsencode(folder)), exist_ok=True)
        for rel, data in files.items():
            fd = os.open(
                os.path.join(root, os.fsencode(rel)), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644
            )
            try:
                os.write(fd, data)
            finally:
                os.close(fd)

    def remove(self, rel: PathLike) -> None:
        os.unlink(self.abspath(rel))

    def commit(self, message: str = "change", *paths: str) -> str:
        self.git("add", "-A", "--", *(paths or (".",)))
        self.git("commit", "-q", "--allow-empty", "-m", message)
        return self.head()

    def head(self) -> str:
        return self.git("rev-parse", "HEAD")

    def blob_id(self, rel: PathLike) -> str:
        return self.git("hash-object", "--no-filters", "--", os.fsdecode(self.abspath(rel)))

    def age(self, seconds: float = 10.0) -> None:
        """Move every work tree file's mtime back, out of the racy window (M19)."""
        past = time.time() - seconds
        for folder, dirs, files in os.walk(self.root):
            dirs[:] = [d for d in dirs if d != ".git"]
            for name in files:
                os.utime(os.path.join(folder, name), (past, past), follow_symlinks=False)

    def diverge(self, name: str) -> None:
        """Branch ``other`` and ``main`` each commit their own ``name``: merging conflicts."""
        self.git("checkout", "-q", "-b", "other")
        self.write(name, "theirs\n")
        self.commit("theirs")
        self.git("checkout", "-q", "main")
        self.write(name, "ours\n")
        self.commit("ours")

    def observe(self, previous: Snapshot | None = None, now: float = 1_790_000_000.0) -> Snapshot:
        result: ObserveResult = observe_worktree(self.path, previous, now=now)
        assert result.status == "ok", result
        assert result.snapshot is not None
        return result.snapshot


@contextmanager
def fast_tmp(prefix: str) -> Iterator[Path]:
    """A scratch directory on tmpfs when there is one (big generated repositories are
    several times quicker to build there), removed afterwards."""
    base = "/dev/shm" if os.access("/dev/shm", os.W_OK) else None
    path = Path(tempfile.mkdtemp(prefix=prefix, dir=base))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)
