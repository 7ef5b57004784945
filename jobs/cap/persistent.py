"""Capping the persistent lane, a caller's email/IM block (block-cap.md B15-B18).

:func:`cap_block` tries two tiers. The *protected* tier leaves IM records with a
truthy ``is_current`` alone; the *unprotected* tier, built on the protected
tier's stubbed result, may shorten and stub them too. In each tier records are
compacted at budgets 200, 100, 50, 0, then stubbed round-robin, oldest first
(list order is taken as age order). Structural keys and ids are never changed;
``dropped_ids`` only grows. Each stage is built afresh: inputs are never mutated.

Below the floor (any cap works, production caps are ≥ 2,048) the marker-only
envelope degrades to ``{"overflow": {"truncated": true}}`` and finally ``{}``,
whose wrapper ``{"notification_persistent": {}}`` (31 characters) is the
smallest persistent lane.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from tidings.jobs.cap import ruler as cap_ruler
from tidings.jobs.cap.attention import BUDGETS, MARKER_KEY, Marker, Part, cut, marker
from tidings.jobs.cap.spill import Spill, Spiller, SpillRequest

#: B15: the shortened fields of an email record and of an IM record.
EMAIL_HEAVY = ("message", "body", "text", "preview", "content")
IM_HEAVY = ("text", "caption")
#: B15: IM record lists that are compacted; only ``messages`` are ever stubbed (B16).
IM_LISTS = ("messages", "referenced_messages")
#: B16: what a stub keeps.
STUB_KEYS = ("id", "event_id")
#: B15: the email note goes on at this budget only.
NOTE_BUDGET = BUDGETS[0]
#: The smallest persistent lane: ``{"notification_persistent": {}}``.
SMALLEST_LANE = cap_ruler.measure_persistent({})

EMAIL_NOTE_SPILLED = "Truncated by the notification block size cap; full content in {path}."
EMAIL_NOTE_NOT_SPILLED = (
    "Truncated by the notification block size cap; the overflow file could not be written — "
    "use the producer tool for the full content."
)
IM_NOTE = (
    "This text copy is truncated. Only if required content is absent from all available "
    "current copies, call {im}.read for the missing content; do not reread a complete "
    "alternate current copy."
)

#: A persistent block: ``email``, ``mcp`` and the caller's other keys (open JSON).
Block = dict[str, object]


@dataclass
class _Run:
    """One capping: the limit, the marker, the email note and the stubs made so far."""

    limit: int
    overflow: Marker
    email_note: str
    stubs: set[int] = field(default_factory=set)

    def fits(self, block: Block) -> bool:
        return cap_ruler.measure_persistent(block) <= self.limit


def _noted(record: Part, note: str) -> None:
    """Append ``note`` to the record's comment after a space (once), or set it."""
    comment = record.get("comment")
    if isinstance(comment, str) and comment:
        if note not in comment:
            record["comment"] = f"{comment} {note}"
    elif comment is None or comment == "":
        record["comment"] = note


def _cut_fields(record: Part, fields: tuple[str, ...], budget: int) -> list[str]:
    """Shorten ``fields`` of ``record`` to ``budget``; the names of those that were cut."""
    cut_names = []
    for name in fields:
        value = record.get(name)
        if isinstance(value, str) and len(value) > budget:
            record[name] = cut(value, budget)
            cut_names.append(name)
    return cut_names


def _email_record(record: object, budget: int, run: _Run) -> object:
    if not isinstance(record, dict) or id(record) in run.stubs:
        return record
    out: Part = dict(record)
    for name in _cut_fields(out, EMAIL_HEAVY, budget):
        # B15: flags truthful per field: ``message_truncated`` only for a cut ``message``
        # (added if absent); another field's flag only where the producer defined it
        if name == "message" or f"{name}_truncated" in out:
            out[f"{name}_truncated"] = True
    if budget == NOTE_BUDGET:
        _noted(out, run.email_note)
    return out


def _im_record(record: object, im: object, budget: int, protect: bool, run: _Run) -> object:
    if not isinstance(record, dict) or id(record) in run.stubs:
        return record
    if protect and record.get("is_current"):
        return record
    out: Part = dict(record)
    if _cut_fields(out, IM_HEAVY, budget):
        out["text_truncated"] = True
        _noted(out, IM_NOTE.format(im=im))
    return out


def compact(base: Block, budget: int, protect: bool, run: _Run) -> Block:
    """B15: ``base`` with its records compacted at ``budget`` and the marker at the top.

    Every container on the way to a record is new, so the result may be stubbed
    in place.
    """
    out = dict(base)
    email = out.get("email")
    if isinstance(email, dict) and isinstance(email.get("emails"), list | tuple):
        out["email"] = {**email, "emails": [_email_record(r, budget, run) for r in email["emails"]]}
    mcp = out.get("mcp")
    if isinstance(mcp, dict):
        lanes: Part = {}
        for im, lane in mcp.items():
            if isinstance(lane, dict):
                lane = dict(lane)
                for key in IM_LISTS:
                    records = lane.get(key)
                    if isinstance(records, list | tuple):
                        lane[key] = [_im_record(r, im, budget, protect, run) for r in records]
            lanes[im] = lane
        out["mcp"] = lanes
    out[MARKER_KEY] = run.overflow
    return out


def _stub_lanes(block: Block) -> list[tuple[Part, list[object]]]:
    """B16: (lane, records) pairs in round-robin order: email, then IM lanes in block order."""
    pairs: list[tuple[Part, list[object]]] = []
    email = block.get("email")
    if isinstance(email, dict) and isinstance(email.get("emails"), list):
        pairs.append((email, email["emails"]))
    mcp = block.get("mcp")
    if isinstance(mcp, dict):
        for lane in mcp.values():
            if isinstance(lane, dict) and isinstance(lane.get("messages"), list):
                pairs.append((lane, lane["messages"]))
    return pairs


def _eligible(record: Part, protect: bool, run: _Run) -> bool:
    if id(record) in run.stubs:
        return False
    if protect and record.get("is_current"):
        return False
    return any(key not in STUB_KEYS for key in record)  # already minimal: nothing to drop


def _next_eligible(
    records: list[object], start: int, protect: bool, run: _Run
) -> tuple[int, Part] | None:
    """The first record from ``start`` on that may be stubbed, with its index."""
    for index in range(start, len(records)):
        record = records[index]
        if isinstance(record, dict) and _eligible(record, protect, run):
            return index, record
    return None


def _record_dropped(lane: Part, record_id: object) -> int:
    """Append ``record_id`` to ``dropped_ids`` (once); the change in the block's size."""
    if not isinstance(record_id, str) or not record_id:
        return 0
    dropped = lane.get("dropped_ids")
    if dropped is None and "dropped_ids" not in lane:
        lane["dropped_ids"] = [record_id]
        separator = 2 if len(lane) > 1 else 0
        return separator + cap_ruler.measure("dropped_ids") + 2 + cap_ruler.measure([record_id])
    if not isinstance(dropped, list | tuple) or record_id in dropped:
        return 0
    lane["dropped_ids"] = [*dropped, record_id]
    return (2 if dropped else 0) + cap_ruler.measure(record_id)


def stub(block: Block, protect: bool, run: _Run) -> Block | None:
    """B16 step 2, in place on a fresh :func:`compact` result; the block once it fits.

    The size is kept by differences (the ruler's text is compositional) and
    confirmed by a full measure before a fit is reported.
    """
    lanes = _stub_lanes(block)
    cursors = [0] * len(lanes)
    size = cap_ruler.measure_persistent(block)
    progressed = True
    while progressed:
        progressed = False
        for n, (lane, records) in enumerate(lanes):
            found = _next_eligible(records, cursors[n], protect, run)
            if found is None:
                cursors[n] = len(records)
                continue
            cursors[n], old = found
            new = {k: old[k] for k in STUB_KEYS if k in old}
            records[cursors[n]] = new
            run.stubs.add(id(new))
            size += cap_ruler.measure(new) - cap_ruler.measure(old)
            size += _record_dropped(lane, old.get("id"))
            progressed = True
            if size <= run.limit:
                size = cap_ruler.measure_persistent(block)
                if size <= run.limit:
                    return block
    return None


def _envelopes(spill: Spill, overflow: Marker) -> list[Block]:
    """After both tiers: marker only, then without the path, then the sub-floor forms."""
    out: list[Block] = [{MARKER_KEY: overflow}]
    if spill.name is not None:
        out.append(
            {MARKER_KEY: {**overflow, "path": None, "path_omitted": True, "spill_file": spill.name}}
        )
    out.append({MARKER_KEY: {"truncated": True}})
    return out


def cap_block(block: Block, cap: int, spiller: Spiller) -> Block:
    """B6-B18: ``block`` itself when it fits ``cap``, else its spilled and compacted form."""
    limit = max(cap, SMALLEST_LANE)
    view = cap_ruler.persistent_view(block)
    try:
        ruler = cap_ruler.ruler_text(view)
    except cap_ruler.Unserialisable:
        return block  # B5: measures 0, never spilled
    if len(ruler) <= limit:
        return block
    spill = spiller(SpillRequest(view, ruler))
    note = EMAIL_NOTE_SPILLED.format(path=spill.path) if spill.ok else EMAIL_NOTE_NOT_SPILLED
    run = _Run(limit, marker(spill, len(ruler)), note)
    base = block
    try:
        for protect in (True, False):
            for budget in BUDGETS:
                candidate = compact(base, budget, protect, run)
                if run.fits(candidate):
                    return candidate
            stubbed = stub(candidate, protect, run)
            if stubbed is not None:
                return stubbed
            base = candidate
    except RecursionError:
        pass  # nested too deep to rebuild: the envelopes below still fit
    for envelope in _envelopes(spill, run.overflow):
        if run.fits(envelope):
            return envelope
    return {}
