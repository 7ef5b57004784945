"""Scraping a process's Prometheus endpoint in tests."""

from __future__ import annotations

import urllib.request

from prometheus_client.parser import text_string_to_metric_families

Scrape = dict[str, dict[tuple[str, tuple[tuple[str, str], ...]], float]]


def scrape(port: int) -> Scrape:
    """``{family: {(sample name, sorted labels): value}}`` of one ``GET /metrics``."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as reply:
        text = reply.read().decode("utf-8")
    return {
        family.name: {(s.name, tuple(sorted(s.labels.items()))): s.value for s in family.samples}
        for family in text_string_to_metric_families(text)
    }


def flush_writes(port: int) -> float:
    """How many flush file writes the process behind ``port`` has made."""
    family = scrape(port).get("tidings_flush_batch_records", {})
    return family.get(("tidings_flush_batch_records_count", ()), 0.0)
