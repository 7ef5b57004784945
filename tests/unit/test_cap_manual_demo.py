"""The shipped reading guidance (block-cap.md B21) and the demo chapter (issue 5)."""

from __future__ import annotations

import io
import re
from importlib import resources
from pathlib import Path

from rich.console import Console

import tidings
from tidings._demo import CHAPTERS, Tour
from tidings._demo_cap import oversized_lane

MANUAL_SECTION = "notification_manual_block_cap.md"


def test_b21_reading_guidance_ships_with_the_package() -> None:
    text = resources.files("tidings").joinpath(MANUAL_SECTION).read_text("utf-8")
    heading = text.splitlines()[0]
    slug = re.sub(r"[^a-z0-9 -]", "", heading.lstrip("# ").lower()).replace(" ", "-")
    assert slug == "block-size-cap-persistent-and-attention-lanes"  # C42's anchor
    assert "An `overflow` marker alone is no reason to re-read everything." in text
    assert "only for required\n  content that is absent from every current copy" in text
    assert "is not proof of completeness" in text
    assert "spill_failed" in text and "producer tool" in text


def test_demo_chapter_shows_a_compacted_lane_and_its_spill(tmp_path: Path) -> None:
    assert oversized_lane in CHAPTERS
    output = io.StringIO()
    with tidings.connect("embedded", settings=tidings.Settings(host="demo-test")) as hub:
        tour = Tour(hub, hub.agent(tmp_path), tmp_path, Console(file=output, width=100))
        oversized_lane(tour)
    text = output.getvalue()
    assert "compacted to the cap and spilled whole" in text
    assert "notification-attention-overflow-" in text
    assert len(list((tmp_path / "logs").iterdir())) == 1
