"""The ruler and the canonical text (block-cap.md B5, B10)."""

from __future__ import annotations

import hashlib
import json
from typing import Any

import pytest

from tidings.jobs.cap import measure
from tidings.jobs.cap import ruler as cap_ruler
from tidings.jobs.cap.ruler import canonical_text, content_bytes, measure_persistent


class TestRuler:
    """B5: characters of the JSON text, non-ASCII escaped, keys sorted, ``", "``/``": "``."""

    def test_b5_exact_text(self) -> None:
        lane = {"b": [1, 2], "a": "é"}
        assert cap_ruler.ruler_text(lane) == '{"a": "\\u00e9", "b": [1, 2]}'
        assert measure(lane) == len('{"a": "\\u00e9", "b": [1, 2]}')

    def test_b5_non_ascii_counts_as_its_escape(self) -> None:
        assert measure({"t": "日本"}) == len('{"t": "\\u65e5\\u672c"}')
        assert measure({"t": "😀"}) == len('{"t": "\\ud83d\\ude00"}')  # a surrogate pair

    def test_b5_key_order_does_not_matter(self) -> None:
        assert cap_ruler.ruler_text({"b": 1, "a": 2}) == cap_ruler.ruler_text({"a": 2, "b": 1})

    @pytest.mark.parametrize(
        ("value", "text"),
        [
            ({"s": {1, 2}}, '{"s": "{1, 2}"}'),
            ({"n": float("nan")}, '{"n": "nan"}'),
            ({"n": float("inf"), "b": b"x"}, '{"b": "b\'x\'", "n": "inf"}'),
            ({1: "a", "b": 2}, '{"1": "a", "b": 2}'),
            ({(1, 2): "t"}, '{"(1, 2)": "t"}'),
            ({"t": (1, "x")}, '{"t": [1, "x"]}'),
        ],
    )
    def test_b5_foreign_values_are_their_str(self, value: dict[Any, Any], text: str) -> None:
        assert cap_ruler.ruler_text(value) == text

    def test_b5_unserialisable_measures_zero(self) -> None:
        cyclic: dict[str, Any] = {}
        cyclic["self"] = cyclic
        assert measure(cyclic) == 0
        assert measure({"n": 10**5000}) == 0  # too long for int -> str
        deep: Any = []
        for _ in range(100_000):
            deep = [deep]
        assert measure({"deep": deep}) == 0

    def test_b5_persistent_measured_in_its_wrapper(self) -> None:
        block = {"email": {"count": 1}}
        assert measure_persistent(block) == len(
            '{"notification_persistent": {"email": {"count": 1}}}'
        )


class TestCanonical:
    """B10: canonical text keeps non-ASCII; digest8 is its sha256 prefix."""

    def test_b10_canonical_text(self) -> None:
        lane = {"b": "日本", "a": [1, {"z": 1, "y": 2}]}
        assert canonical_text(lane) == '{"a": [1, {"y": 2, "z": 1}], "b": "日本"}'
        expected = hashlib.sha256('{"a": [1, {"y": 2, "z": 1}], "b": "日本"}'.encode()).hexdigest()
        assert cap_ruler.digest(canonical_text(lane)) == expected

    def test_b10_ruler_text_reused_only_when_identical(self) -> None:
        ascii_lane = {"a": "plain"}
        ruler = cap_ruler.ruler_text(ascii_lane)
        assert canonical_text(ascii_lane, ruler) is ruler
        lane = {"a": "é", "b": "\x01"}
        assert canonical_text(lane, cap_ruler.ruler_text(lane)) == '{"a": "é", "b": "\\u0001"}'

    def test_b10_content_indent_two_non_ascii_kept(self) -> None:
        lane = {"b": "日本", "a": 1}
        assert content_bytes(lane) == json.dumps(lane, indent=2, ensure_ascii=False).encode()

    def test_b10_lone_surrogate_content_round_trips(self) -> None:
        lane = {"t": "\ud800x"}
        data = content_bytes(lane)
        assert json.loads(data) == lane
        assert len(cap_ruler.digest(canonical_text(lane))) == 64
