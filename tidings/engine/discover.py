"""Finding the store (interfaces.md, CLI "Finding the store"): the configured URL, else the
default store that a running ``tidings up`` serves from ``TIDINGS_STATE_DIR``."""

from __future__ import annotations

from tidings.engine.storefile import StoreFileError, find_url
from tidings.store.errors import NoStoreError
from tidings.store.settings import Settings


def store_url(settings: Settings) -> str:
    """The URL to connect to; :class:`NoStoreError` (naming both fixes) when there is none."""
    if settings.redis_url:
        return settings.redis_url
    try:
        url = find_url(settings.state_dir)
    except StoreFileError as exc:
        raise NoStoreError(f"not using the default store: {exc}") from None
    if url is None:
        raise NoStoreError(
            f"no store: no `tidings up` serves the default store in {settings.state_dir}. "
            "Start one with `tidings up`, or point TIDINGS_REDIS_URL / --redis-url at your "
            "Redis."
        )
    return url
