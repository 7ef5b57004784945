"""Each coroutine's docstring is its sync twin's (issue 22): one text per method, so what
:class:`tidings.Hub` and :class:`tidings.Agent` document (parameters, results, reasons)
cannot drift from what ``tidings.aio`` says."""

from __future__ import annotations

import inspect


def share_docs(twin: type, source: type) -> None:
    """Give every public method of ``twin`` that has no docstring the one of the
    same-named method of ``source``, headed by a line naming it."""
    for name, member in vars(twin).items():
        if name.startswith("_") or not callable(member) or member.__doc__:
            continue
        doc = inspect.getdoc(getattr(source, name, None))
        if doc:
            member.__doc__ = f"Awaitable :meth:`{source.__name__}.{name}`.\n\n{doc}"
