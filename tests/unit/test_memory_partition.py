"""The worktree side read on several threads equals the single pass (memory-inbox.md
M24, M25; issue 13 acceptance 2): a property test over generated trees with nested and
untracked directories, names holding glob characters, undecodable bytes, symlinks, a
nested repository and a submodule."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator

import pygit2
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tidings.jobs.memory import git_status, observe_worktree, partition, privateindex
from tidings.jobs.memory.head import head_state

SIGNATURE = pygit2.Signature("tester", "tester@example.invalid", 1_700_000_000, 0)
#: Awkward path components: globs, pathspec magic, undecodable bytes, spaces.
COMPONENTS = [
    b"a",
    b"b.md",
    b"[x]",
    b"*",
    b"?q",
    b"sp ace",
    b"caf\xe9",
    b"-rf",
    b":(top)a",
    b"x;y",
    b"A",
    b"d",
    b"\\e",
]
ACTIONS = ["keep", "modify", "delete", "untracked", "symlink", "to_dir"]

paths = st.lists(st.sampled_from(COMPONENTS), min_size=1, max_size=3).map(b"/".join)
trees = st.lists(st.tuples(paths, st.sampled_from(ACTIONS)), min_size=1, max_size=14)


def consistent(specs: list[tuple[bytes, str]]) -> list[tuple[bytes, str]]:
    """Drop specs whose path is another's folder (a name cannot be both)."""
    chosen: dict[bytes, str] = {}
    for raw, action in specs:
        parts = raw.split(b"/")
        prefixes = {b"/".join(parts[:n]) for n in range(1, len(parts))}
        if (
            raw in chosen
            or prefixes & set(chosen)
            or any(other.startswith(raw + b"/") for other in chosen)
        ):
            continue
        chosen[raw] = action
    return sorted(chosen.items())


def write(root: bytes, raw: bytes, body: bytes) -> None:
    target = os.path.join(root, raw)
    os.makedirs(os.path.dirname(target), exist_ok=True)
    with open(target, "wb") as handle:
        handle.write(body)


def nested_repo(path: bytes) -> pygit2.Oid:
    os.makedirs(path, exist_ok=True)
    nested = pygit2.init_repository(os.fsdecode(path), initial_head="main")
    with open(os.path.join(path, b"inner.md"), "wb") as handle:
        handle.write(b"inner\n")
    nested.index.add("inner.md")
    nested.index.write()
    return nested.create_commit("HEAD", SIGNATURE, SIGNATURE, "n", nested.index.write_tree(), [])


def build(root: bytes, specs: list[tuple[bytes, str]], submodule: bool) -> None:
    repo = pygit2.init_repository(os.fsdecode(root), initial_head="main")
    tracked = [raw for raw, action in specs if action != "untracked"]
    for raw in tracked:
        write(root, raw, b"tracked " + raw)
    index = repo.index
    for raw in tracked:
        index.add(os.fsdecode(raw))
    if submodule:
        oid = nested_repo(os.path.join(root, b"sub"))
        index.add(pygit2.IndexEntry("sub", oid, pygit2.enums.FileMode.COMMIT))
    index.write()
    repo.create_commit("HEAD", SIGNATURE, SIGNATURE, "start", index.write_tree(), [])
    for raw, action in specs:
        target = os.path.join(root, raw)
        if action == "modify":
            write(root, raw, b"changed")
        elif action == "delete":
            os.unlink(target)
        elif action == "untracked":
            write(root, raw, b"new")
        elif action == "symlink":
            os.unlink(target)
            os.symlink(b"../elsewhere/" + raw.replace(b"/", b"_"), target)
        elif action == "to_dir":
            os.unlink(target)
            write(root, raw + b"/inside.md", b"now a folder")
    nested_repo(os.path.join(root, b"nested"))  # an untracked nested repository
    write(root, b"untracked dir/deep/[y].md", b"u")


def listings(root: bytes, threads: int) -> tuple[git_status.WorktreeSide, git_status.WorktreeSide]:
    path = os.fsdecode(root)
    repo = pygit2.Repository(path)
    try:
        index_file = os.path.join(repo.path, "index")
        index, data = privateindex.load(repo, index_file)
        head = head_state(repo)
        staged = git_status.read_staged(repo, index, head, index_file)
        single = git_status.read_worktree(index)
        names = partition.top_level_names(
            repo.workdir, git_status.head_tree(repo, head.head), staged
        )
        parallel = partition.read_worktree(path, index_file, data, names, threads)
        return single, parallel
    finally:
        repo.free()


def scratch() -> Iterator[bytes]:
    base = "/dev/shm" if os.access("/dev/shm", os.W_OK) else None
    path = tempfile.mkdtemp(prefix="tidings-partition-", dir=base)
    try:
        yield os.fsencode(path)
    finally:
        shutil.rmtree(path, ignore_errors=True)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(trees, st.booleans(), st.integers(min_value=2, max_value=4))
def test_parallel_listing_equals_the_single_pass(
    specs: list[tuple[bytes, str]], submodule: bool, threads: int
) -> None:
    for root in scratch():
        build(root, consistent(specs), submodule)
        single, parallel = listings(root, threads)
        assert parallel == single
        assert single  # the tree always holds something to list


def test_observation_on_threads_equals_one_thread() -> None:
    """The whole snapshot, through ``observe(threads=...)``."""
    for root in scratch():
        build(
            root,
            consistent(
                [
                    (b"[x]/a", "modify"),
                    (b"*", "delete"),
                    (b"caf\xe9/b.md", "keep"),
                    (b"d/sp ace", "untracked"),
                    (b"-rf", "symlink"),
                ]
            ),
            submodule=True,
        )
        one = observe_worktree(os.fsdecode(root), None, now=0, threads=1).snapshot
        three = observe_worktree(os.fsdecode(root), None, now=0, threads=3).snapshot
        assert one is not None and three is not None
        assert one.paths == three.paths and len(one.paths) > 5
