"""The exceptions of tidings (see :mod:`tidings.store.errors` for the hierarchy).

    TidingsError (ValueError)        .reason: machine-readable
    ├── UnsafePathError              unsafe_path
    ├── LockTimeout                  lock_timeout
    ├── NoStoreError                 no_store
    ├── UnknownAgentError            unknown_agent
    └── StoreError                   store_error

Calls that return dicts answer with ``{"status": "error", "reason", "message"}``
instead of raising; calls that return other values raise these.
"""

from tidings.store.errors import (
    LockTimeout,
    NoStoreError,
    StoreError,
    TidingsError,
    UnknownAgentError,
    UnsafePathError,
)

__all__ = [
    "LockTimeout",
    "NoStoreError",
    "StoreError",
    "TidingsError",
    "UnknownAgentError",
    "UnsafePathError",
]
