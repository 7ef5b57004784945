"""What every console route shares: the hub, the templates, the poller and the form key."""

from __future__ import annotations

import json
import secrets
from dataclasses import dataclass
from typing import Any

from jinja2 import Environment, PackageLoader, select_autoescape
from starlette.requests import Request
from starlette.responses import HTMLResponse

from tidings._hub import Hub
from tidings.store.jsonfmt import utc_stamp
from tidings.store.rates import BUCKET_SECONDS, WINDOW_SECONDS
from tidings.web.charts import sparkline
from tidings.web.poller import Poller
from tidings.web.summary import Summary


def pretty(value: Any) -> str:
    """JSON for people (escaped by the template like any other text)."""
    return json.dumps(value, indent=2, ensure_ascii=False, sort_keys=False, default=str)


def templates() -> Environment:
    env = Environment(loader=PackageLoader("tidings.web", "templates"),
                      autoescape=select_autoescape(default=True, default_for_string=True))
    env.filters["pretty"] = pretty
    env.filters["stamp"] = utc_stamp
    return env


def overview_context(figures: dict[str, Any]) -> dict[str, Any]:
    rates = figures.get("rates", {})
    charts = {kind: sparkline(rates.get(kind, [])) for kind in ("events", "wakes")}
    return {"o": figures, "charts": charts, "window_minutes": WINDOW_SECONDS // 60,
            "bucket_seconds": BUCKET_SECONDS}


@dataclass
class Console:
    """One console process's shared state; routes find it as ``app.state.console``."""

    hub: Hub
    allow_actions: bool
    #: The bearer token every request must carry off loopback (``None``: open).
    token: str | None
    env: Environment
    summary: Summary
    poller: Poller
    #: A per-process key every action form carries (against cross-site posts).
    form_key: str

    @classmethod
    def over(cls, hub: Hub, *, allow_actions: bool, token: str | None) -> Console:
        env = templates()
        summary = Summary(hub.redis, hub.control)

        def read_summary() -> dict[str, Any]:
            figures = summary.read(hub.clock.now())
            html = env.get_template("_overview_live.html").render(**overview_context(figures))
            return {"at": figures["at"], "dead": figures["dead"], "html": html}

        return cls(hub, allow_actions, token, env, summary, Poller(hub.runtime, read_summary),
                   secrets.token_urlsafe(24))

    def page(self, name: str, status_code: int = 200, **context: Any) -> HTMLResponse:
        html = self.env.get_template(name).render(
            allow_actions=self.allow_actions, form_key=self.form_key,
            server_now=self.hub.clock.now(), **context)
        return HTMLResponse(html, status_code=status_code)


def console_of(request: Request) -> Console:
    console: Console = request.app.state.console
    return console
