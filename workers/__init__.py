"""dramatiq set-up: the broker factory, queue routing, actors and the worker process."""
