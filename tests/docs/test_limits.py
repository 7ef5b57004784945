"""docs/limits.md says what the code does (issue 34, acceptance 2): each row's value is
compared with the constant that enforces it."""

from __future__ import annotations

import re

from tests.support.docblocks import REPO
from tidings.jobs import limits, summary_cap
from tidings.jobs.cap import attention as cap_attention
from tidings.jobs.channels import blocked_overflow, envelope, hooks, mirror, names, publishing
from tidings.jobs.channels import flush as flushing
from tidings.jobs.inbox import admission as inbox_admission
from tidings.jobs.inbox import items as inbox_items
from tidings.jobs.inbox import text
from tidings.jobs.memory import indexfile
from tidings.jobs.turns import finish as turn_finish
from tidings.jobs.turns import prepare as turn_prepare
from tidings.store import async_connection, files, jsonread, models
from tidings.store.settings import Settings
from tidings.web import body_limit, pages, sessions

KiB, MiB = 1024, 1024 * 1024


def size(n: int) -> str:
    return f"{n // MiB} MiB" if n % MiB == 0 else f"{n // KiB} KiB"


#: Each row of the table, by its first column, and the value its constants give.
EXPECTED = {
    "one event (`publish_event`), as JSON": size(envelope.MAX_EVENT_BYTES),
    "one envelope, one channel file": size(envelope.MAX_ENVELOPE_BYTES),
    "events kept per channel": str(mirror.DEFAULT_RETAINED),
    "events kept, per-channel override (`max_events`, hooks)": f"{models.MIN_RETAINED} to {models.MAX_RETAINED:,}",
    "idempotency and event-id dedup window": f"{publishing.DEDUP_SECONDS // 3600} h",
    "records per flush batch": str(flushing.BATCH_RECORDS),
    "channel name, hook name": f"{names.MAX_NAME_CHARS} characters",
    "a file tidings reads from a workdir": size(files.MAX_READ_BYTES),
    "JSON nesting depth": str(jsonread.MAX_DEPTH),
    "one hook manifest": size(hooks.MAX_MANIFEST_BYTES),
    "the hooks registry (`hooks.json`)": size(hooks.MAX_REGISTRY_BYTES),
    "blocked channels warned one by one": str(blocked_overflow.MAX_WARNED_BLOCKED),
    "longest delay, by default (`LINGTAI_NOTIFICATION_DELAY_MAX_SECONDS`)": f"{limits.DEFAULT_DELAY_CAP} s",
    "block cap, default and ceiling (`LINGTAI_NOTIFICATION_MAX_CHARS`)": f"{limits.DEFAULT_MAX_CHARS:,} characters",
    "block cap, floor": f"{limits.MIN_MAX_CHARS:,} characters",
    "a text field kept in a compacted lane, first stage": f"{cap_attention.BUDGETS[0]} characters",
    "inbox items claimed by one turn": str(turn_prepare.MAX_CLAIM),
    "open inbox items per agent": f"{inbox_admission.MAX_OPEN:,}",
    "settled inbox items kept per agent": f"{inbox_admission.MAX_TERMINAL:,}",
    "an `admit` payload, as JSON": size(inbox_admission.MAX_PAYLOAD_BYTES),
    "an `admit` idempotency key": f"{inbox_admission.MAX_KEY_CHARS} characters",
    "an inbox item's summary in `agent.inbox()`": f"{text.PROJECTION_SUMMARY_CHARS} characters",
    "an inbox page (`agent.inbox(limit=)`), default and most": f"{inbox_items.DEFAULT_PAGE}, {inbox_items.MAX_PAGE}",
    "event ids in one `finish_turn(ignored=)`": f"{turn_finish.MAX_IGNORED:,}",
    "a memory event's summary": f"{summary_cap.SUMMARY_BYTES:,} bytes",
    "a memory repository's index file": size(indexfile.INDEX_MAX_BYTES),
    "a prepared turn's lease (`TIDINGS_TURN_LEASE_SECONDS`)": f"{Settings.model_fields['turn_lease_seconds'].default:,.0f} s",
    "one request body to the console or MCP over HTTP": size(body_limit.MAX_BODY_BYTES),
    "a spill file the console serves": size(pages.MAX_SPILL_BYTES),
    "console sign-in failures per address": f"{sessions.MAX_FAILURES} a minute"
    if sessions.FAILURE_WINDOW_SECONDS == 60
    else "?",
    "a console session": f"{sessions.SESSION_SECONDS // 3600} h",
    "Redis connections of one `tidings.aio` hub": f"{async_connection.MAX_CONNECTIONS:,}",
}


def table() -> dict[str, str]:
    rows = {}
    for line in (REPO / "docs" / "limits.md").read_text("utf-8").splitlines():
        cells = [c.strip() for c in re.split(r"(?<!\\)\|", line)[1:-1]]
        if len(cells) == 4 and cells[0] not in ("limit", "---"):
            rows[cells[0]] = cells[1]
    return rows


def test_every_limit_matches_the_code() -> None:
    rows = table()
    assert set(rows) == set(EXPECTED), set(rows) ^ set(EXPECTED)
    wrong = {
        label: (rows[label], value) for label, value in EXPECTED.items() if rows[label] != value
    }
    assert not wrong, f"docs/limits.md says (documented, code): {wrong}"
