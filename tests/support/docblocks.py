"""The code blocks of README.md and docs/ as tests (issue 34, acceptance 1).

sybil lexes the Markdown and evaluates Python; this module decides what each fenced block
is and gives the documents the machine a new user has: a home directory of its own (so
``~/agents/alice`` and the default store's state directory are fresh), ``tidings`` on
``PATH``, a free port for the default store (``TIDINGS_STORE_PORT``), nothing of the
caller's ``TIDINGS_*`` settings. The documents are read one after another on that machine;
a document's blocks run in order and share one Python namespace, as a reader who types them
one after another would.

Two kinds of block run: ```` ```python ```` (in this process, with the document's
environment in ``os.environ``) and ```` ```sh ```` (``bash -e -o pipefail``). Two HTML
comments before a block change that:

- ``<!-- skip: next "why" -->``: the block is not run (sybil's skip syntax; the reason is
  required);
- ``<!-- run: background -->``: the block is a long-running command (``tidings up``); it is
  started, its first line on stdout is awaited, and it is stopped (SIGTERM) when the
  last document ends; the same block in a later document finds it running (or starts it
  again if a ``tidings stop`` ended it).

Any other fence language (``text``, ``json``, ``toml``...) is not code to run. The names
of shells and Python that are not ``sh``/``python`` are refused, so that no block that
looks runnable is quietly left out.
"""

from __future__ import annotations

import contextlib
import doctest
import os
import re
import shlex
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sybil import Document, Example, Lexeme, Region
from sybil.evaluators.doctest import DocTestEvaluator
from sybil.evaluators.python import PythonEvaluator
from sybil.parsers.abstract.doctest import DocTestStringParser
from sybil.parsers.markdown.lexers import DirectiveInHTMLCommentLexer, FencedCodeBlockLexer

from tests.support.redis_server import free_port

REPO = Path(__file__).resolve().parents[2]
#: Fence languages whose blocks run.
RUNNABLE = frozenset({"python", "sh"})
#: Fence languages that look runnable but are not run: refused (use ``sh`` or ``python``).
REFUSED = frozenset({"bash", "shell", "console", "zsh", "py", "python3", "pycon", "shell-session"})
#: Longest a block may run (seconds); a long-running command is a background block.
BLOCK_SECONDS = 120
#: Longest wait for a background block's first line on stdout (seconds).
READY_SECONDS = 60.0
#: Longest wait for a background block to stop after SIGTERM (seconds).
STOP_SECONDS = 60.0

_SKIP = re.compile(r'next\s+(?P<reason>"[^"]+"|\'[^\']+\')\s*$')


def documents() -> list[Path]:
    """README.md and every Markdown file under docs/."""
    return [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]


@dataclass(frozen=True)
class Block:
    """One fenced block: where it is, its language, and what the test does with it."""

    path: Path
    line: int
    language: str
    #: ``run``, ``background``, ``skip`` or ``text`` (a language that is not code to run).
    mode: str
    source: str
    #: What sybil evaluates: the block, or each ``>>>`` example of a doctest block.
    examples: tuple[Example, ...] = field(compare=False, repr=False)
    reason: str = ""

    def __str__(self) -> str:
        return f"{self.path.relative_to(REPO)}:{self.line}"


def _fences(document: Document) -> Iterator[tuple[int, int, str, str]]:
    """(start, end, language, source) of every fenced block; a bare fence's language is ''."""
    lexer = FencedCodeBlockLexer(
        language=r"[^\n]*", mapping={"language": "language", "source": "source"}
    )
    for region in lexer(document):
        yield (
            region.start,
            region.end,
            region.lexemes["language"].strip(),
            str(region.lexemes["source"]),
        )


def _directives(document: Document) -> Iterator[tuple[int, str, str]]:
    """(position, directive, arguments) of every ``skip:`` and ``run:`` comment."""
    for name in ("skip", "run"):
        for region in DirectiveInHTMLCommentLexer(directive=name, arguments=".+?")(document):
            yield region.start, name, str(region.lexemes["arguments"]).strip()


def parse(path: Path) -> list[Block]:
    """Every fenced block of one document, in order, with what the test does with it."""
    document = Document(path.read_text("utf-8"), str(path))
    directives = sorted(_directives(document))
    fences = sorted(_fences(document))
    blocks: list[Block] = []
    for start, _end, language, source in fences:
        pending = [
            d for d in directives if d[0] < start and not any(d[0] < s < start for s, *_ in fences)
        ]
        mode, reason = ("run" if language in RUNNABLE else "text"), ""
        for _, name, arguments in pending:
            if name == "skip":
                match = _SKIP.match(arguments)
                if match is None:
                    raise ValueError(
                        f"{path}: '<!-- skip: {arguments} -->' needs 'next \"<why it is not run>\"'"
                    )
                mode, reason = "skip", match["reason"][1:-1]
            elif arguments == "background" and language == "sh":
                mode = "background"
            else:
                raise ValueError(
                    f"{path}: '<!-- run: {arguments} -->' before a {language or 'bare'} block"
                )
        line = document.text.count("\n", 0, start) + 1
        blocks.append(
            Block(
                path, line, language, mode, source, tuple(_examples(document, line, source)), reason
            )
        )
    return blocks


def _examples(document: Document, line: int, source: str) -> Iterator[Example]:
    """What sybil evaluates for one block: the whole block, or, for a block that starts
    with ``>>>``, each doctest example (its output is compared)."""
    if not source.startswith(">>>"):
        parsed = Lexeme(source, offset=0, line_offset=0)
        yield Example(
            document, line, 0, Region(0, len(source), parsed, PythonEvaluator()), document.namespace
        )
        return
    for region in DocTestStringParser(DocTestEvaluator(doctest.ELLIPSIS))(source, document.path):
        example_line = line + 1 + source.count("\n", 0, region.start)
        yield Example(document, example_line, 0, region, document.namespace)


@contextlib.contextmanager
def _environment(env: dict[str, str], cwd: Path) -> Iterator[None]:
    """``os.environ`` and the working directory of the document, for one Python block."""
    saved, here = dict(os.environ), os.getcwd()
    os.environ.clear()
    os.environ.update(env)
    os.chdir(cwd)
    try:
        yield
    finally:
        os.chdir(here)
        os.environ.clear()
        os.environ.update(saved)


@contextlib.contextmanager
def _deadline(seconds: int, what: str) -> Iterator[None]:
    """Fail a Python block that runs longer than ``seconds`` (SIGALRM, main thread only)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def expired(signum: int, frame: Any) -> None:
        raise TimeoutError(f"{what} ran longer than {seconds} s")

    previous = signal.signal(signal.SIGALRM, expired)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


class Machine:
    """The reader's machine: a home, an environment, the commands left running, and each
    document's namespace. Documents are read one after another on it, as a new user would;
    a background block that is already running (the same ``tidings up``) is not started a
    second time."""

    def __init__(self, root: Path) -> None:
        self.home = root / "home"
        self.home.mkdir(parents=True)
        bindir = str(Path(sys.executable).parent)
        env = {
            k: v
            for k, v in os.environ.items()
            if not k.startswith(("TIDINGS_", "LINGTAI_")) and k != "XDG_STATE_HOME"
        }
        env.update(
            HOME=str(self.home),
            PATH=f"{bindir}{os.pathsep}{env.get('PATH', '')}",
            TIDINGS_STORE_PORT=str(free_port()),
            TIDINGS_LOG_JSON="false",
        )
        self.env = env
        self.background: dict[str, tuple[Block, subprocess.Popen[bytes], Path]] = {}
        self.done: set[tuple[Path, int]] = set()
        self.namespaces: list[dict[str, Any]] = []

    def run_through(self, block: Block, blocks: list[Block]) -> None:
        """Run every block of ``block``'s document up to it that has not run yet."""
        for earlier in blocks:
            key = (earlier.path, earlier.line)
            if earlier.mode in ("run", "background") and key not in self.done:
                self.done.add(key)
                self._run(earlier)
            if earlier.line == block.line:
                return

    def _run(self, block: Block) -> None:
        if block.mode == "background":
            running = self.background.get(block.source)
            if running is None or running[1].poll() is not None:
                if running is not None and running[1].stdout is not None:
                    running[1].stdout.close()  # a `tidings stop` ended it: start it again
                self._start(block)
        elif block.language == "sh":
            self._shell(block)
        else:
            with _environment(self.env, self.home), _deadline(BLOCK_SECONDS, str(block)):
                for example in block.examples:
                    if not any(n is example.namespace for n in self.namespaces):
                        self.namespaces.append(example.namespace)
                    example.evaluate()

    def _shell(self, block: Block) -> None:
        try:
            done = subprocess.run(
                ["bash", "-e", "-o", "pipefail", "-c", block.source],
                env=self.env,
                cwd=self.home,
                capture_output=True,
                timeout=BLOCK_SECONDS,
                check=False,
            )
        except subprocess.TimeoutExpired as exc:
            raise AssertionError(f"{block} ran longer than {BLOCK_SECONDS} s") from exc
        if done.returncode:
            raise AssertionError(
                f"{block} exited {done.returncode}\n--- stdout\n"
                f"{done.stdout.decode(errors='replace')}\n--- stderr\n"
                f"{done.stderr.decode(errors='replace')}"
            )

    def _start(self, block: Block) -> None:
        errors = self.home.parent / f"background-{block.line}.stderr"
        with errors.open("wb") as sink:
            process = subprocess.Popen(
                ["bash", "-e", "-c", block.source],
                env=self.env,
                cwd=self.home,
                stdout=subprocess.PIPE,
                stderr=sink,
                start_new_session=True,
            )
        self.background[block.source] = (block, process, errors)
        first: list[bytes] = []
        reader = threading.Thread(
            target=lambda: first.append(process.stdout.readline() if process.stdout else b""),
            daemon=True,
        )
        reader.start()
        reader.join(READY_SECONDS)
        if not first or not first[0]:
            raise AssertionError(
                f"{block} ({shlex.join(['bash', '-c', block.source])}) "
                f"printed nothing in {READY_SECONDS} s; exit "
                f"{process.poll()}; stderr: {errors.read_text()[-2000:]}"
            )

    def close(self) -> None:
        """Close the hubs the blocks left open, then stop the background commands."""
        for namespace in self.namespaces:
            for value in namespace.values():
                close = getattr(value, "close", None)
                if type(value).__name__ == "Hub" and callable(close):
                    close()
        for block, process, errors in reversed(self.background.values()):
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGTERM)
                try:
                    process.wait(STOP_SECONDS)
                except subprocess.TimeoutExpired:
                    os.killpg(process.pid, signal.SIGKILL)
                    process.wait()
                    raise AssertionError(
                        f"{block} did not stop on SIGTERM: {errors.read_text()[-2000:]}"
                    ) from None
            if process.stdout is not None:
                process.stdout.close()
