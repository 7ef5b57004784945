"""What the agent is shown and what it does about it (channels.md C19-C27, C35-C37; delay.md).

Fingerprints and the bare read, the coherent read (D9 reconcile, then the read), committed
fingerprints, the wake mask, own acts, delivery and render; the delay state, record and alarm,
delay requests and expiry; dismissal; one agent's visit (C27) and the wake stream with its one
wait loop. Outside this package, import only the names below (guide.md, Layout).
"""

from tidings.jobs.consumer.attention import render_attention
from tidings.jobs.consumer.coherent import observe
from tidings.jobs.consumer.delay import alarm_plan, expire, rehearse_expiry
from tidings.jobs.consumer.delay_alarm import owes_alarm, wake_deadline
from tidings.jobs.consumer.delay_request import request_delay
from tidings.jobs.consumer.delay_state import STATE_FILE, read_state, structural_problem
from tidings.jobs.consumer.delivery import (
    Notifications,
    ToolResult,
    attention_preview,
    check_placeholder,
    is_placeholder,
    render,
    stamp,
    unavailable,
)
from tidings.jobs.consumer.dismiss import dismiss_channel, dismiss_event, dismiss_ref
from tidings.jobs.consumer.read import fingerprint
from tidings.jobs.consumer.visit import prefetch, prefetch_records, sync_agent
from tidings.jobs.consumer.wait_loop import Entry
from tidings.jobs.consumer.waiting import (
    latest_id,
    signals_after,
)
from tidings.jobs.consumer.waiting import (
    wait_for_wake as wait_for_wake_async,
)
from tidings.jobs.consumer.wake_stream import wait_for_wake

__all__ = [
    "STATE_FILE",
    "Entry",
    "Notifications",
    "ToolResult",
    "alarm_plan",
    "attention_preview",
    "check_placeholder",
    "dismiss_channel",
    "dismiss_event",
    "dismiss_ref",
    "expire",
    "fingerprint",
    "is_placeholder",
    "latest_id",
    "observe",
    "owes_alarm",
    "prefetch",
    "prefetch_records",
    "read_state",
    "rehearse_expiry",
    "render",
    "render_attention",
    "request_delay",
    "signals_after",
    "stamp",
    "structural_problem",
    "sync_agent",
    "unavailable",
    "wait_for_wake",
    "wait_for_wake_async",
    "wake_deadline",
]
