"""The daemon aggregate (channels.md C30-C34).

Per-run mini-files, the control record, the aggregate view and the report.
"""
