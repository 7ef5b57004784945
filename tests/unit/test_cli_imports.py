"""Issue 14, acceptance 4 (import half): the command line loads only what a command uses.

``import tidings.cli`` (and so ``tidings --help``) must not pull in pygit2,
APScheduler or dramatiq; ``tidings publish`` loads dramatiq's broker but not the
worker's jobs (pygit2) nor the scheduler (APScheduler). Each check runs in a fresh
interpreter, since this test process has imported everything already.
"""

from __future__ import annotations

import json
import subprocess
import sys

#: Top-level packages that ``import tidings.cli`` must not load.
HEAVY = ("pygit2", "apscheduler", "dramatiq", "fakeredis", "prometheus_client", "rich")


def loaded_after(code: str) -> set[str]:
    """Top-level module names loaded after running ``code`` in a fresh interpreter."""
    listing = "print(json.dumps(sorted({m.split('.')[0] for m in sys.modules})))"
    probe = f"{code}\nimport json, sys\n{listing}"
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          timeout=60, check=True)
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
        "import tidings.cli, tidings._hub, tidings.cli.producers, tidings.jobs.actions.publish"
    )
    assert "pygit2" not in loaded and "apscheduler" not in loaded
    assert "dramatiq" in loaded  # the broker that enqueues the flush
