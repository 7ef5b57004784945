"""Typing and naming figures of the five code packages (issue 22), as one JSON object.

How each figure is counted, so the next count compares:

- ``lines``: non-blank lines of ``tidings/ jobs/ store/ scheduler/ workers/`` ``*.py`` files
  that hold at least one token other than a comment (``tokenize``); ``physical_lines``
  counts every line (``wc -l``), the base of the issue's 37.7.
- ``any``: ``NAME`` tokens spelled exactly ``Any`` (imports, annotations, casts; not
  comments or strings); ``any_per_kloc`` is ``any / lines * 1000``, and
  ``any_per_physical_kloc`` ``any / physical_lines * 1000``.
- ``dict_str_any``: the text ``dict[str, Any]`` outside comments (each ``Mapping[str, Any]``
  is counted apart, as ``mapping_str_any``).
- ``result_aliases``: module-level assignments ``Name = dict[str, Any]``.
- ``typeddicts``: classes with ``TypedDict`` among their bases (AST).
- ``aliased_imports``: ``import a.b as c`` and ``from a import b as c`` where ``c != b`` (AST).
- ``alias_drift``: modules imported under more than one alias.

Run: ``.venv/bin/python bench/vocabulary.py`` (``--root DIR`` to count another checkout).
"""

from __future__ import annotations

import argparse
import ast
import io
import json
import tokenize
from collections import defaultdict
from pathlib import Path

#: The packages the figures cover (issue 22, acceptance 1).
PACKAGES = ("tidings", "jobs", "store", "scheduler", "workers")


def _files(root: Path) -> list[Path]:
    return sorted(p for pkg in PACKAGES for p in (root / pkg).rglob("*.py"))


def _token_figures(source: str) -> tuple[int, int, int, int]:
    """Code lines, ``Any`` tokens, ``dict[str, Any]`` and ``Mapping[str, Any]`` outside comments."""
    code_lines: set[int] = set()
    any_count = 0
    stripped: list[str] = []
    skip = {
        tokenize.COMMENT,
        tokenize.NL,
        tokenize.NEWLINE,
        tokenize.INDENT,
        tokenize.DEDENT,
        tokenize.ENDMARKER,
        tokenize.ENCODING,
    }
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type in skip:
            continue
        code_lines.update(range(tok.start[0], tok.end[0] + 1))
        if tok.type == tokenize.NAME and tok.string == "Any":
            any_count += 1
        stripped.append(tok.string)
    text = "".join(stripped)
    return len(code_lines), any_count, text.count("dict[str,Any]"), text.count("Mapping[str,Any]")


def _ast_figures(tree: ast.Module) -> tuple[int, int, list[tuple[str, str]]]:
    typeddicts = 0
    pairs: list[tuple[str, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef):
            bases = {
                b.id if isinstance(b, ast.Name) else getattr(b, "attr", "") for b in node.bases
            }
            typeddicts += "TypedDict" in bases
        elif isinstance(node, ast.Import):
            for a in node.names:
                if a.asname and a.asname != a.name.rsplit(".", 1)[-1]:
                    pairs.append((a.name, a.asname))
        elif isinstance(node, ast.ImportFrom):
            for a in node.names:
                if a.asname and a.asname != a.name:
                    pairs.append((f"{'.' * node.level}{node.module or ''}.{a.name}", a.asname))
    return typeddicts, len(pairs), pairs


def _result_aliases(tree: ast.Module) -> int:
    count = 0
    for node in tree.body:
        if isinstance(node, ast.Assign | ast.AnnAssign):
            value = node.value
            if value is not None and ast.unparse(value) == "dict[str, Any]":
                count += 1
    return count


def measure(root: Path) -> dict[str, object]:
    lines = physical = any_count = dsa = msa = typeddicts = aliased = result_aliases = 0
    by_module: dict[str, set[str]] = defaultdict(set)
    for path in _files(root):
        source = path.read_text()
        physical += len(source.splitlines())
        n, a, d, m = _token_figures(source)
        lines, any_count, dsa, msa = lines + n, any_count + a, dsa + d, msa + m
        tree = ast.parse(source)
        t, al, pairs = _ast_figures(tree)
        typeddicts, aliased = typeddicts + t, aliased + al
        result_aliases += _result_aliases(tree)
        for module, alias in pairs:
            if not module.startswith("."):
                by_module[module].add(alias)
    drift = {m: sorted(a) for m, a in sorted(by_module.items()) if len(a) > 1}
    return {
        "benchmark": "vocabulary",
        "packages": list(PACKAGES),
        "files": len(_files(root)),
        "lines": lines,
        "physical_lines": physical,
        "any": any_count,
        "any_per_kloc": round(any_count / lines * 1000, 1),
        "any_per_physical_kloc": round(any_count / physical * 1000, 1),
        "dict_str_any": dsa,
        "mapping_str_any": msa,
        "result_aliases": result_aliases,
        "typeddicts": typeddicts,
        "aliased_imports": aliased,
        "alias_drift": drift,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, default=Path(__file__).resolve().parent.parent)
    print(json.dumps(measure(parser.parse_args().root), indent=1))


if __name__ == "__main__":
    main()
