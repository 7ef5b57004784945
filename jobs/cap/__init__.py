"""The block cap (block-cap.md).

The ruler, attention and persistent compaction, and spills to ``logs/``.
"""

from tidings.jobs.cap.attention import Lane, cap_lane
from tidings.jobs.cap.lanes import cap_attention, cap_persistent, sanitise_attention
from tidings.jobs.cap.persistent import Block
from tidings.jobs.cap.ruler import Unserialisable, measure, ruler_text
from tidings.jobs.cap.spill import ATTENTION_STEM, LOGS_DIR, Spiller, planned_attention

__all__ = [
    "ATTENTION_STEM",
    "LOGS_DIR",
    "Block",
    "Lane",
    "Spiller",
    "Unserialisable",
    "cap_attention",
    "cap_lane",
    "cap_persistent",
    "measure",
    "planned_attention",
    "ruler_text",
    "sanitise_attention",
]
