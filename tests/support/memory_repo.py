"""Small Git memory repositories for tests, changed the way a person outside the agent
would: edits, removals, staging, commits, resets, amends and branch switches (pygit2,
no git subprocess)."""

from __future__ import annotations

import os
from pathlib import Path

import pygit2

SIGNATURE = pygit2.Signature("tester", "tester@example.invalid", 1_700_000_000, 0)


class MemoryRepo:
    """A non-bare repository in ``path`` with helpers that change it."""

    def __init__(self, path: Path, files: dict[str, str] | None = None) -> None:
        path.mkdir(parents=True, exist_ok=True)
        self.path = path
        self.repo = pygit2.init_repository(str(path), initial_head="main")
        if files is not None:
            for name, text in files.items():
                self.write(name, text)
            self.commit("initial")

    @property
    def root(self) -> str:
        return str(self.path)

    def write(self, name: str, text: str) -> None:
        target = self.path / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)

    def append(self, name: str, text: str) -> None:
        with open(self.path / name, "a") as handle:
            handle.write(text)

    def remove(self, name: str) -> None:
        os.unlink(self.path / name)

    def stage(self, *names: str) -> None:
        index = self.repo.index
        for name in names:
            if (self.path / name).exists():
                index.add(name)
            else:
                index.remove(name)
        index.write()

    def commit(self, message: str = "change", *, all_files: bool = True) -> str:
        index = self.repo.index
        if all_files:
            self._stage_everything()
        index.write()
        tree = index.write_tree()
        parents = [] if self.repo.head_is_unborn else [self.repo.head.target]
        ref = "HEAD" if not self.repo.head_is_detached else None
        oid = self.repo.create_commit(ref, SIGNATURE, SIGNATURE, message, tree, parents)
        if ref is None:
            self.repo.set_head(oid)
        return str(oid)

    def _stage_everything(self) -> None:
        index = self.repo.index
        for name, flags in self.repo.status().items():
            if flags & pygit2.enums.FileStatus.WT_DELETED:
                index.remove(name)
            elif not flags & pygit2.enums.FileStatus.IGNORED:
                index.add(name)

    def amend(self, message: str = "amended") -> str:
        index = self.repo.index
        self._stage_everything()
        index.write()
        head = self.repo.head.peel(pygit2.Commit)
        oid = self.repo.create_commit(
            None, SIGNATURE, SIGNATURE, message, index.write_tree(), list(head.parent_ids)
        )
        self.repo.head.set_target(oid)
        return str(oid)

    def reset_hard(self, commit: str) -> None:
        self.repo.reset(pygit2.Oid(hex=commit), pygit2.enums.ResetMode.HARD)

    def head(self) -> str:
        return str(self.repo.head.target)

    def switch(self, branch: str, *, create: bool = False) -> None:
        if create:
            self.repo.branches.local.create(branch, self.repo.head.peel(pygit2.Commit))
        ref = self.repo.branches.local[branch]
        self.repo.checkout(ref)

    def detach(self) -> None:
        self.repo.set_head(self.repo.head.target)
