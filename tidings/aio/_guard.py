"""channels.md C52 for coroutines: what :mod:`tidings.jobs.guard` does for sync calls."""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable
from typing import ParamSpec, TypeVar

from tidings.jobs.guard import ErrorAnswer, refused, unexpected, unexpected_answer
from tidings.store.errors import TidingsError

P = ParamSpec("P")
R = TypeVar("R")


def answering(
    call: str,
) -> Callable[[Callable[P, Awaitable[R]]], Callable[P, Awaitable[R | ErrorAnswer]]]:
    """An unexpected failure of a dict-answering coroutine becomes ``internal_error`` (or
    the store's own refusal: :func:`~tidings.jobs.guard.unexpected_answer`)."""

    def wrap(fn: Callable[P, Awaitable[R]]) -> Callable[P, Awaitable[R | ErrorAnswer]]:
        @functools.wraps(fn)
        async def guarded(*args: P.args, **kwargs: P.kwargs) -> R | ErrorAnswer:
            try:
                return await fn(*args, **kwargs)
            except TidingsError as exc:
                return refused(call, exc, args)
            except Exception as exc:
                return unexpected_answer(call, exc, args)

        return guarded

    return wrap


def raising(call: str) -> Callable[[Callable[P, Awaitable[R]]], Callable[P, Awaitable[R]]]:
    """Failures of a coroutine returning another value raise :class:`TidingsError`."""

    def wrap(fn: Callable[P, Awaitable[R]]) -> Callable[P, Awaitable[R]]:
        @functools.wraps(fn)
        async def guarded(*args: P.args, **kwargs: P.kwargs) -> R:
            try:
                return await fn(*args, **kwargs)
            except TidingsError:
                raise
            except Exception as exc:
                raise unexpected(call, exc, args) from exc

        return guarded

    return wrap
