"""``tidings web``: a live, read-only (unless told otherwise) console for operators.

An ASGI app (Starlette + Jinja2, served by uvicorn) over the same Redis reads as
``tidings status``: pages render what they show with pipelined reads, and one shared
poller per process feeds every open page's Server-Sent Events.
"""
