"""The shipped reading guidance (block-cap.md B21) and the demo chapter (issue 5)."""

from __future__ import annotations

import io
from pathlib import Path

from rich.console import Console

import tidings
from tidings._manual import manual
from tidings.demo.cap import oversized_lane
from tidings.demo.chapters import CHAPTERS, Tour
from tidings.demo.status import status

SECTION = "## Block size cap: persistent and attention lanes"


def test_b21_reading_guidance_ships_in_the_manual() -> None:
    shipped = manual()
    assert shipped["status"] == "ok"
    text = shipped["notification_manual"]
    section = " ".join(text[text.index(SECTION) :].split("\n## ")[0].split())
    assert "An `overflow` marker alone is no reason to re-read everything." in section
    assert "only for required content that is absent from every current copy" in section
    assert "`spill_failed`, call the producer's own tool" in section
    assert "A false or missing truncation flag is not proof of completeness." in section


def test_demo_chapter_shows_a_compacted_lane_and_its_spill(tmp_path: Path) -> None:
    assert CHAPTERS[-3:-1] == [oversized_lane, status]
    output = io.StringIO()
    settings = tidings.Settings(host="demo-test")
    with tidings.connect("embedded", background=True, settings=settings) as hub:
        tour = Tour(hub, hub.agent(tmp_path), tmp_path, Console(file=output, width=100))
        oversized_lane(tour)
    text = output.getvalue()
    assert "compacted to the cap and spilled whole" in text
    assert "notification-attention-overflow-" in text
    assert len(list((tmp_path / "logs").iterdir())) == 1
