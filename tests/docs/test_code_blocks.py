"""Every runnable code block of README.md and docs/ runs (issue 34, acceptance 1): a snippet
cannot show what the user does not get. How blocks run: tests/support/docblocks.py."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support.docblocks import REFUSED, Block, Machine, documents, parse
from tests.support.groups import DOCS

pytestmark = [pytest.mark.e2e, DOCS]

BLOCKS = {path: parse(path) for path in documents()}
RUN = [
    block for blocks in BLOCKS.values() for block in blocks if block.mode in ("run", "background")
]


@pytest.fixture(scope="module")
def machine(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Machine]:
    """The reader's machine, for every document in turn; stopped at the end."""
    reader = Machine(tmp_path_factory.mktemp("docs"))
    yield reader
    reader.close()


@pytest.mark.parametrize("block", RUN, ids=str)
def test_code_block(block: Block, machine: Machine) -> None:
    machine.run_through(block, BLOCKS[block.path])


def test_every_runnable_looking_block_runs_or_says_why_not() -> None:
    for blocks in BLOCKS.values():
        for block in blocks:
            assert block.language, f"{block}: a fence without a language"
            assert block.language not in REFUSED, (
                f"{block}: '{block.language}' is neither run nor text: write sh or python"
            )
            assert block.mode != "skip" or block.reason.strip(), f"{block}: skip without a reason"


def test_the_docs_have_runnable_blocks() -> None:
    assert len(RUN) >= 10, [str(b) for b in RUN]
