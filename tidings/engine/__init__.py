"""The default store (interfaces.md "The default store"): a real Redis-protocol engine that
``tidings up`` starts, locks and supervises in ``TIDINGS_STATE_DIR``, and the
``store.json`` every other process finds it by.

Only :mod:`tidings.engine.storefile` is imported by short-lived clients; it needs
nothing but the standard library.
"""
