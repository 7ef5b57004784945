"""The narrated tour of ``tidings demo``: :mod:`.chapters` runs the chapters in order on
:mod:`.tour`; each capability's chapters have their module."""
