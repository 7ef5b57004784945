"""Property tests of the block cap over random lanes and caps 1..10^6 (block-cap.md B5, B6,
B13, B17, B18, B19).

For every lane and cap: the result measures within the cap (or the smallest
lane, when the cap is below it), the input is never mutated, routing ids and
record ids are kept whenever they can fit, and a spill file named by the result
holds the full original.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from tests.support.spills import attention_spiller, persistent_spiller
from tidings.jobs.cap import attention as cap_attention
from tidings.jobs.cap import measure
from tidings.jobs.cap import persistent as cap_persistent
from tidings.jobs.cap.ruler import canonical_text, measure_persistent
from tidings.jobs.cap.spill import Spill, SpillRequest

PROPERTY_SETTINGS = settings(
    max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)

caps = st.one_of(st.integers(1, 10**6), st.integers(1, 400), st.integers(2048, 10_000))
#: A cap as a share of the lane's own size: where the stages change.
shares = st.one_of(st.floats(0.005, 1.0), st.floats(0.0005, 0.1))

long_text = st.builds(lambda c, n: c * n, st.characters(), st.integers(0, 4000))
short_text = st.text(max_size=20)
odd_text = st.sampled_from(["\ud800", "日本語", "\x00\x1f", "\\u00e9", "😀" * 50, ""])
texts = st.one_of(short_text, long_text, odd_text)
numbers = st.one_of(
    st.integers(),
    st.integers(min_value=-(10**400), max_value=10**400),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([0.0, -0.0, 1e308, 5e-324, 2**63, -(2**63) - 1]),
)
scalars = st.one_of(st.none(), st.booleans(), numbers, texts)
id_lists = st.builds(
    lambda prefix, n: [f"{prefix}{i}" for i in range(n)], short_text, st.integers(0, 2500)
)
keys = st.one_of(
    st.sampled_from(
        sorted(
            cap_attention.HEAVY_KEYS
            | cap_attention.ROUTING_KEYS
            | {
                "data",
                "header",
                "text_truncated",
                "body_truncated",
                "is_current",
                "id",
                "comment",
                "overflow",
            }
        )
    ),
    short_text,
)
values = st.recursive(
    scalars,
    lambda children: st.one_of(
        st.lists(children, max_size=5), st.dictionaries(keys, children, max_size=6)
    ),
    max_leaves=20,
)
heavy_maps = st.dictionaries(
    st.sampled_from(sorted(cap_attention.HEAVY_KEYS)), long_text, max_size=3
)
fields = st.one_of(values, id_lists, heavy_maps)
envelopes = st.dictionaries(
    keys,
    st.one_of(fields, st.dictionaries(keys, fields, max_size=6)),
    max_size=8,
)
structured = st.fixed_dictionaries(
    {"header": short_text},
    optional={
        "text": long_text,
        "summary": long_text,
        "count": numbers,
        "event_ids": id_lists,
        "ref": st.one_of(short_text, heavy_maps),
        "message_ref": heavy_maps,
        "data": st.fixed_dictionaries(
            {},
            optional={
                "message_ids": id_lists,
                "email_ids": id_lists,
                "ref": heavy_maps,
                "text": long_text,
                "messages": st.lists(st.dictionaries(keys, fields), max_size=6),
            },
        ),
    },
)
channels = st.one_of(st.sampled_from(["email", "mcp.telegram", "system", "daemon"]), short_text)
lanes = st.dictionaries(channels, st.one_of(structured, envelopes, values), max_size=6)

record_ids = st.one_of(short_text, st.text(min_size=20, max_size=60), st.integers(), st.none())
records = st.one_of(
    st.fixed_dictionaries(
        {"id": record_ids},
        optional={
            "event_id": record_ids,
            "text": texts,
            "caption": texts,
            "body": texts,
            "message": texts,
            "preview": texts,
            "is_current": st.booleans(),
            "comment": st.one_of(short_text, st.none(), st.integers()),
            "text_truncated": st.booleans(),
            "extra": st.one_of(values, long_text),
        },
    ),
    values,
)
record_lists = st.lists(records, max_size=16)
email_lanes = st.fixed_dictionaries(
    {"emails": record_lists},
    optional={
        "email_ids": id_lists,
        "count": numbers,
        "context_comment": texts,
        "dropped_ids": st.one_of(id_lists, values),
    },
)
im_lanes = st.fixed_dictionaries(
    {"messages": record_lists},
    optional={
        "referenced_messages": record_lists,
        "previous_block": values,
        "dropped_ids": st.one_of(id_lists, values),
    },
)
blocks = st.fixed_dictionaries(
    {},
    optional={
        "email": st.one_of(email_lanes, values),
        "mcp": st.dictionaries(short_text, st.one_of(im_lanes, values), max_size=3),
        "overflow": values,
        "other": values,
    },
)


def snapshot(value: Any) -> str:
    """An exact picture of a value, NaN and key order included."""
    return json.dumps(value, default=repr)


#: Spills of hundreds of examples are fsynced: on tmpfs that costs nothing.
SCRATCH = "/dev/shm" if os.path.isdir("/dev/shm") else None


@contextmanager
def workdir() -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix="cap-prop-", dir=SCRATCH) as tmp:
        yield Path(tmp)


def recording(
    spiller: Callable[[SpillRequest], Spill],
) -> tuple[Callable[[SpillRequest], Spill], list[Spill]]:
    seen: list[Spill] = []

    def spill(request: SpillRequest) -> Spill:
        outcome = spiller(request)
        seen.append(outcome)
        return outcome

    return spill, seen


def check_spill(root: Path, result: dict[str, Any], original: Any, seen: list[Spill]) -> None:
    """B19: the file a result names exists and holds the full original."""
    overflow = result.get("overflow")
    if not isinstance(overflow, dict) or "truncated" not in overflow or not seen:
        return
    (spill,) = seen
    if spill.path is None:
        assert overflow.get("path") is None
        return
    assert overflow.get("path") in (spill.path, None)
    assert overflow.get("spill_file", spill.name) == spill.name
    data = (root / "logs" / str(spill.name)).read_bytes()
    assert canonical_text(json.loads(data)) == canonical_text(original)


def routing_view(entry: Any) -> Any:
    if not isinstance(entry, dict):
        return entry
    return {
        k: (
            {kk: vv for kk, vv in v.items() if kk in cap_attention.ROUTING_KEYS}
            if k == "data"
            else v
        )
        for k, v in entry.items()
        if k in cap_attention.ROUTING_KEYS or (k == "data" and isinstance(v, dict))
    }


@PROPERTY_SETTINGS
@example(
    lane={"c": {"ref": {"text": "x" * 3000}, "other": "y" * 3000, "text": "z" * 3000}}, cap=0.9
)
@given(lane=lanes, cap=st.one_of(caps, shares))
def test_b18_attention_lane_fits_and_keeps_what_fits(
    lane: dict[str, Any], cap: int | float
) -> None:
    cap = cap if isinstance(cap, int) else max(1, int(measure(lane) * cap))
    before = snapshot(lane)
    with workdir() as root:
        spiller, seen = recording(attention_spiller(root))
        out = cap_attention.cap_lane(lane, cap, spiller)
        assert snapshot(lane) == before  # B6: never mutated
        limit = max(cap, cap_attention.SMALLEST_LANE)
        assert measure(out) <= limit  # B18
        if measure(lane) <= limit:
            assert out is lane and seen == []  # B6
            return
        check_spill(root, out, lane, seen)
        (spill,) = seen
        channels_only = {k: v for k, v in lane.items() if k not in ("overflow", "comment")}
        routed = {k: routing_view(v) for k, v in channels_only.items()}
        routed["overflow"] = cap_attention.marker(spill, measure(lane))
        routed["comment"] = (
            cap_attention.COMMENT_SPILLED.format(path=spill.path)
            if spill.ok
            else cap_attention.COMMENT_NOT_SPILLED
        )
        if measure(routed) <= limit:  # every routing id fits: every one is kept
            for name, entry in channels_only.items():
                if isinstance(entry, dict):  # B13 routes objects; other payloads are data
                    assert snapshot(routing_view(out[name])) == snapshot(routing_view(entry))


def record_ids_of(block: Any) -> list[list[Any]]:
    """Ids and event ids of every record of every stubbable list, in order."""
    out: list[list[Any]] = []
    lanes: list[tuple[Any, str]] = []
    if isinstance(block.get("email"), dict):
        lanes.append((block["email"], "emails"))
    if isinstance(block.get("mcp"), dict):
        lanes += [
            (lane, key)
            for lane in block["mcp"].values()
            if isinstance(lane, dict)
            for key in cap_persistent.IM_LISTS
        ]
    for lane, key in lanes:
        items = lane.get(key)
        if isinstance(items, list):
            out.append(
                [
                    (r.get("id"), r.get("event_id")) if isinstance(r, dict) else snapshot(r)
                    for r in items
                ]
            )
    return out


@PROPERTY_SETTINGS
@example(
    block={
        "mcp": {
            "im": {"messages": [{"id": f"{n:02}" + "i" * 50, "x": "y" * 20} for n in range(30)]}
        }
    },
    cap=0.9,
)
@given(block=blocks, cap=st.one_of(caps, shares))
def test_b18_persistent_lane_fits_and_keeps_every_id(
    block: dict[str, Any], cap: int | float
) -> None:
    cap = cap if isinstance(cap, int) else max(1, int(measure_persistent(block) * cap))
    before = snapshot(block)
    with workdir() as root:
        spiller, seen = recording(persistent_spiller(root))
        out = cap_persistent.cap_block(block, cap, spiller)
        assert snapshot(block) == before
        limit = max(cap, cap_persistent.SMALLEST_LANE)
        assert measure_persistent(out) <= limit
        if measure_persistent(block) <= limit:
            assert out is block and seen == []
            return
        check_spill(root, out, {"notification_persistent": block}, seen)
        if set(out) - {"overflow"}:  # B17: not yet the marker-only envelope
            assert snapshot(record_ids_of(out)) == snapshot(record_ids_of(block))
            for lane_key in ("email_ids", "count", "context_comment"):
                email = block.get("email")
                if isinstance(email, dict) and lane_key in email:
                    assert snapshot(out["email"][lane_key]) == snapshot(email[lane_key])
