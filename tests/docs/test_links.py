"""README.md and docs/ point only at what the repository holds (issue 34, acceptance 1, 2):
no document outside it, no dead relative link or anchor, every rule id linked to its entry,
and a README that is a first read."""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path

from tests.support.docblocks import REPO, documents
from tests.support.doclinks import RULE_ID, bare_ids, entries, prose_lines, target

#: Documents of the specification that never shipped with the repository.
NOT_SHIPPED = ("shared/spec", "api.md", "architecture.md")
#: What is not the repository's own text.
SKIPPED_DIRS = {
    ".git",
    ".venv",
    "build",
    "__pycache__",
    ".mypy_cache",
    ".ruff_cache",
    ".pytest_cache",
    "node_modules",
    ".hypothesis",
}
TEXT_SUFFIXES = {
    ".py",
    ".md",
    ".toml",
    ".lua",
    ".txt",
    ".cfg",
    ".ini",
    ".yaml",
    ".yml",
    ".conf",
    ".service",
    ".env",
    ".example",
    ".html",
    ".js",
    ".css",
    ".sh",
    "",
}
#: The most bytes README.md may hold: a first read.
README_BYTES = 8 * 1024
LINK = re.compile(r"\[([^\]]*)\]\(([^)\s]+)\)")
#: A document cited by name: ``channels.md C24``, ``interfaces.md "Local trust"``,
#: ``guide.md rule 8``, ``interfaces.md, Packaging``.
CITED = re.compile(r"\b([A-Za-z][\w-]*\.md)(?:'s)?,? (?=[BCDM][1-9]|\"[A-Z]|rule\b|§|[A-Z][a-z]+)")


def repository_files() -> Iterator[Path]:
    for folder, dirs, files in os.walk(REPO):
        dirs[:] = [d for d in dirs if d not in SKIPPED_DIRS and not d.endswith(".egg-info")]
        for name in files:
            path = Path(folder) / name
            if path.suffix in TEXT_SUFFIXES and path != Path(__file__):
                yield path


def text(path: Path) -> str:
    try:
        return path.read_text("utf-8")
    except (UnicodeDecodeError, OSError):
        return ""


def slug(heading: str) -> str:
    """GitHub's anchor for a heading."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def anchors(path: Path) -> set[str]:
    return {
        slug(line.lstrip("#"))
        for _, line in enumerate(text(path).splitlines())
        if line.startswith("#")
    }


def linked_documents() -> list[Path]:
    return [*documents(), REPO / "deploy" / "README.md", REPO / "SECURITY.md"]


def test_no_file_refers_to_a_document_that_does_not_ship() -> None:
    found = [
        f"{path.relative_to(REPO)}:{n}: {line.strip()[:80]}"
        for path in repository_files()
        for n, line in enumerate(text(path).splitlines(), 1)
        if any(name in line for name in NOT_SHIPPED)
    ]
    assert not found, (
        "these cite documents that are not in the repository; cite "
        "docs/reference/ (interfaces.md, channels.md...) or docs/guide.md "
        "instead:\n" + "\n".join(found)
    )


def test_every_document_cited_exists() -> None:
    shipped = {p.name for p in repository_files() if p.suffix == ".md"}
    missing = sorted(
        {
            f"{path.relative_to(REPO)}: {name}"
            for path in repository_files()
            for name in CITED.findall(text(path))
            if name not in shipped
        }
    )
    assert not missing, missing


def test_relative_links_and_anchors_resolve() -> None:
    dead = []
    for doc in linked_documents():
        for _, line in prose_lines(doc):
            for _, href in LINK.findall(line):
                if re.match(r"[a-z]+:", href):
                    continue
                file, _, anchor = href.partition("#")
                where = (doc.parent / file).resolve() if file else doc
                if not where.exists():
                    dead.append(f"{doc.relative_to(REPO)}: {href} (no such file)")
                elif anchor and where.is_file() and anchor not in anchors(where):
                    dead.append(f"{doc.relative_to(REPO)}: {href} (no such heading)")
    assert not dead, dead


def test_every_rule_id_links_to_its_entry() -> None:
    defined = entries()
    wrong = []
    for doc in documents():
        for number, line in prose_lines(doc):
            where = f"{doc.relative_to(REPO)}:{number}"
            wrong += [f"{where}: {m.group()} is not linked" for m in bare_ids(line)]
            for label, href in LINK.findall(line):
                for rule in RULE_ID.findall(label):
                    if rule not in defined:
                        wrong.append(f"{where}: {rule} has no entry in docs/reference/")
                    elif RULE_ID.fullmatch(label) and href != target(doc, rule, defined):
                        wrong.append(f"{where}: {rule} links to {href}")
    assert not wrong, "run `python -m tests.support.doclinks` to link bare ids:\n" + "\n".join(
        wrong
    )


def test_readme_is_a_first_read() -> None:
    size = len((REPO / "README.md").read_bytes())
    assert size <= README_BYTES, f"README.md is {size} bytes; move details into docs/"
