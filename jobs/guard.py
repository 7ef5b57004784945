"""The last resort of channels.md C52: nothing unexpected escapes a public call or a tick.

:func:`answering` wraps a call that answers with a dict: an unexpected exception
becomes ``{"status": "error", "reason": "internal_error", "message"}`` (or the
call's own fail-open answer) and is logged with its traceback. :func:`raising`
wraps a call that returns another value (interfaces.md, Errors in Python): the
exception becomes a :class:`TidingsError` whose reason is ``internal_error``.
A :class:`TidingsError` already carries a machine-readable reason, so it is
answered as its error dict, or raised unchanged; so is a Redis failure that has a
reason of its own, which is the store's state or the credential's, not a failure of
tidings: a refusal (a wrong password, an ACL user without a right the call needs:
``auth_failed``, ``no_permission``, with one line naming the user and the role that has
the right; interfaces.md, "Never silent, never wrong"), or a store refusing writes or not
answering (:func:`~tidings.store.refusals.store_fault`). Those are logged without a
traceback.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable
from typing import Any, Literal, ParamSpec, TypedDict, TypeVar

from tidings.jobs import log
from tidings.store import refusals
from tidings.store.errors import TidingsError
from tidings.store.refusals import store_fault

P = ParamSpec("P")
R = TypeVar("R")


class ErrorAnswer(TypedDict):
    """C52: what a guarded call answers instead of raising (interfaces.md, Errors in Python)."""

    status: Literal["error"]
    #: The failure's machine-readable reason (docs/reference/reasons.md).
    reason: str
    message: str


#: C52: the reason of an unexpected internal failure.
INTERNAL_ERROR = "internal_error"
#: Logged event of an unexpected failure (with its traceback).
FAILED_EVENT = "notification_internal_error"
#: Logged event of a refusal that surfaced as an exception (no traceback: it is expected).
REFUSED_EVENT = "notification_call_refused"


def _agent_id(args: tuple[object, ...]) -> str | None:
    """The agent a call is about, when one of its arguments names one (for the log)."""
    for arg in args:
        found = getattr(arg, "agent_id", None)
        if isinstance(found, str):
            return found
    return None


def _client(args: tuple[object, ...]) -> object:
    """The state store's client of the agent or hub a call is made on, if one is."""
    for arg in args:
        for holder in (
            getattr(arg, "runtime", None),
            getattr(getattr(arg, "sync", None), "runtime", None),
            arg,
        ):
            client = getattr(holder, "redis", None)
            if client is not None:
                return client
    return None


def store_refusal(exc: Exception, args: tuple[object, ...] = ()) -> TidingsError | None:
    """``exc`` as the :class:`TidingsError` of the store's own answer: a refusal
    (``no_permission``, ``auth_failed``) or a fault (``store_refuses_writes``,
    ``store_unresponsive``); ``None`` when it is something else."""
    return refusals.refusal(exc, _client(args)) or store_fault(exc)


def internal_error(call: str, exc: Exception, args: tuple[object, ...] = ()) -> ErrorAnswer:
    """Log ``exc`` with its traceback and answer C52's ``internal_error``."""
    log.event(
        FAILED_EVENT,
        logging.ERROR,
        exc_info=exc,
        call=call,
        agent_id=_agent_id(args),
        error=f"{type(exc).__name__}: {exc}"[:300],
    )
    return {
        "status": "error",
        "reason": INTERNAL_ERROR,
        "message": f"{call} failed unexpectedly ({type(exc).__name__}); the failure is logged",
    }


def unexpected_answer(call: str, exc: Exception, args: tuple[object, ...] = ()) -> ErrorAnswer:
    """What an exception no one expected answers: the store's own answer when it is
    one (:func:`store_refusal`), else :func:`internal_error`."""
    fault = store_refusal(exc, args)
    if fault is not None:
        return refused(call, fault, args)
    return internal_error(call, exc, args)


def unexpected(call: str, exc: Exception, args: tuple[object, ...] = ()) -> TidingsError:
    """Log ``exc`` as :func:`unexpected_answer` does; the :class:`TidingsError` to raise."""
    answer = unexpected_answer(call, exc, args)
    return TidingsError(answer["message"], reason=answer["reason"])


def refused(call: str, exc: TidingsError, args: tuple[object, ...] = ()) -> ErrorAnswer:
    """Log a refusal that surfaced as ``exc``; its error dict (``exc.as_result()``)."""
    log.event(
        REFUSED_EVENT,
        call=call,
        agent_id=_agent_id(args),
        reason=exc.reason,
        error=exc.message[:300],
    )
    return {"status": "error", "reason": exc.reason, "message": exc.message}


def answering(
    call: str, *, fail_open: Callable[..., Any] | None = None
) -> Callable[[Callable[P, R]], Callable[P, R | ErrorAnswer]]:
    """Decorate a dict-answering public call. ``fail_open(answer, *args, **kwargs)``:
    the call's own answer instead of the error dict ``answer`` of an unexpected failure
    or a store refusal."""

    def wrap(fn: Callable[P, R]) -> Callable[P, R | ErrorAnswer]:
        @functools.wraps(fn)
        def guarded(*args: P.args, **kwargs: P.kwargs) -> R | ErrorAnswer:
            try:
                return fn(*args, **kwargs)
            except TidingsError as exc:
                return refused(call, exc, args)
            except Exception as exc:
                answer = unexpected_answer(call, exc, args)
                if fail_open is not None:
                    fallback: R = fail_open(answer, *args, **kwargs)
                    return fallback
                return answer

        return guarded

    return wrap


def raising(call: str) -> Callable[[Callable[P, R]], Callable[P, R]]:
    """Decorate a public call that returns a non-dict value: failures raise
    :class:`TidingsError` (``internal_error`` for unexpected ones)."""

    def wrap(fn: Callable[P, R]) -> Callable[P, R]:
        @functools.wraps(fn)
        def guarded(*args: P.args, **kwargs: P.kwargs) -> R:
            try:
                return fn(*args, **kwargs)
            except TidingsError:
                raise
            except Exception as exc:
                raise unexpected(call, exc, args) from exc

        return guarded

    return wrap
