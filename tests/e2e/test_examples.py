"""The examples/ programs run offline as they are (issue 12, acceptance 5): scripted
models, an embedded store, no API key."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.e2e

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


@pytest.mark.parametrize(
    ("program", "says"),
    [
        ("pydantic_ai_agent.py", '"cleared":true'),
        ("openai_agents_agent.py", '"action":"delayed"'),
        ("mcp_client.py", "updated: {'mcp.ci'"),
        ("asyncio_orchestrator.py", "10 agents took a turn"),
    ],
)
def test_acceptance5_example_runs_offline(program: str, says: str, tmp_path: Path) -> None:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("TIDINGS_", "LINGTAI_", "OPENAI_", "ANTHROPIC_"))
    }
    env.update(HOME=str(tmp_path), PYTHONUNBUFFERED="1")
    done = subprocess.run(
        [sys.executable, str(EXAMPLES / program)],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=180,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert says in done.stdout, done.stdout[-2000:]
