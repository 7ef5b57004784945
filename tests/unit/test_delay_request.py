"""The ``delay`` action: validation, results, state file, scheduler requests
(delay.md D3-D6, D14, D15; channels.md C23)."""

from __future__ import annotations

import hashlib
import json
import re
import shutil
from typing import Any

import pytest

from tests.conftest import TEST_HOST
from tests.support.delay import (
    ALARM,
    STATE,
    active_state,
    alarm_of,
    capture,
    events,
    put_state,
    state_of,
    write_channel,
)
from tests.support.dispatch import InlineJobs
from tidings.jobs.consumer import delay_alarm, delay_request, observe, request_delay, visit
from tidings.jobs.runtime import Runtime
from tidings.store.clock import FakeClock
from tidings.store.files import atomic_write
from tidings.store.jsonfmt import compact_sorted, utc_stamp
from tidings.store.keys import AgentKeys
from tidings.store.models import AgentRecord


def nothing_written(agent: AgentRecord, jobs: InlineJobs) -> bool:
    return state_of(agent) is None and alarm_of(agent) is None and jobs.alarm_requests == []


class TestValidation:
    """D3: in order, nothing changed on failure."""

    def test_d3_requires_workdir(
        self, rt: Runtime, agent: AgentRecord, jobs_dispatch: InlineJobs
    ) -> None:
        shutil.rmtree(agent.root)
        result = request_delay(rt, agent, "email", 5)
        assert result["status"] == "error"
        assert result["reason"] == "delay_requires_workdir"
        assert result["message"]
        assert not agent.root.exists()
        assert jobs_dispatch.alarm_requests == []

    @pytest.mark.parametrize(
        ("channel", "seconds", "message"),
        [
            ("foo", 5, "not allowlisted"),
            ("../x", 5, "channel must not contain '..'"),
            ("", 5, "channel must be a non-empty string"),
            (None, 5, "channel must be a non-empty string"),
            ("delay-alarm", 5, "cannot be delayed"),
            ("email", True, "seconds must be an integer"),
            ("email", False, "seconds must be an integer"),
            ("email", 5.0, "seconds must be an integer"),
            ("email", "5", "seconds must be an integer"),
            ("email", None, "seconds must be an integer"),
            ("email", -1, "seconds must be between 0 and 600"),
            ("email", 601, "seconds must be between 0 and 600"),
            ("foo", -1, "not allowlisted"),
        ],
    )
    def test_d3_invalid_delay(
        self,
        rt: Runtime,
        agent: AgentRecord,
        jobs_dispatch: InlineJobs,
        channel: Any,
        seconds: Any,
        message: str,
    ) -> None:
        result = request_delay(rt, agent, channel, seconds)
        assert result["status"] == "error"
        assert result["reason"] == "invalid_delay"
        assert result["channel"] == channel
        assert message in result["message"]
        assert nothing_written(agent, jobs_dispatch)

    def test_d3_range_message_is_exact(self, rt: Runtime, agent: AgentRecord) -> None:
        assert request_delay(rt, agent, "email", 601) == {
            "status": "error",
            "reason": "invalid_delay",
            "channel": "email",
            "message": "seconds must be between 0 and 600",
        }

    def test_d3_hook_channel_can_be_delayed(self, rt: Runtime, agent: AgentRecord) -> None:
        """C5/C6: a hook channel of this agent is allowed, hence delayable."""
        manifest = {
            "name": "w",
            "channel": "watch",
            "source": "s",
            "description": "d",
            "how_to_modify": "m",
            "how_to_cancel": "c",
        }
        atomic_write(agent.root, ".notification/hooks.json", json.dumps([manifest]).encode())
        assert request_delay(rt, agent, "watch", 5)["status"] == "ok"

    def test_d3_mcp_and_daemon_can_be_delayed(self, rt: Runtime, agent: AgentRecord) -> None:
        assert request_delay(rt, agent, "mcp.build", 5)["status"] == "ok"
        assert request_delay(rt, agent, "daemon", 5)["replaced_channel"] == "mcp.build"

    def test_d3_zero_and_cap_are_in_range(self, rt: Runtime, agent: AgentRecord) -> None:
        assert request_delay(rt, agent, "email", 600)["status"] == "ok"
        assert request_delay(rt, agent, "email", 0)["cancelled"] is True


class TestResults:
    """D4: the four outcomes and their exact results."""

    def test_d4_delayed(self, rt: Runtime, agent: AgentRecord, clock: FakeClock) -> None:
        now = clock.now()
        result = request_delay(rt, agent, "email", 300)
        assert set(result) == {
            "status",
            "action",
            "channel",
            "seconds",
            "request_id",
            "deadline_at",
        }
        assert result["status"] == "ok" and result["action"] == "delayed"
        assert result["channel"] == "email" and result["seconds"] == 300
        assert result["deadline_at"] == utc_stamp(now + 300)
        assert re.fullmatch(r"[0-9a-f]{32}", result["request_id"])

    def test_d4_replace_same_channel_reports_replaced_channel(
        self, rt: Runtime, agent: AgentRecord
    ) -> None:
        first = request_delay(rt, agent, "email", 300)
        second = request_delay(rt, agent, "email", 100)
        assert second["replaced_channel"] == "email"
        assert second["request_id"] != first["request_id"]
        assert state_of(agent)["request_id"] == second["request_id"]

    def test_d4_replace_other_channel(self, rt: Runtime, agent: AgentRecord) -> None:
        request_delay(rt, agent, "email", 300)
        second = request_delay(rt, agent, "system", 30)
        assert second["replaced_channel"] == "email"
        assert state_of(agent)["target"] == "system"

    def test_d4_no_replaced_channel_after_expiry(
        self, rt: Runtime, agent: AgentRecord, clock: FakeClock
    ) -> None:
        request_delay(rt, agent, "email", 10)
        clock.advance(11)
        result = request_delay(rt, agent, "email", 10)
        assert "replaced_channel" not in result
        assert alarm_of(agent) is not None, "the owed alarm was published first"

    def test_d4_cancel_without_live_delay(
        self, rt: Runtime, agent: AgentRecord, jobs_dispatch: InlineJobs
    ) -> None:
        assert request_delay(rt, agent, "email", 0) == {
            "status": "ok",
            "action": "cancelled",
            "channel": "email",
            "cancelled": False,
        }
        assert state_of(agent) is None
        assert jobs_dispatch.alarm_requests == []

    def test_d4_cancel_live_delay(self, rt: Runtime, agent: AgentRecord, clock: FakeClock) -> None:
        request_delay(rt, agent, "email", 300)
        clock.advance(5)
        assert request_delay(rt, agent, "email", 0) == {
            "status": "ok",
            "action": "cancelled",
            "channel": "email",
            "cancelled": True,
        }
        state = state_of(agent)
        assert state["status"] == "cancelled"
        assert state["cancelled_at"] == utc_stamp(clock.now())
        assert alarm_of(agent) is None, "a cancel publishes no alarm"
        clock.advance(1000)
        assert delay_alarm.reconcile(rt, agent) is False
        assert alarm_of(agent) is None

    def test_d4_cancel_other_channel_is_a_mismatch(self, rt: Runtime, agent: AgentRecord) -> None:
        request_delay(rt, agent, "email", 300)
        before = (agent.root / STATE).read_bytes()
        result = request_delay(rt, agent, "system", 0)
        assert result["status"] == "error"
        assert result["reason"] == "delay_target_mismatch"
        assert result["channel"] == "system" and result["active_channel"] == "email"
        assert result["message"]
        assert (agent.root / STATE).read_bytes() == before

    def test_d4_replacing_publishes_no_alarm(
        self, rt: Runtime, agent: AgentRecord, clock: FakeClock
    ) -> None:
        request_delay(rt, agent, "email", 300)
        clock.advance(100)
        request_delay(rt, agent, "system", 300)
        assert alarm_of(agent) is None

    def test_d4_overdue_found_under_lock_is_published_then_retried(
        self,
        rt: Runtime,
        agent: AgentRecord,
        clock: FakeClock,
        monkeypatch: pytest.MonkeyPatch,
    ) -> None:
        """The deadline passes between the opening reconcile and the lock."""
        first = request_delay(rt, agent, "email", 10)
        real = delay_alarm.reconcile
        calls: list[str | None] = []

        def reconcile(rt_: Runtime, agent_: AgentRecord, expected: str | None = None) -> bool:
            calls.append(expected)
            if len(calls) == 1:
                clock.advance(11)  # came due right after the unlocked look
                return False
            return real(rt_, agent_, expected)

        monkeypatch.setattr(delay_request.delay_alarm, "reconcile", reconcile)
        result = request_delay(rt, agent, "system", 30)
        assert result["status"] == "ok" and "replaced_channel" not in result
        assert calls[1] == first["request_id"]
        assert alarm_of(agent)["data"]["delay_alarm"]["request_id"] == first["request_id"]
        assert state_of(agent)["request_id"] == result["request_id"]

    def test_d4_recovery_pending_when_the_owed_alarm_cannot_be_published(
        self,
        rt: Runtime,
        agent: AgentRecord,
        clock: FakeClock,
        monkeypatch: pytest.MonkeyPatch,
    ) -> None:
        request_delay(rt, agent, "email", 10)
        clock.advance(11)
        before = (agent.root / STATE).read_bytes()
        monkeypatch.setattr(delay_request.delay_alarm, "reconcile", lambda *a, **k: False)
        result = request_delay(rt, agent, "system", 30)
        assert result["status"] == "error"
        assert result["reason"] == "delay_expiry_recovery_pending"
        assert (agent.root / STATE).read_bytes() == before

    def test_d3_state_write_failure(
        self, rt: Runtime, agent: AgentRecord, jobs_dispatch: InlineJobs
    ) -> None:
        (agent.root / STATE).mkdir(parents=True)
        result = request_delay(rt, agent, "email", 30)
        assert result == {
            "status": "error",
            "reason": "delay_state_write_failed",
            "channel": "email",
            "message": "could not persist notification delay: IsADirectoryError",
        }
        assert jobs_dispatch.alarm_requests == []


class TestStateFile:
    """D5, D6."""

    def test_d5_state_is_compact_sorted_and_complete(
        self,
        rt: Runtime,
        agent: AgentRecord,
        clock: FakeClock,
        monkeypatch: pytest.MonkeyPatch,
    ) -> None:
        monkeypatch.setenv("LINGTAI_NOTIFICATION_DELAY_MAX_SECONDS", "900")
        email = write_channel(agent, "email", {"header": "h", "data": {"count": 2}})
        now = clock.now()
        result = request_delay(rt, agent, "email", 120)
        raw = (agent.root / STATE).read_bytes()
        state = json.loads(raw)
        assert raw == compact_sorted(state).encode()
        assert not raw.endswith(b"\n")
        assert state == {
            "version": 1,
            "status": "active",
            "request_id": result["request_id"],
            "target": "email",
            "requested_seconds": 120,
            "max_seconds": 900,
            "started_epoch": now,
            "started_at": utc_stamp(now),
            "deadline_epoch": now + 120,
            "deadline_at": utc_stamp(now + 120),
            "initial": {
                "present": True,
                "byte_size": len(email),
                "sha256": hashlib.sha256(email).hexdigest(),
                "producer_reported_count": 2,
            },
        }

    def test_d6_request_id_is_fresh_and_used_everywhere(
        self, rt: Runtime, agent: AgentRecord, clock: FakeClock, jobs_dispatch: InlineJobs
    ) -> None:
        ids = {request_delay(rt, agent, "email", 5)["request_id"] for _ in range(3)}
        assert len(ids) == 3
        last = state_of(agent)["request_id"]
        add = jobs_dispatch.alarm_requests[-1][1]
        assert add["op"] == "add" and add["request_id"] == last
        clock.advance(6)
        assert delay_alarm.reconcile(rt, agent, expected=last) is True
        assert alarm_of(agent)["data"]["delay_alarm"]["request_id"] == last
        assert state_of(agent)["request_id"] == last


class TestSchedulerRequests:
    """D15: requests go to the host's scheduler after the locks are released."""

    def test_d15_add(
        self, rt: Runtime, agent: AgentRecord, jobs_dispatch: InlineJobs, clock: FakeClock
    ) -> None:
        result = request_delay(rt, agent, "email", 30)
        assert jobs_dispatch.alarm_requests == [
            (
                TEST_HOST,
                {
                    "op": "add",
                    "agent_id": agent.agent_id,
                    "request_id": result["request_id"],
                    "deadline_epoch": clock.now() + 30,
                },
            ),
        ]

    def test_d15_replace_sends_remove_then_add(
        self, rt: Runtime, agent: AgentRecord, jobs_dispatch: InlineJobs
    ) -> None:
        first = request_delay(rt, agent, "email", 30)
        second = request_delay(rt, agent, "system", 30)
        ops = [r for _, r in jobs_dispatch.alarm_requests[1:]]
        assert ops[0] == {"op": "remove", "request_id": first["request_id"]}
        assert ops[1]["op"] == "add" and ops[1]["request_id"] == second["request_id"]

    def test_d15_cancel_sends_remove(
        self, rt: Runtime, agent: AgentRecord, jobs_dispatch: InlineJobs
    ) -> None:
        first = request_delay(rt, agent, "email", 30)
        request_delay(rt, agent, "email", 0)
        assert jobs_dispatch.alarm_requests[-1][1] == {
            "op": "remove",
            "request_id": first["request_id"],
        }

    def test_d15_errors_and_noop_cancel_send_nothing(
        self, rt: Runtime, agent: AgentRecord, jobs_dispatch: InlineJobs
    ) -> None:
        request_delay(rt, agent, "email", 0)
        request_delay(rt, agent, "email", 9999)
        request_delay(rt, agent, "email", 30)
        request_delay(rt, agent, "system", 0)  # mismatch
        assert [r["op"] for _, r in jobs_dispatch.alarm_requests] == ["add"]

    def test_d15_send_failure_keeps_the_delay(
        self,
        rt: Runtime,
        agent: AgentRecord,
        jobs_dispatch: InlineJobs,
        monkeypatch: pytest.MonkeyPatch,
        caplog: pytest.LogCaptureFixture,
    ) -> None:
        """D19: the backstop publishes the alarm when the scheduler never heard of it."""
        capture(caplog)

        def broken(host: str, request: dict[str, Any]) -> None:
            raise ConnectionError("broker down")

        monkeypatch.setattr(jobs_dispatch, "alarm_request", broken)
        result = request_delay(rt, agent, "email", 30)
        assert result["status"] == "ok"
        assert state_of(agent)["status"] == "active"
        assert events(caplog, "notification_delay_alarm_request_failed")[0]["op"] == "add"


class TestWake:
    """D14 and channels.md C23."""

    def test_c23_delay_and_cancel_commit_the_wake_fingerprint(
        self, rt: Runtime, agent: AgentRecord
    ) -> None:
        write_channel(agent, "email", {"header": "mail"})
        write_channel(agent, "system", {"header": "sys"})
        assert visit.sync_agent(rt, agent)["woke"] is True
        request_delay(rt, agent, "email", 30)
        wake = json.loads(rt.redis.get(AgentKeys(agent.agent_id).wake_fp))
        assert [entry[0] for entry in wake] == ["system.json"]
        assert wake == observe(rt, agent).masked_fp
        assert visit.sync_agent(rt, agent)["woke"] is False
        request_delay(rt, agent, "email", 0)
        wake = json.loads(rt.redis.get(AgentKeys(agent.agent_id).wake_fp))
        assert [entry[0] for entry in wake] == ["email.json", "system.json"]
        assert visit.sync_agent(rt, agent)["woke"] is False

    def test_c53_an_own_act_never_swallows_a_producers_news(
        self, rt: Runtime, agent: AgentRecord
    ) -> None:
        """Only the delayed channel's wake entry moves: news elsewhere still wakes."""
        write_channel(agent, "email", {"header": "mail"})
        visit.sync_agent(rt, agent)
        write_channel(agent, "system", {"header": "news"})  # not yet seen by any tick
        request_delay(rt, agent, "email", 30)
        request_delay(rt, agent, "email", 0)
        assert visit.sync_agent(rt, agent)["woke"] is True

    def test_d14_delay_action_that_publishes_an_alarm_runs_the_sync_step(
        self,
        rt: Runtime,
        agent: AgentRecord,
        clock: FakeClock,
        monkeypatch: pytest.MonkeyPatch,
    ) -> None:
        synced: list[str] = []
        real = visit.sync_agent
        monkeypatch.setattr(
            visit,
            "sync_agent",
            lambda rt_, agent_, **kw: synced.append(agent_.agent_id) or real(rt_, agent_, **kw),
        )
        request_delay(rt, agent, "email", 10)
        assert synced == []
        clock.advance(11)
        request_delay(rt, agent, "system", 10)
        assert synced == [agent.agent_id]
        assert alarm_of(agent) is not None


def test_d4_initial_stats_read_before_the_state_changes(rt: Runtime, agent: AgentRecord) -> None:
    """D4/D7: ``initial`` describes the target as it was at the request."""
    request_delay(rt, agent, "email", 30)
    assert state_of(agent)["initial"] == {"present": False}
    write_channel(agent, "email", {"data": {"events": [1]}})
    request_delay(rt, agent, "email", 30)
    initial = state_of(agent)["initial"]
    assert initial["present"] is True and initial["retained_event_count"] == 1


def test_d4_an_expired_state_without_alarm_never_blocks(
    rt: Runtime, agent: AgentRecord, clock: FakeClock
) -> None:
    """A corrupt active state is no delay and owes no alarm: it is simply replaced."""
    put_state(agent, active_state(clock.now(), requested_seconds=True))
    clock.advance(100)
    assert request_delay(rt, agent, "email", 5)["status"] == "ok"
    assert not (agent.root / ALARM).exists()
