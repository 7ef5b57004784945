"""The agent's acts that span the capabilities below.

Dismissal, delay requests and delay expiry.
"""
