"""Rule ids and links in README.md and docs/ (issue 34, acceptance 2).

Every rule id (``C24``, ``D9``, ``B12``, ``M55``) in the prose of README.md and docs/ is a
link to its entry in docs/reference/. ``python -m tests.support.doclinks`` turns the bare
ones into links in place; ``tests/docs/test_links.py`` fails while any is left.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path

from tests.support.docblocks import REPO, documents

RULE_ID = re.compile(r"\b[BCDM][1-9][0-9]?\b")
ENTRY = re.compile(r"^### ([BCDM][1-9][0-9]?)$", re.M)
#: A Markdown link, an inline code span, or an HTML comment: not prose.
NOT_PROSE = re.compile(r"\[[^\]]*\]\([^)]*\)|`[^`]*`|<!--.*?-->")
FENCE = re.compile(r"^\s*(```|~~~)")


def entries() -> dict[str, Path]:
    """Rule id -> the reference file that defines it."""
    found: dict[str, Path] = {}
    for doc in sorted((REPO / "docs" / "reference").glob("*.md")):
        for rule in ENTRY.findall(doc.read_text("utf-8")):
            found[rule] = doc
    return found


def prose_lines(path: Path) -> Iterator[tuple[int, str]]:
    """(line number, text) of every line outside fenced blocks and headings."""
    fenced = False
    for number, line in enumerate(path.read_text("utf-8").splitlines(), 1):
        if FENCE.match(line):
            fenced = not fenced
            continue
        if not fenced and not line.startswith("#"):
            yield number, line


def target(doc: Path, rule: str, defined: dict[str, Path]) -> str:
    """The link from ``doc`` to ``rule``'s entry."""
    where = defined[rule]
    relative = "" if where == doc else os.path.relpath(where, doc.parent)
    return f"{relative}#{rule.lower()}"


def bare_ids(line: str) -> list[re.Match[str]]:
    """Rule ids in a line's prose, outside links and code spans."""
    spans = [m.span() for m in NOT_PROSE.finditer(line)]
    return [
        m
        for m in RULE_ID.finditer(line)
        if not any(start <= m.start() < end for start, end in spans)
    ]


def linkify(path: Path, defined: dict[str, Path]) -> int:
    """Turn the bare rule ids of one document into links; how many changed."""
    lines = path.read_text("utf-8").split("\n")
    changed = 0
    for number, _ in list(prose_lines(path)):
        line = lines[number - 1]
        for match in reversed(bare_ids(line)):
            rule = match.group()
            if rule in defined:
                link = f"[{rule}]({target(path, rule, defined)})"
                line = line[: match.start()] + link + line[match.end() :]
                changed += 1
        lines[number - 1] = line
    if changed:
        path.write_text("\n".join(lines), "utf-8")
    return changed


if __name__ == "__main__":
    known = entries()
    for document in documents():
        if count := linkify(document, known):
            print(f"{document.relative_to(REPO)}: {count} rule ids linked")
