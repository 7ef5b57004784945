"""The delay state parsed once into a frozen record (delay.md D5; issue 10's typed seams).

Every field is typed at the parse: a value of another type (or none) reads as
``None``, which D8's checks then call invalid, so a hostile file fails open at one
place instead of at each ``.get``. ``raw`` keeps the object as it was read, so a
rewrite (cancel, expiring, published) keeps every field, known or not.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import TypeGuard, TypeVar

T = TypeVar("T")


def is_int(value: object) -> TypeGuard[int]:
    """An integer that is not a boolean."""
    return isinstance(value, int) and not isinstance(value, bool)


def is_finite_number(value: object) -> TypeGuard[float]:
    """A finite int or float that is not a boolean."""
    return (is_int(value) or isinstance(value, float)) and math.isfinite(value)


def _is_str(value: object) -> TypeGuard[str]:
    return isinstance(value, str)


def _is_object(value: object) -> TypeGuard[Mapping[str, object]]:
    return isinstance(value, dict)


def _typed(
    value: Mapping[str, object], key: str, test: Callable[[object], TypeGuard[T]]
) -> T | None:
    item = value.get(key)
    return item if test(item) else None


@dataclass(frozen=True)
class DelayState:
    """One delay state object, each known field typed or ``None``."""

    raw: Mapping[str, object]
    version: int | None = None
    status: str | None = None
    request_id: str | None = None
    target: str | None = None
    requested_seconds: int | None = None
    max_seconds: int | None = None
    started_epoch: float | None = None
    deadline_epoch: float | None = None
    initial: Mapping[str, object] | None = None
    completion: Mapping[str, object] | None = None

    @classmethod
    def parse(cls, value: Mapping[str, object]) -> DelayState:
        return cls(
            raw=MappingProxyType(dict(value)),
            version=_typed(value, "version", is_int),
            status=_typed(value, "status", _is_str),
            request_id=_typed(value, "request_id", _is_str),
            target=_typed(value, "target", _is_str),
            requested_seconds=_typed(value, "requested_seconds", is_int),
            max_seconds=_typed(value, "max_seconds", is_int),
            started_epoch=_typed(value, "started_epoch", is_finite_number),
            deadline_epoch=_typed(value, "deadline_epoch", is_finite_number),
            initial=_typed(value, "initial", _is_object),
            completion=_typed(value, "completion", _is_object),
        )

    def changed(self, **fields: object) -> dict[str, object]:
        """The object to write back: every field read, with ``fields`` replaced."""
        return {**self.raw, **fields}

    @property
    def deadline(self) -> float:
        """The deadline of a state D8 found structurally valid."""
        if self.deadline_epoch is None:
            raise ValueError("a delay state without deadline_epoch has no deadline")
        return float(self.deadline_epoch)
