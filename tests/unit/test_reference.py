"""docs/reference/ has an entry for every rule id the code cites (issue 10 acceptance 3)."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
#: Where rule ids are cited: the installed packages (Python and Lua).
PACKAGES = ("tidings", "workers", "jobs", "scheduler", "store")
RULE_ID = re.compile(r"\b([BCDM][1-9][0-9]?)\b")
HEADING = re.compile(r"^### ([BCDM][1-9][0-9]?)$", re.M)


def cited_ids() -> dict[str, str]:
    cited: dict[str, str] = {}
    for package in PACKAGES:
        for path in sorted((REPO / package).rglob("*")):
            if path.suffix in {".py", ".lua"}:
                for rule in RULE_ID.findall(path.read_text("utf-8")):
                    cited.setdefault(rule, str(path.relative_to(REPO)))
    return cited


def documented_ids() -> set[str]:
    return {
        m
        for doc in (REPO / "docs" / "reference").glob("*.md")
        for m in HEADING.findall(doc.read_text("utf-8"))
    }


def test_every_cited_rule_id_has_an_entry() -> None:
    missing = {rule: where for rule, where in cited_ids().items() if rule not in documented_ids()}
    assert not missing, f"rule ids cited without an entry in docs/reference/: {missing}"


def test_the_code_cites_rule_ids_at_all() -> None:
    assert {"C27", "D9", "B12", "M23"} <= set(cited_ids())


def test_each_entry_says_something() -> None:
    for doc in (REPO / "docs" / "reference").glob("*.md"):
        for block in re.split(r"^### ", doc.read_text("utf-8"), flags=re.M)[1:]:
            rule, _, body = block.partition("\n")
            assert len(body.split()) >= 6, f"{doc.name}: {rule} has no sentence"
