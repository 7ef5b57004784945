"""Issue 16 acceptance 1 and 2: the web console in headless Chromium against a real
``tidings up`` (the default store, in a state directory of the test's own) and two
``tidings web`` processes (read-only and with ``--allow-actions``), on free ports.
Issue 34 acceptance 4: the console read at 800, 1400 and 1900 px wide."""

from __future__ import annotations

import os
import re
import shutil
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from selenium.common.exceptions import (
    NoAlertPresentException,
    NoSuchElementException,
    StaleElementReferenceException,
)
from selenium.webdriver.common.by import By

import tidings
from tests.support.browser import chrome, screenshot_dir
from tests.support.groups import TIMING
from tests.support.memory_repo import MemoryRepo
from tests.support.polling import wait_until
from tests.support.processes import ProcessGroup
from tests.support.redis_server import free_port
from tests.unit.test_web import _dead_letter as dead_letter
from tidings.engine.storefile import find_url
from tidings.store.rates import FLUSH_SECONDS

#: The console's latency bound (a new channel within 2 s) is TIMING's; one worker also
#: keeps the module's stack and browser (module fixtures) to one copy.
pytestmark = [pytest.mark.e2e, TIMING]

HOSTILE = "<script>window.__pwned = 1; alert('pwned')</script>"


class Stack:
    def __init__(self, tmp: Path) -> None:
        self.tmp = tmp
        self.host = f"web-{uuid.uuid4().hex[:8]}"
        env = {k: v for k, v in os.environ.items() if not k.startswith(("TIDINGS_", "LINGTAI_"))}
        state = tmp / "state"
        env.update(PYTHONUNBUFFERED="1", TIDINGS_HOST=self.host, TIDINGS_STATE_DIR=str(state))
        self.procs = ProcessGroup(env)
        up = self.procs.start("up", "--port", str(free_port()))
        up.wait_ready(timeout=30)
        self.url = find_url(state)
        self.web, _ = self._web()
        # Actions need the console's token: the login URL it prints once (interfaces.md
        # "Local trust").
        self.web_actions, self.login = self._web("--allow-actions")
        self.hub = tidings.connect(self.url)
        workdir = tmp / "agent"
        workdir.mkdir()
        self.agent = self.hub.agent(workdir, agent_id="browser-agent", host=self.host)

    def _web(self, *extra: str) -> tuple[str, str]:
        """The console's URL and, when it printed one, its login URL."""
        # No URL: `tidings web` finds the store through TIDINGS_STATE_DIR.
        proc = self.procs.start("web", "--port", str(free_port()), *extra)
        url = str(proc.wait_ready(timeout=30)["url"]).rstrip("/")
        if not extra:
            return url, ""
        login = wait_until(
            lambda: next(
                (line.split()[-1] for line in proc.stderr if "/login?token=" in line), None
            ),
            timeout=10,
            what="the login URL",
        )
        return url, str(login)

    def close(self) -> None:
        self.hub.close()
        self.hub.redis.connection_pool.disconnect()
        for proc in self.procs:
            proc.stop()
        self.procs.cleanup()


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    s = Stack(tmp_path_factory.mktemp("web"))
    try:
        yield s
    finally:
        s.close()


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    driver = chrome()
    try:
        yield driver
    finally:
        driver.quit()


def text_of(browser: Any, css: str) -> str:
    """The rendered text of the first match, read in one script (live swaps replace nodes)."""
    return str(
        browser.execute_script(
            "const el = document.querySelector(arguments[0]); return el ? el.innerText : '';", css
        )
    )


def _events_peak(chart_text: str) -> float:
    found = re.search(r"events/s.*?peak ([0-9.]+)", chart_text, re.S)
    return float(found.group(1)) if found else 0.0


def no_alert(browser: Any) -> bool:
    try:
        _ = browser.switch_to.alert
    except NoAlertPresentException:
        return True
    return False


def confirm(browser: Any, button: str) -> Any:
    """Click the first ``button`` (an action) and answer its confirmation: the alert."""

    def click() -> bool:  # a live update may replace the button between find and click
        try:
            browser.find_element(By.CSS_SELECTOR, button).click()
        except (StaleElementReferenceException, NoSuchElementException):
            return False
        return True

    wait_until(click, timeout=5, what=f"{button} clicked")
    return wait_until(
        lambda: not no_alert(browser) and browser.switch_to.alert,
        timeout=3,
        what="the confirmation",
    )


def test_overview_shows_the_hosts_queue(stack: Stack, browser: Any) -> None:
    stack.agent.publish_event("system", {"text": "warm-up"}, wait=True)
    browser.get(stack.web + "/")
    queue = f"tidings.host.{stack.host}"
    wait_until(lambda: queue in text_of(browser, "#queues"), timeout=5, what="host queue row")
    wait_until(lambda: stack.host in text_of(browser, "#hosts"), timeout=5, what="host row")
    # The live indicator shows the event stream connected.
    wait_until(lambda: "live" in text_of(browser, "#live"), timeout=5, what="live updates")
    wait_until(
        lambda: text_of(browser, "#hosts tbody tr td:nth-child(2)") == "1",
        timeout=12,
        what="the up process's worker counted",
    )
    for n in range(30):
        stack.agent.publish_event("mcp.burst", {"text": f"burst {n}"}, wait=n == 29)
    # A worker writes its counts every FLUSH_SECONDS (issue 25), so the burst may land in a
    # bucket that is already past: its peak shows it (the warm-up alone peaks at 1.0/s at most).
    wait_until(
        lambda: _events_peak(text_of(browser, ".card.chart")) > 1.0,
        timeout=FLUSH_SECONDS + 5,
        what="the events/s chart to move",
    )
    browser.save_screenshot(str(screenshot_dir() / "overview.png"))


def test_agent_page_shows_a_new_channel_within_2s_without_reload(
    stack: Stack, browser: Any
) -> None:
    browser.get(f"{stack.web}/agents/{stack.agent.agent_id}")
    wait_until(lambda: "live" in text_of(browser, "#live"), timeout=5, what="live updates")
    browser.execute_script("window.__sameDocument = 'yes';")
    channel = f"mcp.fresh{uuid.uuid4().hex[:6]}"
    result = stack.agent.publish_event(channel, {"text": "just written"}, wait=True)
    assert result["status"] == "ok"
    written = time.monotonic()
    wait_until(
        lambda: text_of(browser, f'[data-channel="{channel}"]'),
        timeout=2.0,
        interval=0.05,
        what=f"{channel} on the agent page",
    )
    assert time.monotonic() - written <= 2.0
    assert browser.execute_script("return window.__sameDocument;") == "yes"  # no reload


def test_delay_countdown_ticks(stack: Stack, browser: Any) -> None:
    stack.agent.publish_event("system", {"text": "to be delayed"}, wait=True)
    done = stack.agent.notification("delay", {"channel": "system", "seconds": 300})
    assert done["status"] == "ok", done
    browser.get(f"{stack.web}/agents/{stack.agent.agent_id}")
    first = wait_until(
        lambda: text_of(browser, "#live-delay .countdown"), timeout=5, what="countdown"
    )
    later = wait_until(
        lambda: (t := text_of(browser, "#live-delay .countdown")) != first and t,
        timeout=3,
        interval=0.1,
        what="the countdown to move",
    )

    def seconds(text: str) -> int:
        minutes, _, rest = text.partition("m ")
        return int(minutes) * 60 + int(rest.rstrip("s")) if rest else int(text.rstrip("s"))

    assert 0 < seconds(later) < seconds(first) <= 300
    browser.save_screenshot(str(screenshot_dir() / "agent.png"))
    browser.get(f"{stack.web}/agents")
    wait_until(lambda: text_of(browser, "#agents .countdown"), timeout=5, what="list countdown")
    browser.save_screenshot(str(screenshot_dir() / "agents.png"))


def test_script_payload_shows_as_text_and_never_runs(stack: Stack, browser: Any) -> None:
    stack.agent.publish(
        "mcp.hostile", {"header": HOSTILE, "priority": "high", "data": {"text": HOSTILE}}, wait=True
    )
    browser.get(f"{stack.web}/agents/{stack.agent.agent_id}")
    row = wait_until(
        lambda: text_of(browser, '[data-channel="mcp.hostile"]'),
        timeout=5,
        what="the hostile channel",
    )
    assert HOSTILE in row
    assert HOSTILE.replace("'", "\\'") in text_of(browser, "#lane") or "window.__pwned" in text_of(
        browser, "#lane"
    )
    time.sleep(0.5)  # give a script that wrongly ran the chance to raise its alert
    assert no_alert(browser)
    assert browser.execute_script("return window.__pwned === undefined;")
    browser.save_screenshot(str(screenshot_dir() / "agent-hostile.png"))


def test_ignore_works_only_with_allow_actions(stack: Stack, browser: Any) -> None:
    item = stack.agent.admit("ticket", "please ignore me")
    event_id = item["event_id"]
    page = f"/agents/{stack.agent.agent_id}"
    browser.get(stack.web + page)
    wait_until(lambda: event_id in browser.page_source, timeout=5, what="the inbox item")
    assert not browser.find_elements(By.CSS_SELECTOR, f'[data-event="{event_id}"] form')
    request = urllib.request.Request(
        f"{stack.web}{page}/inbox/{event_id}/ignore", data=b"form_key=x", method="POST"
    )
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(request, timeout=10)
    refused.value.close()
    assert refused.value.code == 403
    assert stack.agent.inbox(state="pending")[0]["event_id"] == event_id

    browser.get(stack.web_actions + page)
    assert "Sign in" in browser.page_source  # 401 without the token
    browser.get(stack.login)  # sets the session cookie
    browser.get(stack.web_actions + page)

    confirm(browser, f'[data-event="{event_id}"] form button').accept()
    wait_until(
        lambda: (
            '"status": "ok"' in text_of(browser, "#result").replace("\n", " ")
            or "ok" in text_of(browser, "h1")
        ),
        timeout=5,
        what="the action's result",
    )
    states = {i["event_id"]: i["state"] for i in stack.agent.inbox()}
    assert states[event_id] == "ignored"


def test_overview_lists_the_agents_that_need_attention(
    stack: Stack,
    browser: Any,
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    """interfaces.md "Never silent, never wrong" (issue 29): an agent whose registered memory
    repository went away is listed on the overview among the agents that need attention,
    with what that means; so is an unfinished turn."""
    root = tmp_path_factory.mktemp("attention")
    repo = MemoryRepo(root / "memory", {"MEMORY.md": "m\n"})
    workdir = root / "w"
    workdir.mkdir()
    forgetful = stack.hub.agent(
        workdir, memory_repo=repo.root, agent_id="forgetful", host=stack.host, inline=True
    )
    shutil.rmtree(repo.root)
    turn = forgetful.prepare_turn(kind="bridge")
    assert not isinstance(turn, dict), turn
    try:
        browser.get(stack.web + "/")
        row = "#attention tr[data-name='forgetful']"
        wait_until(
            lambda: "memory_unavailable" in text_of(browser, row),
            timeout=10,
            what="the memory row in the attention list",
        )
        text = text_of(browser, row)
        assert "unfinished_turn" in text and "memory repository unavailable" in text
        assert "browser-agent" not in text_of(browser, "#attention")
    finally:
        assert forgetful.finish_turn(turn)["status"] == "ok"
    browser.save_screenshot(str(screenshot_dir() / "overview-attention.png"))


#: Widths the console must read at (issue 34 acceptance 4), in CSS pixels.
WIDTHS = (800, 1400, 1900)
#: Inbox summaries as a ticketing bridge writes them: long, with long words.
SUMMARIES = (
    "Refund request from ACME Corporation for invoice 2026-0412: the customer reports that "
    "the annual subscription was charged twice in November",
    "Incident postmortem scheduled: intermittent authentication failures on the "
    "reconciliation service after Tuesday's deployment",
)

#: In one script (a live update may replace the page's nodes between two calls): the
#: words under ``arguments[0]`` that the layout put on more than one line (a word broken
#: mid-word), the table's right edge and the viewport's width, and where each button
#: ``arguments[1]`` is once scrolled to, and whether it is the topmost element at its
#: centre (not covered by another panel).
LAYOUT = """
const [table, buttons] = arguments;
const root = document.querySelector(table);
const broken = [];
for (const cell of root.querySelectorAll("th, td")) {
  const walker = document.createTreeWalker(cell, NodeFilter.SHOW_TEXT);
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    if (!node.parentElement.checkVisibility()) continue;  // a closed <details>
    for (const m of node.textContent.matchAll(/\\S+/g)) {
      const range = document.createRange();
      range.setStart(node, m.index);
      range.setEnd(node, m.index + m[0].length);
      const tops = new Set(Array.from(range.getClientRects())
        .filter((r) => r.width > 0).map((r) => Math.round(r.top)));
      if (tops.size > 1) broken.push(m[0]);
    }
  }
}
const width = document.documentElement.clientWidth;
const places = Array.from(root.querySelectorAll(buttons)).map((b) => {
  b.scrollIntoView({block: "center", inline: "nearest"});
  const r = b.getBoundingClientRect();
  const hit = document.elementFromPoint(r.left + r.width / 2, r.top + r.height / 2);
  return {inside: r.left >= 0 && r.right <= width && r.top >= 0
                  && r.bottom <= window.innerHeight && r.width > 0,
          topmost: hit === b || b.contains(hit), left: r.left, right: r.right};
});
return {broken: broken, right: root.getBoundingClientRect().right, width: width,
        buttons: places};
"""


def readable(browser: Any, table: str, width: int, button: str = "button") -> Any:
    """Assert no word of ``table`` is broken and the table fits the viewport."""
    layout = browser.execute_script(LAYOUT, table, button)
    assert layout["broken"] == [], (width, table, layout["broken"])
    assert layout["right"] <= layout["width"], (width, table, layout)
    return layout


def readable_and_clickable(browser: Any, table: str, button: str, width: int) -> int:
    """:func:`readable`, and every ``button`` is inside the viewport, uncovered, and
    clicks (its confirmation dismissed)."""
    layout = readable(browser, table, width, button)
    assert layout["buttons"], (width, table)
    for place in layout["buttons"]:
        assert place["inside"] and place["topmost"], (width, place)

    # clickable is enough: nothing is ignored or re-enqueued here
    confirm(browser, f"{table} {button}").dismiss()
    return len(layout["buttons"])


def test_the_console_reads_at_800_1400_and_1900_px(stack: Stack, browser: Any) -> None:
    # A path deep enough to be cut at the path column's widest whatever the temporary
    # directory (pytest's is longer under xdist): the table is read at its widest.
    workdir = stack.tmp / "srv" / "customer-support" / "ticketing-bridges" / "billing-agent"
    workdir.mkdir(parents=True)
    agent = stack.hub.agent(workdir, host=stack.host)  # a digest id: the name leads
    for summary in SUMMARIES:
        assert agent.admit("ticket", summary)["status"] == "ok"
    turn = agent.prepare_turn("bridge")  # claims them: the "claimed by" column is filled
    assert not isinstance(turn, dict), turn
    agent.admit("support-escalation", "Customer asks to escalate: ticket reopened 3 times")
    dead_letter(stack.hub, f"tidings.host.{stack.host}", int(time.time() * 1000))
    browser.get(stack.login)
    shots = screenshot_dir()
    try:
        for width in WIDTHS:
            browser.set_window_size(width, 1000)
            assert browser.execute_script("return window.innerWidth;") == width
            browser.get(f"{stack.web_actions}/agents/{agent.agent_id}")
            wait_until(
                lambda: len(browser.find_elements(By.CSS_SELECTOR, "#inbox button")) == 3,
                timeout=5,
                what="three inbox items with their ignore buttons",
            )
            browser.save_screenshot(str(shots / f"agent-{width}.png"))
            assert browser.find_element(By.TAG_NAME, "h1").text.startswith("billing-agent")
            assert readable_and_clickable(browser, "#inbox", "form button", width) == 3

            browser.get(f"{stack.web_actions}/dead")
            browser.save_screenshot(str(shots / f"dead-{width}.png"))
            assert readable_and_clickable(browser, "#dead", "form button", width) == 1

            browser.get(f"{stack.web_actions}/")
            store = text_of(browser, "#store")
            assert re.search(r"(valkey|redis) \d+\.\d+", store), store
            assert "AOF on · fsync everysec" in store, store
            # the unfinished turn and the dead letter (issue 29's list), the agent by name
            wait_until(
                lambda: (
                    "billing-agent" in text_of(browser, "#attention")
                    and "dead_letters" in text_of(browser, "#attention")
                ),
                timeout=10,
                what="the agents and queues that need attention",
            )
            assert "unfinished_turn" in text_of(browser, "#attention")
            browser.save_screenshot(str(shots / f"overview-{width}.png"))
            for table in ("#attention", "#hosts", "#queues"):
                readable(browser, table, width)

            browser.get(f"{stack.web_actions}/agents?q=billing")
            first = text_of(browser, "#agents tbody tr td").splitlines()
            assert first[0] == "billing-agent" and agent.agent_id in first[-1], first
            browser.save_screenshot(str(shots / f"agents-{width}.png"))
            readable(browser, "#agents", width)
    finally:
        browser.set_window_size(1400, 1000)
        agent.finish_turn(turn.turn_id)
