// tidings console: live updates over Server-Sent Events, delay countdowns, confirmations.
// Plain JavaScript; the server renders every fragment (already escaped) it swaps in.
"use strict";
(function () {
  const body = document.body;
  const skew = parseFloat(body.dataset.serverNow || "0") - Date.now() / 1000;
  const liveText = document.getElementById("live-text");
  const live = document.getElementById("live");

  function setLive(text, ok) {
    if (liveText) liveText.textContent = text;
    if (live) live.className = "live " + (ok ? "ok" : "off");
  }

  function formatSeconds(s) {
    s = Math.max(0, Math.floor(s));
    const h = Math.floor(s / 3600), m = Math.floor((s % 3600) / 60), r = s % 60;
    if (h) return h + "h " + String(m).padStart(2, "0") + "m " + String(r).padStart(2, "0") + "s";
    if (m) return m + "m " + String(r).padStart(2, "0") + "s";
    return r + "s";
  }

  function tick() {
    const now = Date.now() / 1000 + skew;
    document.querySelectorAll("[data-deadline]").forEach(function (el) {
      const left = parseFloat(el.dataset.deadline) - now;
      el.textContent = left > 0 ? formatSeconds(left) : "due";
      el.classList.toggle("due", left <= 0);
    });
  }
  tick();
  setInterval(tick, 250);

  document.addEventListener("submit", function (event) {
    const form = event.target;
    if (form.dataset && form.dataset.confirm && !window.confirm(form.dataset.confirm)) {
      event.preventDefault();
    }
  });

  let refreshing = false, again = false;
  function refreshPart() {
    const part = body.dataset.livePart;
    const target = document.getElementById("live-part");
    if (!part || !target) return;
    if (refreshing) { again = true; return; }
    refreshing = true;
    const url = new URL(window.location.href);
    url.searchParams.set("part", part);
    fetch(url, { credentials: "same-origin", headers: { Accept: "text/html" } })
      .then(function (r) { return r.ok ? r.text() : Promise.reject(r.status); })
      .then(function (html) {
        const open = Array.from(target.querySelectorAll("details[open] > summary"))
          .map(function (s) { return s.textContent; });
        target.innerHTML = html;
        target.querySelectorAll("details > summary").forEach(function (s) {
          if (open.indexOf(s.textContent) >= 0) s.parentElement.open = true;
        });
        tick();
      })
      .catch(function () {})
      .finally(function () {
        refreshing = false;
        if (again) { again = false; setTimeout(refreshPart, 200); }
      });
  }

  if (!window.EventSource) { setLive("no live updates in this browser", false); return; }
  const params = new URLSearchParams();
  if (body.dataset.watch) params.set("agents", body.dataset.watch);
  if (body.dataset.deep === "1") params.set("deep", "1");
  const source = new EventSource("/events?" + params.toString());
  source.addEventListener("open", function () { setLive("live", true); });
  source.addEventListener("error", function () { setLive("reconnecting…", false); });
  source.addEventListener("summary", function (event) {
    const data = JSON.parse(event.data);
    const target = document.getElementById("overview-live");
    if (data.error) { setLive("store unreachable", false); return; }
    setLive("live · " + data.at.slice(11, 19) + " UTC", true);
    if (target && typeof data.html === "string") target.innerHTML = data.html;
  });
  source.addEventListener("agents", function () { refreshPart(); });
  // A page left for another must let go of its stream: a browser keeps a few connections
  // per host, and pages it caches for "back" would hold theirs until the next ones stall.
  window.addEventListener("pagehide", function () { source.close(); });
  window.addEventListener("pageshow", function (event) {
    if (event.persisted) window.location.reload();
  });
})();
