"""The :class:`Agent`: what producers, the agent's tool and the orchestrator call.

Every method is a thin wrapper around a ``jobs`` function, run against this
agent's record with the hub's ports. With ``inline=True`` the flush that a
publish starts runs in the caller instead of on a worker; both paths run the
same job functions.

Only the producer jobs load with this module. The rest loads on first use
(function-local imports): the consumer's reads, cap and tool, the inbox, and the
memory and turn jobs with pygit2, none of which a producer (``tidings publish``
from a hook, where start-up is most of the cost) ever needs.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Protocol

from tidings.jobs.channels import PublishResult, publish, publish_event
from tidings.jobs.guard import ErrorAnswer, answering, raising
from tidings.jobs.runtime import Runtime
from tidings.store.models import AgentRecord

if TYPE_CHECKING:
    from dramatiq import Broker

    from tidings._turn import Turn
    from tidings.jobs.cap import Block
    from tidings.jobs.consumer import Entry, Notifications, ToolResult
    from tidings.jobs.inbox import Admitted, Ignored, InboxError, PublicItem
    from tidings.jobs.memory import ObservationResult
    from tidings.jobs.turns import SideEffectMarked, Startup, TurnError


def _unstamped(
    answer: ErrorAnswer, agent: Agent, result: object, persistent: object = None
) -> object:
    """C24, C52: a stamp that cannot be made leaves the tool's result as it was; a check
    placeholder says the notifications could not be read (``answer``'s reason)."""
    from tidings.jobs.consumer import unavailable  # noqa: PLC0415 - see module doc

    if not isinstance(result, dict):
        return result
    return unavailable(dict(result), answer["reason"])


def _invalid_persistent() -> ErrorAnswer:
    return {
        "status": "error",
        "reason": "invalid_persistent",
        "message": "persistent block must be an object",
    }


class Host(Protocol):
    """What an agent needs of its hub: the shared ports and the broker."""

    @property
    def runtime(self) -> Runtime: ...

    @property
    def broker(self) -> Broker: ...


class Agent:
    def __init__(self, hub: Host, record: AgentRecord, *, inline: bool = False) -> None:
        self.hub = hub
        self.record = record
        self.inline = inline
        self.runtime: Runtime = hub.runtime
        if inline:
            from tidings.workers.inline import InlineDispatcher  # noqa: PLC0415 - loads the jobs

            self.runtime = hub.runtime.with_dispatch(
                InlineDispatcher(hub.broker, lambda: self.runtime)
            )

    @property
    def agent_id(self) -> str:
        return self.record.agent_id

    @property
    def workdir(self) -> str:
        return self.record.workdir

    def __repr__(self) -> str:
        return f"<Agent {self.agent_id} {self.workdir} host={self.record.host}>"

    # -- producers (channels.md C10, C11, C30) ----------------------------------

    @answering("publish")
    def publish(
        self, channel: str, envelope: Mapping[str, object], wait: bool = False
    ) -> PublishResult:
        """Replace the whole mirror of ``channel`` (C10).

        ``channel``: an allowed channel name; ``envelope``: the whole envelope object;
        ``wait``: return only once a flush applied it. Returns ``{"status": "ok",
        "flushed": bool}`` or an error dict whose ``reason`` is listed in
        ``docs/reference/reasons.md`` (``invalid_channel``, ``invalid_envelope``, ...).
        """
        return publish(self.runtime, self.record, channel, envelope, wait=wait)

    @answering("publish_event")
    def publish_event(
        self,
        channel: str,
        event: Mapping[str, object],
        priority: str | None = None,
        idempotency_key: str | None = None,
        wait: bool = False,
    ) -> PublishResult:
        """Append ``event`` to ``channel``'s ``data.events`` with coalescing (C11).

        ``priority``: ``None``, ``"low"``, ``"normal"`` or ``"high"``; ``idempotency_key``:
        a repeated key answers the first event's id with ``"duplicate": True``; ``wait``:
        return once a flush applied it. Returns ``{"status": "ok", "event_id", ...}`` or
        an error dict (``invalid_event``, ``event_too_large``, ``reserved_channel``, ...).
        """
        return publish_event(
            self.runtime,
            self.record,
            channel,
            event,
            priority=priority,
            idempotency_key=idempotency_key,
            wait=wait,
        )

    @answering("publish_daemon_event")
    def publish_daemon_event(
        self,
        daemon_id: str,
        event: Mapping[str, object],
        priority: str | None = None,
        wait: bool = False,
    ) -> PublishResult:
        """Append ``event`` to daemon run ``daemon_id``'s mini-file (C30).

        ``priority`` (``"high"`` or ``"normal"``) is the run's priority in the ``daemon``
        aggregate. Runs in the caller under the daemon locks, so the result is final
        whatever ``wait`` says. Returns ``{"status": "ok", ...}`` or an error dict
        (``invalid_daemon_id``, ``daemon_run_full``, ``daemon_write_failed``, ...).
        """
        from tidings.jobs.channels import publish_daemon_event  # noqa: PLC0415 - see module doc

        return publish_daemon_event(
            self.runtime, self.record, daemon_id, event, priority=priority, wait=wait
        )

    # -- consumer reads (channels.md C21-C24) ------------------------------------

    @raising("snapshot")
    def snapshot(self) -> dict[str, dict[str, object]]:
        """A coherent read of the visible channels ``{channel: envelope}``; commits nothing.

        The composed read: an overdue delay's alarm is published first, so the due
        target and its alarm show in this same read (delay.md D9, channels.md C22)."""
        from tidings.jobs.consumer import observe  # noqa: PLC0415 - see module doc

        return observe(self.runtime, self.record).payloads

    @answering("stamp", fail_open=_unstamped)
    def stamp(
        self, result: dict[str, object], persistent: Mapping[str, object] | None = None
    ) -> ToolResult | ErrorAnswer:
        """``result`` (a tool result dict) with ``_meta.agent_meta`` stamped from one
        stable read (C24); ``persistent``: the caller's email/IM block, capped beside the
        lane. A stamp that cannot be made returns ``result`` unchanged (C52)."""
        if persistent is not None and not isinstance(persistent, dict):
            return _invalid_persistent()
        from tidings.jobs.consumer import stamp  # noqa: PLC0415 - see module doc

        return stamp(self.runtime, self.record, result, persistent)

    @answering("render")
    def render(self, persistent: Mapping[str, object] | None = None) -> Notifications | ErrorAnswer:
        """The capped ``notifications`` object; commits the delivered version (C24).

        ``persistent``: the caller's email/IM block (an object), capped with the lane;
        anything else answers ``invalid_persistent``.
        """
        if persistent is not None and not isinstance(persistent, dict):
            return _invalid_persistent()
        from tidings.jobs.consumer import render  # noqa: PLC0415 - see module doc

        return render(self.runtime, self.record, persistent)

    @answering("cap_persistent")
    def cap_persistent(self, block: Mapping[str, object]) -> Block | ErrorAnswer:
        """A caller's email/IM ``block`` within the block cap, spilled to ``logs/`` if cut
        (block-cap.md B11, B15-B17); the very same object when it fits (B6)."""
        if not isinstance(block, dict):
            return _invalid_persistent()
        from tidings.jobs.cap import cap_persistent  # noqa: PLC0415 - see module doc

        return cap_persistent(self.runtime, self.record, block)

    # -- the agent-facing tool (channels.md C44) ----------------------------------

    @answering("notification")
    def notification(self, action: str, input: Mapping[str, object] | None = None) -> ToolResult:
        """Run one action of the ``notification`` tool with its ``input`` (``None`` means
        ``{}``).

        ``action``: ``check``, ``dismiss_channel``, ``dismiss_event``, ``dismiss_ref``,
        ``add``, ``list``, ``edit``, ``drop``, ``delay``, ``settings`` or ``manual``; the
        input and result of each are channels.md's (C44).
        """
        from tidings import _tool as notification_tool  # noqa: PLC0415 - see module doc

        return notification_tool.notification(self, action, input)

    @answering("call_tool")
    def call_tool(self, arguments: Mapping[str, object]) -> ToolResult:
        """Run a model's raw ``notification`` tool call: ``arguments`` is
        ``{action, input, reasoning?, summarize?}``. Answers the tool's result (the same
        JSON object :meth:`notification` answers, or ``{"status": "error", "reason"}`` for
        arguments that are not a valid call)."""
        from tidings import _tool as notification_tool  # noqa: PLC0415 - see module doc

        return notification_tool.call_tool(self, arguments)

    # -- the orchestrator's turn loop (memory-inbox.md M3-M7, M43-M51) -------------

    @answering("startup")
    def startup(self) -> Startup:
        """Inbox recovery, then the ``startup`` memory observation (M51); never wakes.

        Returns ``{"status": "ok", "recovered": {"retryable", "needs_repair"}, "memory"}``,
        ``memory`` being the observation's M12 result.
        """
        from tidings.jobs.turns import startup  # noqa: PLC0415 - pygit2, see module doc

        return startup(self.runtime, self.record)

    @answering("prepare_turn")
    def prepare_turn(self, kind: str = "ordinary") -> Turn | TurnError:
        """Take the turn slot, observe (ordinary/scheduled), claim and render (M43).

        ``kind``: ``"ordinary"`` or ``"scheduled"`` (both observe memory first), ``"bridge"``
        (a relayed external message) or ``"peer"`` (another agent's ambient message),
        which do not observe.

        Returns a :class:`Turn`, or an error dict (``turn_in_progress``, ``invalid_kind``).
        """
        from tidings._turn import Turn  # noqa: PLC0415 - see module doc
        from tidings.jobs.turns import inline_pre_turn, prepare_turn  # noqa: PLC0415 - pygit2, see module doc
        from tidings.workers.turn_group import GroupPreTurn  # noqa: PLC0415 - pygit2, see module doc

        pre_turn = inline_pre_turn if self.inline else GroupPreTurn(self.hub.broker)
        result = prepare_turn(self.runtime, self.record, kind, pre_turn)
        return Turn.from_result(result) if result["status"] == "ok" else result

    @answering("mark_side_effect")
    def mark_side_effect(self, turn: Turn | str) -> SideEffectMarked | TurnError:
        """Call before the turn's first externally visible action (M47).

        ``turn``: the :class:`Turn` or its ``turn_id``. Returns ``{"status": "ok", ...}`` or an
        error dict (``unknown_turn``, ``turn_expired``).
        """
        from tidings._turn import turn_id_of  # noqa: PLC0415 - see module doc
        from tidings.jobs.turns import mark_side_effect  # noqa: PLC0415 - pygit2, see module doc

        return mark_side_effect(self.runtime, self.record, turn_id_of(turn))

    @answering("finish_turn")
    def finish_turn(
        self,
        turn: Turn | str,
        ok: bool = True,
        side_effects: bool = False,
        ignored: Iterable[str] = (),
        owned: Mapping[str, object] | None = None,
    ) -> TurnError | dict[str, object]:
        """Reconcile the memory checkpoint and settle the turn's items (M46-M50).

        ``turn``: the :class:`Turn` (or its id) that :meth:`prepare_turn` answered;
        ``ok``: the turn succeeded; ``side_effects``: it acted outside (M47); ``ignored``:
        event ids to settle as ``ignored``; ``owned``: the agent's own memory changes,
        absorbed instead of admitted (M48). Returns the settled turn (``{"status": "ok",
        ...}``) or an error dict (``unknown_turn``, ``turn_expired``, ``invalid_input``).
        """
        from tidings._turn import turn_id_of  # noqa: PLC0415 - see module doc
        from tidings.jobs.turns import finish_turn  # noqa: PLC0415 - pygit2, see module doc

        return finish_turn(
            self.runtime, self.record, turn_id_of(turn), ok, side_effects, ignored, owned
        )

    @raising("inbox")
    def inbox(
        self, limit: int = 30, state: str | None = None, before: str | None = None
    ) -> list[PublicItem]:
        """The inbox projection, newest first (M7); never wakes.

        ``limit``: 1 to the page maximum; ``state``: one item state to list; ``before``:
        an event id to page from. Bad input raises :class:`tidings.TidingsError`
        (``invalid_limit``, ``invalid_state``, ``invalid_before``).
        """
        from tidings.jobs.inbox import projection  # noqa: PLC0415 - see module doc

        return projection(self.runtime, self.agent_id, limit, state, before)

    @answering("ignore")
    def ignore(self, event_id: str) -> Ignored | InboxError:
        """Move the pending, deferred or processing item ``event_id`` to ``ignored`` (M6).

        Returns ``{"status": "ok", ...}`` or an error dict (``not_found``,
        ``not_ignorable``).
        """
        from tidings.jobs.inbox import ignore  # noqa: PLC0415 - see module doc

        return ignore(self.runtime, self.agent_id, event_id)

    @answering("admit")
    def admit(
        self,
        source_kind: str,
        summary: str,
        payload: Mapping[str, object] | None = None,
        wake: bool = False,
        key: str | None = None,
    ) -> Admitted | InboxError:
        """Admit an application-defined source event into the inbox (M3, M4).

        ``source_kind``: ``^[a-z][a-z0-9._-]{0,63}$`` (not ``memory-change``); ``summary``:
        the line the agent reads; ``payload``: a JSON object; ``wake``: also append a wake
        signal; ``key``: an idempotency key. Returns ``{"status": "ok", "event_id", ...}``
        or an error dict (``invalid_source_kind``, ``inbox_full``, ...).
        """
        from tidings.jobs.inbox import admit  # noqa: PLC0415 - see module doc

        return admit(self.runtime, self.agent_id, source_kind, summary, payload, wake, key)

    @answering("observe_memory")
    def observe_memory(self, reason: str = "manual") -> ObservationResult | ErrorAnswer:
        """Observe the memory repository now (M10); the result's trigger is ``reason``
        (1 to 64 characters). Returns the M12 result: ``status`` (``baseline``,
        ``unchanged``, ``changed``, ``absorbed``, ``unavailable``, ``unstable`` or
        ``error``), ``trigger``, ``event_id``, ``checkpoint_version``, ``observed_at`` and,
        when there is one, ``reason``."""
        if not isinstance(reason, str) or not 1 <= len(reason) <= 64:
            return {
                "status": "error",
                "reason": "invalid_input",
                "message": "reason must be a string of 1 to 64 characters",
            }
        from tidings.jobs.memory import observe_memory  # noqa: PLC0415 - pygit2, see module doc

        return observe_memory(self.runtime, self.record, reason)

    # -- wake signals (channels.md C26) -------------------------------------------

    @raising("wait_for_wake")
    def wait_for_wake(self, timeout: float) -> Entry | None:
        """Block up to ``timeout`` seconds for the oldest unconsumed wake signal.

        Returns the signal with its ``wake_id`` and advances this agent's cursor,
        or ``None``; a bad ``timeout`` raises :class:`tidings.TidingsError`.
        """
        from tidings.jobs.consumer import wait_for_wake  # noqa: PLC0415 - see module doc

        return wait_for_wake(self.runtime, self.record, timeout)
