"""Channels (channels.md).

Names, allowlist, envelopes, channel files, mirror, flush, publish, hooks, system events and
warnings.
"""
