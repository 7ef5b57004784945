"""Redis failures that have a reason of their own (issue 30; interfaces.md, The default store).

A store that refuses writes, or one that takes the connection and goes quiet, is the
store's state, not a failure of tidings: :func:`store_fault` names it, so no layer
answers it as ``internal_error`` (jobs/guard.py). Its own module: the CLI's error
types (store/errors.py) load without redis-py.
"""

from __future__ import annotations

import redis

from tidings.store.errors import StoreError


def store_fault(exc: BaseException) -> StoreError | None:
    """The reasoned error for a Redis failure the caller did not expect, or ``None``.

    ``MISCONF`` (the engine cannot write its append-only file or snapshot: a full or
    read-only disk) answers ``store_refuses_writes``; a timeout (the engine accepted
    the connection and went quiet: hung or stopped) answers ``store_unresponsive``.
    """
    if isinstance(exc, redis.ResponseError) and str(exc).startswith("MISCONF"):
        return StoreError(
            "the store refuses writes: its engine cannot write its data to disk (full or "
            "read-only?); nothing was written, retry once the disk is fixed "
            f"({str(exc)[:120]})", reason="store_refuses_writes")
    if isinstance(exc, redis.TimeoutError):
        return StoreError(
            f"the store did not answer in time ({exc}): its engine is hung or stopped; "
            "`tidings up` exits and its service manager restarts it", reason="store_unresponsive")
    return None
