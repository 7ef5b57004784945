"""Redis failures that have a reason of their own (issues 29 and 30; interfaces.md, "Never
silent, never wrong" and "The default store").

The store said no, or went quiet: that is the store's state or the credential's, not a
failure of tidings, so no layer answers it as ``internal_error`` (jobs/guard.py).

- Redis answers a wrong user or password with ``WRONGPASS``/``NOAUTH`` (redis-py's
  :class:`~redis.exceptions.AuthenticationError`) and a command, key or channel the ACL
  user may not touch with ``NOPERM`` (:class:`~redis.exceptions.NoPermissionError`;
  inside a script, a plain error naming the user executing the script). Both are
  answers, not an absent store: :func:`refusal` makes them ``auth_failed`` or
  ``no_permission`` with one line naming the user, the refused command and the role
  that holds it (deploy/README.md, Roles), never ``no_store`` and never the advice to
  start ``tidings up``.
- A store that refuses writes (``MISCONF``), or one that takes the connection and goes
  quiet: :func:`store_fault` names it (``store_refuses_writes``, ``store_unresponsive``).

Its own module: the CLI's error types (store/errors.py) load without redis-py.
"""

from __future__ import annotations

import re
from typing import Final

import redis
from redis.exceptions import AuthenticationError, NoPermissionError, RedisError, ResponseError

from tidings.store.errors import StoreError, TidingsError

#: The reason of a store failure that is neither a refusal nor a tidings error.
STORE_ERROR = "store_error"

#: The roles of deploy/redis.conf, by ACL user, as a message names them.
ROLES: Final[dict[str, str]] = {
    "tidings": "the workers' role",
    "tidings-producer": "the producers' and orchestrators' role",
    "tidings-monitor": "the monitor role (status and health checks: counts only)",
    "tidings-admin": "the operator's role",
}
#: Who holds what a refused call needs (deploy/README.md, Roles).
HOLDERS = (
    "tidings-producer (producers, orchestrators, `tidings agents`) or tidings "
    "(workers, `tidings up`)"
)
#: Where the roles are described, for every message.
ROLES_DOC = "deploy/README.md, Roles"
#: A key no one writes: a long-running process's write check expires it (absent, so
#: nothing changes) to learn whether its user may write tidings' keys.
PREFLIGHT_KEY = "tidings:preflight"
#: The text of a refusal inside a script (Redis answers it as a plain script error).
SCRIPT_REFUSAL = "The user executing the script can't run this command"

_COMMAND = re.compile(r"run the '([^']+)' command")
_PIPELINE = re.compile(r"^Command # \d+ \((\S+)")


def user_of(client: object) -> str:
    """The ACL user ``client`` authenticates as (``default`` when it names none): a
    client's pool keeps it, a cluster client's node manager too."""
    if client is None:
        return "(the configured user)"
    for holder in (
        getattr(client, "connection_pool", None),
        getattr(client, "nodes_manager", None),
    ):
        kwargs = getattr(holder, "connection_kwargs", None)
        if isinstance(kwargs, dict):
            user = kwargs.get("username")
            return str(user) if user else "default"
    return "default"


def is_refusal(exc: BaseException) -> bool:
    """True for the store's ``NOPERM`` (a command or key the ACL user lacks)."""
    return isinstance(exc, NoPermissionError) or (
        isinstance(exc, ResponseError) and SCRIPT_REFUSAL in str(exc)
    )


def _command(text: str) -> str:
    found = _COMMAND.search(text) or _PIPELINE.search(text)
    if found:
        return f"the command {found.group(1).upper()}"
    if SCRIPT_REFUSAL in text:
        return "a command inside a tidings script"
    return "a key or channel this call needs"


def who(client: object) -> str:
    """Which user ``client`` is, the role it has and who holds the rights it lacks."""
    user = user_of(client)
    role = ROLES.get(user, "a user deploy/redis.conf does not ship")
    return f"user {user} is {role}; run this with the URL of {HOLDERS} ({ROLES_DOC})"


def no_permission(exc: BaseException, user: str) -> TidingsError:
    """The ``no_permission`` error of a ``NOPERM`` answer to ``user``."""
    role = ROLES.get(user, "a user deploy/redis.conf does not ship")
    message = (
        f"the store refused user {user} {_command(str(exc))} (NOPERM): {user} is "
        f"{role}; run this with the URL of {HOLDERS} ({ROLES_DOC})"
    )
    return TidingsError(message, reason="no_permission")


def auth_failed(url: str, user: str) -> TidingsError:
    """The ``auth_failed`` error: the store at ``url`` (password masked) answered but
    refused ``user``'s credentials."""
    return TidingsError(
        f"the store at {url} refused user {user}: wrong user or password", reason="auth_failed"
    )


def refusal(exc: BaseException, client: object, url: str | None = None) -> TidingsError | None:
    """The :class:`TidingsError` of a store refusal (``exc``, raised by ``client``), or
    ``None`` when ``exc`` is not one."""
    if not isinstance(exc, RedisError):
        return None
    user = user_of(client)
    if is_refusal(exc):
        return no_permission(exc, user)
    if isinstance(exc, AuthenticationError):
        return auth_failed(url or "configured", user)
    return None


def reason_of(exc: BaseException) -> str:
    """The reason of a failure underneath a read: a tidings error's own, a store
    refusal's (``no_permission``, ``auth_failed``), a store fault's
    (``store_unresponsive``, ``store_refuses_writes``), else ``store_error``."""
    if isinstance(exc, TidingsError):
        return exc.reason
    if is_refusal(exc):
        return "no_permission"
    if isinstance(exc, AuthenticationError):
        return "auth_failed"
    fault = store_fault(exc)
    return fault.reason if fault is not None else STORE_ERROR


def preflight(client: object, url: str) -> None:
    """Before a long-running process (``up``, ``worker``, ``scheduler``) starts its
    threads: raise ``no_permission`` (or ``auth_failed``) unless ``client``'s user may
    write tidings' keys and run its scripts, so that a monitor credential given to a
    worker is one line at start, not a log flooded with refusals."""
    try:
        client.pexpire(PREFLIGHT_KEY, 1)  # type: ignore[attr-defined]
        client.script_exists("0" * 40)  # type: ignore[attr-defined]
    except RedisError as exc:
        refused = refusal(exc, client, url)
        if refused is not None:
            raise refused from None
        raise


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
            f"({str(exc)[:120]})",
            reason="store_refuses_writes",
        )
    if isinstance(exc, redis.TimeoutError):
        return StoreError(
            f"the store did not answer in time ({exc}): its engine is hung or stopped; "
            "`tidings up` exits and its service manager restarts it",
            reason="store_unresponsive",
        )
    return None
