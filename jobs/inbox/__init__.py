"""The durable inbox (memory-inbox.md M1-M11, M40-M54): admission, items and the inbox text."""
