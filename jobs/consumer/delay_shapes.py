"""The typed shapes of the delay capability (issue 22): the target statistics (D7), the
completion an expiry records (D12), the ``delay`` action's answer (D3, D4) and the alarm
job requests it sends. TypedDicts are dicts: the JSON written and answered is unchanged."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal, Required, TypedDict

from tidings.store.reasons import Reason


class TargetStats(TypedDict, total=False):
    """D7: a target channel's statistics; ``present`` is ``None`` when unknown."""

    present: Required[bool | None]
    read_error: str
    byte_size: int
    sha256: str
    producer_reported_count: int
    retained_event_count: int
    retained_event_count_scope: str


class Completion(TypedDict):
    """D12: what an expired delay records, and its alarm reports."""

    request_id: str | None
    target: str | None
    requested_seconds: int | None
    actual_seconds: float
    expired_at: str
    changed: bool | None
    #: As the request recorded it (read back from the state file).
    initial: Mapping[str, object]
    current: TargetStats


class DelayResult(TypedDict, total=False):
    """The ``delay`` action's answer: ``delayed`` or ``cancelled``, or an error."""

    status: Required[Literal["ok", "error"]]
    action: Literal["delayed", "cancelled"]
    channel: str | None
    seconds: int
    request_id: str
    deadline_at: str
    replaced_channel: str
    cancelled: bool
    active_channel: str
    reason: Reason
    message: str


class ActiveState(TypedDict):
    """D5, D6: the state file of a fresh active request."""

    version: int
    status: str
    request_id: str
    target: str
    requested_seconds: int
    max_seconds: int
    started_epoch: float
    started_at: str
    deadline_epoch: float
    deadline_at: str
    initial: TargetStats


class AlarmRequest(TypedDict, total=False):
    """One change to the scheduler's alarm jobs (D5): ``add`` one, or ``remove`` one."""

    op: Required[Literal["add", "remove"]]
    request_id: Required[str | None]
    agent_id: str
    deadline_epoch: float
