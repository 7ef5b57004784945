"""The inspection read model: what an operator sees, read once for every reader.

``tidings status`` and ``hub.status()`` (:mod:`.status`), the metrics gauges (the same
status read, per scrape) and the web console (:mod:`.overview`, :mod:`.agents`,
:mod:`.agent`, and :mod:`.signatures` for its poller) read the
store's key layout here and nowhere else on the public face: ``tidings/web/`` renders
these figures and imports no key builder (an import-linter contract).
"""
