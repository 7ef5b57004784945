"""The orchestrator's turn (memory-inbox.md): prepare and finish."""
