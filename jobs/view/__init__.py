"""What the agent sees (channels.md C19-C27).

Fingerprints, the coherent read, the wake mask, committed fingerprints, delivery and render.
"""
