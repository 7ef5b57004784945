"""Every runnable code block of README.md and docs/ runs (issue 34, acceptance 1): a snippet
cannot show what the user does not get. How blocks run: tests/support/docblocks.py."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.docblocks import REFUSED, Block, DocSession, documents, parse

pytestmark = pytest.mark.e2e

BLOCKS = {path: parse(path) for path in documents()}
RUN = [block for blocks in BLOCKS.values() for block in blocks
       if block.mode in ("run", "background")]


@pytest.fixture(scope="module")
def sessions(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[Path, DocSession]]:
    """One machine per document, kept while its blocks run, then stopped."""
    opened: dict[Path, DocSession] = {}
    yield opened
    for session in opened.values():
        session.close()


@pytest.mark.parametrize("block", RUN, ids=str)
def test_code_block(block: Block, sessions: dict[Path, DocSession],
                    tmp_path_factory: pytest.TempPathFactory) -> None:
    if block.path not in sessions:
        # A document's machine lives until the module ends; the previous document's
        # background commands stop first, so two default stores never run at once.
        for path in list(sessions):
            sessions.pop(path).close()
        sessions[block.path] = DocSession(block.path, tmp_path_factory.mktemp("docs"))
    sessions[block.path].run_through(block, BLOCKS[block.path])


def test_every_runnable_looking_block_runs_or_says_why_not() -> None:
    for blocks in BLOCKS.values():
        for block in blocks:
            assert block.language, f"{block}: a fence without a language"
            assert block.language not in REFUSED, (
                f"{block}: '{block.language}' is neither run nor text: write sh or python")
            assert block.mode != "skip" or block.reason.strip(), f"{block}: skip without a reason"


def test_the_docs_have_runnable_blocks() -> None:
    assert len(RUN) >= 10, [str(b) for b in RUN]
