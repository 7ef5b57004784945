"""Issue 14, acceptance 4 (import half): the command line loads only what a command uses.

``import tidings.cli`` (and so ``tidings --help``) must not pull in pygit2,
APScheduler or dramatiq; ``tidings publish`` loads dramatiq's broker but not the
worker's jobs (pygit2), the scheduler (APScheduler), the consumer's tool and cap, nor
prometheus_client (nothing scrapes a hook). Each check runs in a fresh interpreter,
since this test process has imported everything already.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.redis_server import RedisServer

#: Top-level packages that ``import tidings.cli`` must not load.
HEAVY = ("pygit2", "apscheduler", "dramatiq", "fakeredis", "prometheus_client", "rich")


#: Modules of tidings that only the consumer, the worker or the scheduler need.
NOT_FOR_PRODUCERS = (
    "tidings._tool",
    "tidings.jobs.cap",
    "tidings.jobs.consumer",
    "tidings.jobs.tick",
    "tidings.jobs.memory",
    "tidings.jobs.turns",
    "tidings.scheduler",
    "tidings.workers.actors",
)


def loaded_after(code: str, *, whole: bool = False, env: dict[str, str] | None = None) -> set[str]:
    """Module names loaded after running ``code`` in a fresh interpreter: top-level
    names, or (``whole``) every dotted name."""
    names = "sys.modules" if whole else "{m.split('.')[0] for m in sys.modules}"
    listing = f"print(json.dumps(sorted({names})))"
    probe = f"{code}\nimport json, sys\n{listing}"
    done = subprocess.run(
        [sys.executable, "-c", probe],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
        env=env,
    )
    return set(json.loads(done.stdout.splitlines()[-1]))


def test_import_tidings_cli_loads_no_heavy_machinery() -> None:
    loaded = loaded_after("import tidings.cli; tidings.cli.build_parser()")
    assert not loaded & set(HEAVY), sorted(loaded & set(HEAVY))


def test_import_tidings_keeps_the_public_names_lazily() -> None:
    loaded = loaded_after("import tidings; assert 'connect' in dir(tidings)")
    assert not loaded & {"pygit2", "apscheduler", "dramatiq"}
    import tidings

    assert tidings.connect.__module__ == "tidings._hub"
    assert tidings.TidingsError.__name__ == "TidingsError"
    assert set(tidings.__all__) <= set(dir(tidings))


def test_publish_path_loads_neither_pygit2_nor_apscheduler() -> None:
    """What ``tidings publish`` imports: the client hub and the producer jobs."""
    loaded = loaded_after(
        "import tidings.cli, tidings._hub, tidings.cli.producers, tidings.jobs.channels.producer"
    )
    assert "pygit2" not in loaded and "apscheduler" not in loaded
    assert "dramatiq" in loaded  # the broker that enqueues the flush


@pytest.mark.redis_server
def test_a_real_publish_loads_only_the_producer_path(
    redis_server: RedisServer, tmp_path: Path
) -> None:
    """Issue 14, acceptance 4: ``tidings publish`` to a registered agent on a running
    store, run in full, then the modules it loaded."""
    workdir = tmp_path / "agent"
    workdir.mkdir()
    env = {**os.environ, "TIDINGS_REDIS_URL": redis_server.url, "TIDINGS_HOST": "imports"}
    subprocess.run(
        [sys.executable, "-m", "tidings", "agents", "add", "--workdir", str(workdir)],
        env=env,
        check=True,
        capture_output=True,
        timeout=60,
    )
    argv = ["publish", "system", "--event", '{"text": "hi"}', "--workdir", str(workdir), "--json"]
    code = (
        "import contextlib, io, tidings.cli\n"
        "with contextlib.redirect_stdout(io.StringIO()) as out:\n"
        f"    assert tidings.cli.main({argv!r}) == 0\n"
        'assert \'"status": "ok"\' in out.getvalue(), out.getvalue()'
    )
    loaded = loaded_after(code, whole=True, env=env)
    top = {name.split(".")[0] for name in loaded}
    assert not top & {"pygit2", "apscheduler", "prometheus_client", "fakeredis", "rich"}
    assert "dramatiq" in top  # the broker that enqueued the flush
    extra = sorted(m for m in loaded if m.startswith(NOT_FOR_PRODUCERS))
    assert not extra, extra
