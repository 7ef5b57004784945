"""Channels, the producer side (channels.md).

Names, allowlist, envelopes, reserved stems, payload files, mirror, publish and flush, the
producer's C11 routing, hooks registry, settings view, system events, blocked and oversized
warnings, and the daemon aggregate (C30-C34: mini-files, runs, control record, report,
daemon dismissal). Outside this package, import only the names below (guide.md,
Layout).
"""

from tidings.jobs.channels.allowlisting import (
    Allowlist,
    allowlist,
    load_registry,
    peek_registry_state,
    registry_state,
)
from tidings.jobs.channels.applied import pushed_through, wait_applied
from tidings.jobs.channels.blocked import KnownSets, scan
from tidings.jobs.channels.daemon_control import DaemonControlError, read_control
from tidings.jobs.channels.daemon_dismissal import clear_all, remove_events
from tidings.jobs.channels.daemon_report import refresh
from tidings.jobs.channels.daemon_runs import CONTROL_SCOPE, publish_daemon_event, settle_pending
from tidings.jobs.channels.daemon_view import alarm_threshold, read_daemon, read_minis, view_of
from tidings.jobs.channels.dead_letters import DEAD_EVENT, dead_channels, dead_letter, reason_of
from tidings.jobs.channels.envelope import ErrorResult, PublishResult, failure, raised
from tidings.jobs.channels.flush import channel_file, flush_channel, settle_intent
from tidings.jobs.channels.hooks import EDITABLE, MANIFEST_FIELDS, add, drop, edit, list_hooks
from tidings.jobs.channels.mirror import parse_mirror, summarise
from tidings.jobs.channels.names import (
    DAEMON,
    DELAY_ALARM,
    NON_CHANNEL_FILES,
    SYSTEM,
    name_error,
    not_allowlisted_message,
)
from tidings.jobs.channels.payload_files import (
    NOTIFICATION_DIR,
    FileStat,
    FpEntry,
    channel_file_stat,
    parse_payload,
)
from tidings.jobs.channels.producer import publish_event
from tidings.jobs.channels.publishing import check_channel, publish
from tidings.jobs.channels.settings_view import show

__all__ = [
    "CONTROL_SCOPE",
    "DAEMON",
    "DEAD_EVENT",
    "DELAY_ALARM",
    "EDITABLE",
    "MANIFEST_FIELDS",
    "NON_CHANNEL_FILES",
    "NOTIFICATION_DIR",
    "SYSTEM",
    "Allowlist",
    "DaemonControlError",
    "ErrorResult",
    "FileStat",
    "FpEntry",
    "KnownSets",
    "PublishResult",
    "add",
    "alarm_threshold",
    "allowlist",
    "channel_file",
    "channel_file_stat",
    "check_channel",
    "clear_all",
    "dead_channels",
    "dead_letter",
    "drop",
    "edit",
    "failure",
    "flush_channel",
    "list_hooks",
    "load_registry",
    "name_error",
    "not_allowlisted_message",
    "parse_mirror",
    "parse_payload",
    "peek_registry_state",
    "publish",
    "publish_daemon_event",
    "publish_event",
    "pushed_through",
    "raised",
    "read_control",
    "read_daemon",
    "read_minis",
    "reason_of",
    "refresh",
    "registry_state",
    "remove_events",
    "scan",
    "settle_intent",
    "settle_pending",
    "show",
    "summarise",
    "view_of",
    "wait_applied",
]
