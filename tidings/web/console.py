"""What every console route shares: the hub, the templates, the poller and the form key."""

from __future__ import annotations

import json
import secrets
import threading
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import TypedDict

from jinja2 import Environment, PackageLoader, select_autoescape
from starlette.requests import Request
from starlette.responses import HTMLResponse

from tidings._hub import Hub
from tidings.inspection.attention import MEANING, AttentionRow
from tidings.inspection.overview import Overview, Summary
from tidings.inspection.store_facts import served_label
from tidings.store.jsonfmt import utc_stamp
from tidings.store.rates import BUCKET_SECONDS, WINDOW_SECONDS
from tidings.web.auth import Guard
from tidings.web.charts import Sparkline, sparkline
from tidings.web.poller import LiveSummary, Poller

#: Characters of a long id (a turn's uuid) shown in a table; the whole id is its title.
SHORT_ID = 8


def pretty(value: object) -> str:
    """JSON for people (escaped by the template like any other text)."""
    return json.dumps(value, indent=2, ensure_ascii=False, sort_keys=False, default=str)


def workdir_name(workdir: object, fallback: object = "") -> str:
    """An agent as people know it: its workdir's last component (else ``fallback``)."""
    name = PurePosixPath(str(workdir or "")).name
    return name or str(fallback)


def short_id(value: object, keep: int = SHORT_ID) -> str:
    """The first ``keep`` characters of a long id, as a short hash is shown."""
    text = str(value)
    return text if len(text) <= keep + 1 else text[:keep] + "…"


def templates() -> Environment:
    env = Environment(
        loader=PackageLoader("tidings.web", "templates"),
        autoescape=select_autoescape(default=True, default_for_string=True),
    )
    env.filters["pretty"] = pretty
    env.filters["stamp"] = utc_stamp
    env.filters["workdir_name"] = workdir_name
    env.filters["short_id"] = short_id
    return env


#: Seconds an attention list is reused by the live overview: it reads every agent's
#: counts (the status read), dearer than the overview's own figures.
ATTENTION_SECONDS = 5.0


class OverviewContext(TypedDict):
    """What the overview templates render: the figures, their charts, the window, and
    the agents and queues that need attention (with what each reason means)."""

    o: Overview
    charts: dict[str, Sparkline]
    window_minutes: int
    bucket_seconds: int
    attention: list[AttentionRow]
    meaning: dict[str, str]


def overview_context(figures: Overview, attention: list[AttentionRow]) -> OverviewContext:
    rates = figures["rates"]
    charts = {kind: sparkline(rates.get(kind, [])) for kind in ("events", "wakes")}
    return {
        "o": figures,
        "charts": charts,
        "window_minutes": WINDOW_SECONDS // 60,
        "bucket_seconds": BUCKET_SECONDS,
        "attention": attention,
        "meaning": MEANING,
    }


@dataclass
class AttentionList:
    """The status read's ``needs_attention``, reused for :data:`ATTENTION_SECONDS`."""

    hub: Hub
    seconds: float = ATTENTION_SECONDS
    _read_at: float | None = None
    _rows: list[AttentionRow] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def read(self, *, fresh: bool = False) -> list[AttentionRow]:
        now = self.hub.clock.now()
        with self._lock:
            if fresh or self._read_at is None or now - self._read_at >= self.seconds:
                self._rows = self.hub.status()["needs_attention"]
                self._read_at = now
            return self._rows


@dataclass
class Console:
    """One console process's shared state; routes find it as ``app.state.console``."""

    hub: Hub
    allow_actions: bool
    #: The token in force (``None``: open) and the sign-in state (auth.py).
    guard: Guard
    env: Environment
    summary: Summary
    attention: AttentionList
    poller: Poller
    #: A per-process key every action form carries (against cross-site posts).
    form_key: str

    @classmethod
    def over(cls, hub: Hub, *, allow_actions: bool, guard: Guard) -> Console:
        env = templates()
        summary = Summary(hub.redis, hub.control, served_label(hub.url, hub.settings.state_dir))
        attention = AttentionList(hub)

        def read_summary() -> LiveSummary:
            figures = summary.read(hub.clock.now())
            context = overview_context(figures, attention.read())
            html = env.get_template("_overview_live.html").render(**context)
            return {"at": figures["at"], "dead": figures["dead"], "html": html}

        return cls(
            hub,
            allow_actions,
            guard,
            env,
            summary,
            attention,
            Poller(hub.runtime, read_summary),
            secrets.token_urlsafe(24),
        )

    def page(self, name: str, status_code: int = 200, **context: object) -> HTMLResponse:
        html = self.env.get_template(name).render(
            allow_actions=self.allow_actions,
            form_key=self.form_key,
            signed_in=self.guard.token is not None,
            server_now=self.hub.clock.now(),
            **context,
        )
        return HTMLResponse(html, status_code=status_code)


def console_of(request: Request) -> Console:
    console: Console = request.app.state.console
    return console
