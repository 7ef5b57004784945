"""The exceptions tidings raises.

Every exception carries a machine-readable ``reason``; calls that answer with a
dict put the same reason in the dict instead of raising.

    TidingsError (ValueError)        reason: the failing rule's reason
    ├── UnsafePathError              unsafe_path: a symlink where a directory or file must be
    ├── LockTimeout                  lock_timeout: a resource lock was not obtained in time
    ├── NoStoreError                 no_store: nothing listens at the configured Redis address
    ├── UnknownAgentError            unknown_agent: no agent registered under that id
    └── StoreError                   store_error: Redis or the file system failed underneath
"""

from __future__ import annotations


class TidingsError(ValueError):
    """Base of every tidings exception; ``reason`` is machine-readable."""

    default_reason = "error"

    def __init__(self, message: str, *, reason: str | None = None) -> None:
        super().__init__(message)
        self.reason = reason or self.default_reason
        self.message = message

    def as_result(self, **fields: object) -> dict[str, object]:
        """The error dict that dict-returning calls answer with."""
        return {"status": "error", "reason": self.reason, "message": self.message, **fields}


class UnsafePathError(TidingsError):
    default_reason = "unsafe_path"


class LockTimeout(TidingsError):
    default_reason = "lock_timeout"


class NoStoreError(TidingsError):
    default_reason = "no_store"


class UnknownAgentError(TidingsError):
    default_reason = "unknown_agent"


class StoreError(TidingsError):
    default_reason = "store_error"
