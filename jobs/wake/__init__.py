"""Waking the agent (channels.md C27): the wake stream and the sync tick."""
