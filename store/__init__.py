"""Durable state and its schema: models, workdir files, locks, Redis keys and scripts.

The lowest layer: it imports nothing of ours.
"""
