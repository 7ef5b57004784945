"""``tidings mcp``: one registered agent served over the Model Context Protocol (interfaces.md,
Plugging into agent frameworks; extra ``tidings[mcp]``).

Tools ``notification``, ``inbox`` and ``inbox_ignore``; resource
``tidings://attention`` (the stamped ``check`` result, C24) with an update on each
wake signal. Imported only by the ``mcp`` command: the core install lacks the SDK.
"""
