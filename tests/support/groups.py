"""The xdist groups of the suite. ``make test`` runs it on two workers (``-n 2 --dist
loadgroup``); the tests of one group run on one worker, one after another.

:data:`TIMING` marks a test that asserts a time bound on real processes, threads or
sockets: a wake within 1.5 s, a stop within 10 s, an alarm on time, a quiet minute's log
lines. Two of them side by side on the 2 cores would slow each other down; in one group
they never run together, and their bounds stay what the rules say. :data:`DOCS` keeps
the documents' code blocks on one machine, in order (a block builds on the ones above).
"""

from __future__ import annotations

import pytest

#: Tests that assert a time bound: never two at once.
TIMING = pytest.mark.xdist_group("timing")
#: The code blocks of README.md and docs/: one worker, in document order.
DOCS = pytest.mark.xdist_group("docs")
