"""The delay state file and the alarm record (delay.md).

What is delayed, until when, and the expiry protocol.
"""
