"""The block cap (block-cap.md).

The ruler, attention and persistent compaction, and spills to ``logs/``.
"""
