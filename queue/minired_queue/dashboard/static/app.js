// The dashboard page: hash routes (#/, #/queue/NAME, #/queue/NAME/job/ID), live counts from the
// server-sent event stream, the open queue or job polled once a second, every write confirmed
// in the page and sent with the CSRF token the server put in the page. Each refresh builds the
// view afresh and morphs the page into it, touching only what changed (a selection survives);
// while the server cannot be reached the last view stays, marked stale.
"use strict";

const CSRF = document.querySelector('meta[name="csrf-token"]').content;
const STATES = ["wait", "prioritized", "active", "delayed", "completed", "failed"];
const POLL_MS = 1000;
const LISTED = ["wait", "grouped", "prioritized", "delayed", "waiting-children", "active", "completed", "failed", "paused"];
const PAGE_SIZES = [10, 25, 50, 100];
const HANDLERS = ["onclick", "onchange", "oninput", "onsubmit"];  // carried over by morph()

const $ = (sel) => document.querySelector(sel);
const view = $("#view");
let pollTimer = null;
let countdownTimer = null;
let charts = {};  // chart id -> uPlot, for the open queue's page (updated with setData)
let chartsOf = null;  // the queue those charts show
let lastOverview = null;
let renderedRoute = null;  // the route whose data the view shows (kept, marked stale, on errors)

// --- helpers -------------------------------------------------------------------------------
function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (value === undefined || value === null) continue;
    if (key.startsWith("on")) node[key] = value;  // a property, so morph() can carry it over
    else if (key === "text") node.textContent = value;
    else node.setAttribute(key, value);
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

// Make `current` look like `next` in place: same tags keep their nodes (and so a selection,
// a focus, a scroll position), only changed text and attributes are written. Nodes marked
// data-keep (the charts) are left as they are.
function morph(current, next) {
  if (current.nodeType !== next.nodeType || current.nodeName !== next.nodeName) {
    current.replaceWith(next);
    return;
  }
  if (current.nodeType !== Node.ELEMENT_NODE) {
    if (current.nodeValue !== next.nodeValue) current.nodeValue = next.nodeValue;
    return;
  }
  if (current.hasAttribute("data-keep") && current.id === next.id) return;
  for (const { name } of [...current.attributes]) if (!next.hasAttribute(name)) current.removeAttribute(name);
  for (const { name, value } of [...next.attributes]) if (current.getAttribute(name) !== value) current.setAttribute(name, value);
  for (const handler of HANDLERS) current[handler] = next[handler];
  // An input whose value the page holds (data-sync): once typed in, the attribute no longer
  // drives it, so set the property (not while it is being typed in). Other inputs keep theirs.
  if (current.hasAttribute("data-sync") && current !== document.activeElement
      && current.value !== next.getAttribute("value")) current.value = next.getAttribute("value");
  morphChildren(current, [...next.childNodes]);
}

function morphChildren(parent, wanted) {
  const present = [...parent.childNodes];
  wanted.forEach((child, index) => {
    if (index < present.length) morph(present[index], child);
    else parent.append(child);
  });
  present.slice(wanted.length).forEach((child) => child.remove());
}

// The view's content becomes `children`, in place.
function show(...children) {
  morphChildren(view, children.flat().filter((c) => c !== null && c !== undefined && c !== "")
    .map((c) => (c instanceof Node ? c : document.createTextNode(String(c)))));
}

const enc = encodeURIComponent;
const fmtTime = (ms) => (ms ? new Date(ms).toLocaleString() : "–");
const pretty = (value) => (value === null || value === undefined ? "–" : JSON.stringify(value, null, 2));

// A page's data for the route `asked` (the hash it was asked for): thrown away, with RouteLeft,
// once another page has been opened meanwhile. A poll of the page just left would otherwise
// draw over the page opened since, swapping its buttons under the user's pointer.
class RouteLeft extends Error {}

async function pageApi(asked, path) {
  const body = await api(path);
  if (location.hash !== asked) throw new RouteLeft();
  return body;
}

async function api(path, options = {}) {
  const response = await fetch(path, { credentials: "same-origin", ...options });
  const body = await response.json().catch(() => ({ error: response.statusText }));
  if (!response.ok) {
    // A refusal says why: an out-of-date page (the dashboard restarted) must be reloaded.
    if (body.reason === "csrf" || body.reason === "token") stalePage(body.error);
    const error = new Error(body.error || response.statusText);
    error.status = response.status;
    throw error;
  }
  return body;
}

function stalePage(text) {
  const banner = $("#stale-page");
  banner.replaceChildren(el("span", { text }), " ",
    el("button", { id: "reload", onclick: () => location.reload() }, "Reload"));
  banner.hidden = false;
}

function post(path, body) {
  return api(path, {
    method: "POST",
    headers: { "Content-Type": "application/json", "X-CSRF-Token": CSRF },
    body: JSON.stringify(body || {}),
  });
}

// What the page shows while the dashboard or Redis cannot be reached: the last data, greyed,
// with the time it was read; cleared by the next good read.
let freshAt = Date.now();
function markStale(reason) {
  view.classList.add("stale");
  const note = $("#stale-note");
  note.textContent = `${reason}: showing data from ${new Date(freshAt).toLocaleTimeString()}`;
  note.hidden = false;
}

function markFresh() {
  freshAt = Date.now();
  view.classList.remove("stale");
  $("#stale-note").hidden = true;
}

// An answer that says nothing about the page itself: no network, or Redis failing (502).
const unreachable = (error) => !error.status || error.status >= 500;

function toast(text, isError = false) {
  const box = $("#toast");
  box.textContent = text;
  box.className = isError ? "toast error" : "toast";
  box.hidden = false;
  clearTimeout(toast.timer);
  toast.timer = setTimeout(() => (box.hidden = true), 4000);
}

// Every write asks first, in the page (no browser dialog, so it works the same everywhere).
// With `typed`, the Confirm button waits until that text is typed (obliterate: the queue name).
// While it is open, focus stays in the dialog (Tab and Shift+Tab cycle through its controls)
// and goes back to what opened it when it closes.
function confirmThen(text, action, typed = null) {
  const modal = $("#confirm");
  const opener = document.activeElement;
  $("#confirm-text").textContent = text;
  const input = $("#confirm-input");
  input.value = "";
  input.hidden = typed === null;
  const yes = $("#confirm-yes"), no = $("#confirm-no");
  yes.disabled = typed !== null;
  input.oninput = () => { yes.disabled = input.value !== typed; };
  modal.hidden = false;
  (typed !== null ? input : no).focus();
  const close = () => {
    modal.hidden = true; yes.onclick = no.onclick = null; document.onkeydown = null;
    if (opener && opener.isConnected && opener !== document.body) opener.focus();
  };
  document.onkeydown = (event) => {
    if (event.key === "Escape") close();
    else if (event.key === "Tab") trapFocus(modal, event);
  };
  yes.onclick = async () => {
    close();
    try { await action(); refresh(); } catch (error) { toast(error.message, true); }
  };
  no.onclick = close;
}

function trapFocus(box, event) {
  const stops = [...box.querySelectorAll("button, input")].filter((e) => !e.hidden && !e.disabled);
  if (!stops.length) return;
  const at = stops.indexOf(document.activeElement);
  const next = event.shiftKey ? (at <= 0 ? stops.length - 1 : at - 1) : (at === -1 || at === stops.length - 1 ? 0 : at + 1);
  event.preventDefault();
  stops[next].focus();
}

// --- live counts -------------------------------------------------------------------------------
function connectStream() {
  const source = new EventSource("api/stream");
  source.onopen = () => { $("#live").textContent = "live"; $("#live").className = "live on"; };
  source.onerror = () => {
    $("#live").textContent = "reconnecting…"; $("#live").className = "live";
    if (route().page === "overview") markStale("the dashboard is unreachable");
  };
  source.onmessage = (message) => {
    const payload = JSON.parse(message.data);
    if (payload.error) {
      $("#live").textContent = payload.error;
      if (route().page === "overview") markStale(payload.error);
      return;
    }
    $("#live").textContent = "live"; $("#live").className = "live on";
    lastOverview = payload.overview;
    renderServer(payload.server);
    if (route().page === "overview") { renderOverview(payload.overview); markFresh(); }
  };
}

function renderServer(server) {
  if (!server) return;
  const facts = [["backend", server.minired ? "minired" : `Redis ${server.redis_version}`],
    ["clients", server.connected_clients], ["memory", server.used_memory_human],
    ["commands/s", server.ops_per_sec]];
  if (server.minired) facts.push(["clock", new Date(server.clock_ms).toISOString()]);
  $("#server").hidden = false;
  $("#server-facts").replaceChildren(...facts.flatMap(([k, v]) => [el("dt", { text: k }),
    el("dd", { id: `server-${k.replace(/\W/g, "")}`, text: v ?? "–" })]));
  $("#advance-form").hidden = !server.time_control;
}

$("#advance-form").addEventListener("submit", (event) => {
  event.preventDefault();
  const ms = parseInt($("#advance-ms").value, 10);
  confirmThen(`Advance the server's clock by ${ms} ms? Locks, delays and TTLs move with it.`,
    () => post("api/server/advance", { ms }).then((r) => toast(`clock now ${new Date(r.clock_ms).toISOString()}`)));
});

// --- pages ----------------------------------------------------------------------------------------
function route() {
  const parts = location.hash.replace(/^#\/?/, "").split("/").map(decodeURIComponent);
  if (parts[0] === "queue" && parts[1] && parts[2] === "job" && parts[3]) {
    return { page: "job", queue: parts[1], job: parts.slice(3).join("/") };
  }
  if (parts[0] === "queue" && parts[1]) return { page: "queue", queue: parts[1] };
  return { page: "overview" };
}

function countsRow(counts) {
  return STATES.map((s) => el("td", { class: `num state-${s}`, "data-state": s, text: counts[s] ?? 0 }));
}

function renderOverview(overview) {
  if (!overview) { show(el("p", { text: "loading…" })); return; }
  const rows = overview.queues.map((q) => el("tr", { id: `queue-${q.name}` },
    el("td", {}, el("a", { href: `#/queue/${enc(q.name)}`, text: q.name })),
    countsRow(q.counts),
    el("td", { class: "paused", text: q.paused ? "paused" : "" })));
  show(el("h1", { text: "Queues" }),
    overview.queues.length ? el("div", { class: "scroll" }, el("table", { id: "queues" },
      el("thead", {}, el("tr", {}, el("th", { text: "queue" }), STATES.map((s) => el("th", { class: "num", text: s })),
        el("th", { text: "" }))),
      el("tbody", {}, rows))) : el("p", { text: "No queues yet." }));
}

// A Y axis label short enough for the axis: 12,500 -> "12.5k", 3,000,000 -> "3M".
function yLabel(value) {
  const size = Math.abs(value);
  for (const [scale, suffix] of [[1e9, "G"], [1e6, "M"], [1e3, "k"]]) {
    if (size >= scale) return `${+(value / scale).toFixed(size >= 100 * scale ? 0 : 1)}${suffix}`;
  }
  return `${+value.toFixed(2)}`;
}

// A duration for people: 950 ms, 14 s, 2.5 min, 3 h (and past the histogram's last bound, "> 60 s").
function fmtDuration(ms, top = Infinity) {
  if (ms === null || ms === undefined) return "–";
  if (ms > top) return `> ${fmtDuration(top)}`;
  for (const [scale, unit] of [[3600e3, "h"], [60e3, "min"], [1e3, "s"]]) {
    if (Math.abs(ms) >= scale) return `${+(ms / scale).toFixed(ms >= 10 * scale ? 0 : 1)} ${unit}`;
  }
  return `${+ms.toFixed(ms < 10 ? 1 : 0)} ms`;
}

// A chart is made once per queue page, then only given new data (no flicker, no rebuild).
function chart(title, series, data, id, yValues = yLabel) {
  if (charts[id] && charts[id].root.isConnected) {
    charts[id].setData(data);
    return el("div", { class: "chart", id, "data-keep": "" });
  }
  if (charts[id]) charts[id].destroy();
  const box = el("div", { class: "chart", id, "data-keep": "" });
  // Two side by side on a wide screen, one a row on a phone's.
  const width = Math.min(560, view.clientWidth < 640 ? view.clientWidth - 12 : view.clientWidth / 2 - 30);
  // Points too: a minute with data between empty ones is a point, not a line.
  const shown = series.map((s) => ({ ...s, points: { show: true, size: 4 }, spanGaps: false }));
  charts[id] = new uPlot({ title, width, height: 180, series: [{}, ...shown],
    axes: [{}, { size: 60, values: (u, splits) => splits.map(yValues) }], scales: { x: { time: true } } }, data, box);
  return box;
}

function dropCharts() {
  Object.values(charts).forEach((c) => c.destroy());
  charts = {};
  chartsOf = null;
}

function renderCharts(name, history) {
  if (chartsOf !== name) { dropCharts(); chartsOf = name; }
  const s = history.series;
  return el("div", { class: "charts" },
    chart("jobs per minute", [{ label: "completed", stroke: "#2a7" }, { label: "failed", stroke: "#d33" }],
      [s.minute, s.completed, s.failed], "chart-throughput"),
    latencyChart(history),
    chart("ready to run (wait + prioritized)", [{ label: "jobs", stroke: "#555" }],
      [s.minute, s.waiting], "chart-waiting"));
}

// The percentiles are histogram bucket upper bounds: "p95 ≤ 30 s" is what the buckets know
// (95% of that minute's attempts took at most 30 s), so that is how the chart says it.
function latencyChart(history) {
  const s = history.series;
  const top = history.top_bound_ms;
  const bound = (label, stroke) => ({ label: `${label} ≤`, stroke, value: (u, v) => fmtDuration(v, top) });
  return chart("processing time (bucket upper bounds)", [bound("p50", "#27c"), bound("p95", "#c72"), bound("p99", "#a2a")],
    [s.minute, s.p50_ms, s.p95_ms, s.p99_ms], "chart-latency", (v) => fmtDuration(v, top));
}

function lockCell(job, fetchedAt) {
  const cell = el("td", { class: "num lock", "data-ttl": job.lock_ttl_ms, "data-at": fetchedAt });
  cell.textContent = lockText(job.lock_ttl_ms);
  return cell;
}

function lockText(ttl) {
  if (ttl === -2) return "expired: stalled";
  if (ttl === -1) return "no expiry";
  return `${(Math.max(0, ttl) / 1000).toFixed(1)} s`;
}

function tickLocks() {
  const now = Date.now();
  document.querySelectorAll("td.lock").forEach((cell) => {
    const ttl = parseInt(cell.dataset.ttl, 10);
    if (ttl < 0) return;
    const left = ttl - (now - parseInt(cell.dataset.at, 10));
    cell.textContent = left > 0 ? lockText(left) : "expired: stalled";
  });
}

function jobLink(queue, id) {
  return el("a", { href: `#/queue/${enc(queue)}/job/${enc(id)}`, text: id });
}

// What the queue page's job list shows: kept while the page is open, reset on another queue.
const list = { queue: null, state: null, page: 1, size: 25, name: "", order: "newest", selected: new Set() };

function listFor(name, counts) {
  if (list.queue !== name) {
    Object.assign(list, { queue: name, state: null, page: 1, name: "", order: "newest" });
    list.selected.clear();
  }
  // Until one is picked, the list opens on the failed jobs if any, else on those waiting.
  return list.state || (counts.failed ? "failed" : "wait");
}

function pickState(state) {
  Object.assign(list, { state, page: 1, name: "" });  // a name filter is for one tab
  list.selected.clear();
  refresh();
}

// One write from the page: confirmed first, a message after (what it did).
function act(question, path, body, done) {
  confirmThen(question, () => post(path, body).then((reply) => { list.selected.clear(); toast(done(reply)); }));
}

const when = (iso) => (iso ? iso.replace("T", " ").replace(/\.\d+Z$/, " UTC") : "–");

function jobRow(name, state, j) {
  const on = `?queue=${enc(name)}`;
  const buttons = [];
  if (state === "delayed") {
    buttons.push(el("button", { class: "promote", id: `promote-${j.id}`,
      onclick: () => act(`Run delayed job ${j.id} now?`, `api/promote${on}&id=${enc(j.id)}`, {},
        (r) => (r.promoted ? `job ${j.id} is ready to run` : `job ${j.id} was no longer delayed`)) }, "Promote"));
  }
  if (state === "failed" || state === "completed") {
    buttons.push(el("button", { class: "retry", id: `retry-${j.id}`,
      onclick: () => act(`Retry job ${j.id}?`, `api/retry${on}`, { ids: [j.id], state },
        (r) => (r.retried ? `job ${j.id} is back in wait` : `job ${j.id} was not ${state} any more`)) }, "Retry"));
  }
  if (state !== "active") {
    buttons.push(el("button", { class: "remove danger", id: `remove-${j.id}`,
      onclick: () => act(`Remove job ${j.id} for good?`, `api/remove${on}&id=${enc(j.id)}`, {},
        (r) => (r.removed ? `job ${j.id} removed` : `job ${j.id} could not be removed (active?)`)) }, "Remove"));
  }
  const time = state === "delayed" ? when(j.due)
    : fmtTime(state === "completed" || state === "failed" ? j.finished_on : state === "active" ? j.processed_on : j.timestamp);
  return el("tr", { id: `${state}-${j.id}` },
    el("td", {}, state === "active" ? "" : el("input", { type: "checkbox", class: "pick", "data-id": j.id,
      "aria-label": `select ${j.id}`, checked: list.selected.has(j.id) ? "" : null,
      onchange: (event) => { event.target.checked ? list.selected.add(j.id) : list.selected.delete(j.id); refresh(); } })),
    el("td", { class: "job-id" }, jobLink(name, j.id)), el("td", { text: j.name }),
    el("td", { class: "num", text: `${j.attempts_made}/${j.max_attempts}` }),
    el("td", { class: "when", text: time }),
    el("td", { class: "reason", text: j.failed_reason || "" }),
    el("td", { class: "row-actions" }, buttons));
}

function jobBrowser(name, q, page) {
  const state = page.state;
  const on = `?queue=${enc(name)}`;
  // A tab counts what it lists: wait's count includes the grouped jobs, listed apart.
  const inWaitList = (q.counts.wait ?? 0) - (q.counts.grouped ?? 0);
  const tabs = LISTED.map((s) => el("button", { id: `tab-${s}`, class: s === state ? "tab on" : "tab",
    onclick: () => pickState(s) }, `${s} ${s === "paused" ? (q.paused ? inWaitList : 0) : s === "wait" ? inWaitList : (q.counts[s] ?? 0)}`));
  const setList = (changes) => { Object.assign(list, changes); refresh(); };
  const controls = el("div", { class: "controls" },
    el("form", { id: "find-form", onsubmit: (event) => {
      event.preventDefault();
      const id = $("#find-id").value.trim();
      if (id) location.hash = `#/queue/${enc(name)}/job/${enc(id)}`;
    } }, el("input", { id: "find-id", type: "search", placeholder: "job id", "aria-label": "find a job by id" }),
    el("button", { type: "submit", id: "find-button" }, "Find")),
    el("input", { id: "filter-name", type: "search", placeholder: "filter by name", value: list.name, "data-sync": "",
      "aria-label": "filter by job name", oninput: (event) => setList({ name: event.target.value, page: 1 }) }),
    el("select", { id: "order", "aria-label": "order", disabled: state === "prioritized" || state === "grouped" ? "" : null,
      title: state === "prioritized" || state === "grouped" ? `${state} jobs are listed in the order they will run` : null, onchange: (event) => setList({ order: event.target.value, page: 1 }) },
      [["newest", "newest first"], ["oldest", "oldest first"]].map(([value, label]) =>
        el("option", { value, selected: list.order === value ? "" : null }, label))),
    el("select", { id: "page-size", "aria-label": "page size", onchange: (event) => setList({ size: +event.target.value, page: 1 }) },
      PAGE_SIZES.map((n) => el("option", { value: n, selected: list.size === n ? "" : null }, `${n} per page`))));
  const shown = page.jobs.length;
  const first = (page.page - 1) * page.size;
  const info = page.matched === page.total
    ? `${shown ? `${first + 1}–${first + shown} of ` : ""}${page.total} ${state} job(s) · page ${page.page} of ${page.pages}`
    : `${page.matched} of the ${page.looked_at} ${list.order} ${state} jobs match · page ${page.page} of ${page.pages}`;
  const pager = el("div", { class: "pager" },
    el("button", { id: "page-prev", disabled: page.page > 1 ? null : "", onclick: () => setList({ page: page.page - 1 }) }, "‹ Prev"),
    el("span", { id: "page-info", text: info }),
    el("button", { id: "page-next", disabled: page.page < page.pages ? null : "", onclick: () => setList({ page: page.page + 1 }) }, "Next ›"));
  const selected = [...list.selected];
  const bulk = el("div", { class: "bulk" },
    el("span", { id: "selected-count", class: "muted", text: `${selected.length} selected` }),
    state === "failed" || state === "completed" ? el("button", { id: "bulk-retry", disabled: selected.length ? null : "",
      onclick: () => act(`Retry the ${selected.length} selected job(s)?`, `api/retry${on}`, { ids: selected, state },
        (r) => `${r.retried} job(s) back in wait`) }, "Retry selected") : "",
    state !== "active" ? el("button", { id: "bulk-remove", class: "danger", disabled: selected.length ? null : "",
      onclick: () => act(`Remove the ${selected.length} selected job(s) for good?`, `api/remove${on}`, { ids: selected },
        (r) => `${r.removed.length} job(s) removed`) }, "Remove selected") : "");
  const pickAll = state === "active" ? "" : el("input", { type: "checkbox", id: "pick-all", "aria-label": "select the page",
    checked: shown && page.jobs.every((j) => list.selected.has(j.id)) ? "" : null,
    onchange: (event) => { page.jobs.forEach((j) => (event.target.checked ? list.selected.add(j.id) : list.selected.delete(j.id))); refresh(); } });
  const timeHead = { delayed: "runs at", completed: "finished", failed: "failed at", active: "started" }[state] || "added";
  return el("section", { id: "jobs-section" },
    el("h2", { text: "Jobs" }), el("div", { class: "tabs", role: "tablist" }, tabs), controls,
    state === "paused" && !q.paused ? el("p", { class: "muted", text: "The queue is not paused: its ready jobs are under wait." }) : "",
    state === "wait" && q.counts.grouped ? el("p", { class: "muted", id: "grouped-note", text: `${q.counts.grouped} grouped job(s) are ready too: they wait in their groups' lines, listed under grouped.` }) : "",
    page.cut ? el("p", { id: "cut-note", class: "note", text: `The name filter looked at the ${page.looked_at} ${list.order} of ${page.total} jobs only.` }) : "",
    bulk,
    shown ? el("div", { class: "scroll" }, el("table", { id: "jobs" }, el("thead", {}, el("tr", {},
      el("th", {}, pickAll), ["job", "name", "attempts", timeHead, "reason", ""].map((h) => el("th", { text: h })))),
    el("tbody", {}, page.jobs.map((j) => jobRow(name, state, j)))))
      : el("p", { class: "muted", id: "jobs-empty", text: list.name ? "No job matches." : `No ${state} job.` }),
    pager);
}

function workersTable(name, workers) {
  if (!workers.length) return el("p", { class: "muted", id: "workers-none", text: "No live worker (none has sent a heartbeat within its lock TTL)." });
  return el("div", { class: "scroll" }, el("table", { id: "workers" }, el("thead", {}, el("tr", {},
    ["worker", "host", "pid", "started", "last heartbeat", "busy", "running"].map((h) => el("th", { text: h })))),
  el("tbody", {}, workers.map((w) => el("tr", { id: `worker-${w.id}` },
    el("td", { class: "mono", text: w.id }), el("td", { text: w.host }), el("td", { text: w.pid }),
    el("td", { text: fmtTime(w.started) }), el("td", { class: "heartbeat", text: fmtTime(w.heartbeat) }),
    el("td", { class: "num", text: `${w.jobs.length}/${w.concurrency}` }),
    el("td", { class: "running" }, w.jobs.flatMap((id, i) => [i ? ", " : "", jobLink(name, id)])))))));
}

function repeatablesTable(repeatables) {
  if (!repeatables.length) return el("p", { class: "muted", text: "No repeatable job." });
  const schedule = (r) => (r.cron ? `cron ${r.cron} (${r.tz})` : `every ${r.every_ms / 1000} s`);
  return el("div", { class: "scroll" }, el("table", { id: "repeatables" }, el("thead", {}, el("tr", {},
    ["key", "name", "schedule", "next run", "last run", "made"].map((h) => el("th", { text: h })))),
  el("tbody", {}, repeatables.map((r) => el("tr", { id: `repeat-${r.key}` },
    el("td", { text: r.key }), el("td", { text: r.name }), el("td", { text: schedule(r) }),
    el("td", { class: "next-run", text: r.next_run || "ended" }), el("td", { text: r.last_run || "–" }),
    el("td", { class: "num", text: r.limit ? `${r.count}/${r.limit}` : r.count }))))));
}

function queueActions(name, q) {
  const on = `?queue=${enc(name)}`;
  return el("div", { class: "panel", id: "queue-actions" },
    el("h2", { text: "Queue actions" }),
    el("form", { id: "clean-form", class: "inline", onsubmit: (event) => {
      event.preventDefault();
      const state = $("#clean-state").value;
      const age = Math.round(parseFloat($("#clean-age").value || "0") * 60000);
      act(`Delete the ${state} jobs of ${name} finished more than ${$("#clean-age").value || 0} min ago?`,
        `api/clean${on}`, { state, age_ms: age }, (r) => `${r.removed} ${state} job(s) deleted`);
    } }, el("label", {}, "Clean ",
      el("select", { id: "clean-state", "aria-label": "state to clean" },
        el("option", { value: "completed" }, "completed"), el("option", { value: "failed" }, "failed"))),
    el("label", {}, " older than ", el("input", { id: "clean-age", type: "number", min: "0", step: "any", value: "60" }), " min "),
    el("button", { type: "submit", id: "clean-button" }, "Clean")),
    el("p", { class: "actions" },
      el("button", { id: "drain-button", class: "danger",
        onclick: () => act(`Delete every waiting, prioritized and delayed job of ${name}? Active jobs finish.`,
          `api/drain${on}`, { delayed: true }, (r) => `${r.removed} job(s) drained`) }, "Drain"),
      el("button", { id: "obliterate-button", class: "danger",
        onclick: () => confirmThen(`Delete queue ${name} entirely: its jobs, repeatables, settings, metrics and history. ` +
          `Type the queue's name to confirm.`, () => post(`api/obliterate${on}`, { confirm: name })
          .then((r) => { toast(`queue ${name} obliterated (${r.removed} jobs)`); location.hash = "#/"; }), name) }, "Obliterate")));
}

// A stream entry's id starts with the server time (ms) it was added at.
const streamTime = (id) => fmtTime(parseInt(id, 10));

function recoveredList(name, q) {
  const items = q.recovered.slice().reverse().map((e) => el("li", {}, jobLink(name, e.jobId),
    el("span", { class: "muted", text: ` recovered by the sweep at ${streamTime(e.id)}` })));
  return el("div", {}, el("h2", { text: "Recovered by the sweep" }),
    el("p", { class: "muted", id: "recovered-scope", text: `Stalled jobs in the last ${q.recovered_looked_at} events.` }),
    items.length ? el("ul", { id: "recovered" }, items) : el("p", { class: "muted", id: "recovered-none", text: "None." }));
}

// The events list: newest first, of one type or all, EVENTS_STEP at a time ("show more").
const EVENTS_STEP = 20;
const eventsShown = { queue: null, type: "", count: EVENTS_STEP };

function eventsList(name, events) {
  if (eventsShown.queue !== name) Object.assign(eventsShown, { queue: name, type: "", count: EVENTS_STEP });
  const types = [...new Set(events.map((e) => e.event))].sort();
  if (eventsShown.type && !types.includes(eventsShown.type)) types.push(eventsShown.type);
  const matching = events.filter((e) => !eventsShown.type || e.event === eventsShown.type).reverse();
  const shown = matching.slice(0, eventsShown.count);
  const filter = el("select", { id: "events-type", "aria-label": "event type",
    onchange: (event) => { Object.assign(eventsShown, { type: event.target.value, count: EVENTS_STEP }); refresh(); } },
  el("option", { value: "", selected: eventsShown.type ? null : "" }, "every type"),
  types.map((t) => el("option", { value: t, selected: t === eventsShown.type ? "" : null }, t)));
  return el("div", {}, el("h2", { text: "Events" }),
    el("p", { class: "muted" }, el("label", {}, "Show ", filter),
      ` ${shown.length} of ${matching.length} (the last ${events.length} events)`),
    shown.length ? el("ul", { id: "events" }, shown.map((e) => el("li", { "data-event": e.event },
      el("time", { class: "muted", text: streamTime(e.id) }), " ", el("code", { text: e.event }), " ",
      e.jobId ? jobLink(name, e.jobId) : "", " ",
      el("span", { class: "muted", text: Object.entries(e).filter(([k]) => !["id", "event", "jobId"].includes(k))
        .map(([k, v]) => `${k}=${v}`).join(" ") }))))
      : el("p", { class: "muted", id: "events-none", text: "None." }),
    matching.length > shown.length ? el("button", { id: "events-more",
      onclick: () => { eventsShown.count += EVENTS_STEP; refresh(); } }, "Show more") : "");
}

async function renderQueue(name, asked) {
  const jobsPath = (state) => `api/jobs?queue=${enc(name)}&state=${state}&page=${list.page}&size=${list.size}` +
    `&order=${list.order}&name=${enc(list.name)}`;
  const guess = listFor(name, (lastOverview?.queues.find((x) => x.name === name) || { counts: {} }).counts);
  let [q, history, page] = await Promise.all([pageApi(asked, `api/queue?name=${enc(name)}`),
    pageApi(asked, `api/history?name=${enc(name)}`), pageApi(asked, jobsPath(guess))]);
  const state = listFor(name, q.counts);
  if (state !== guess) page = await pageApi(asked, jobsPath(state));  // the overview's counts were older
  if (page.page > page.pages && list.page > 1) { list.page = page.pages; return renderQueue(name, asked); }
  const fetchedAt = Date.now();
  const on = `?queue=${enc(name)}`;
  const pause = el("button", { id: "pause-button",
    onclick: () => confirmThen(`${q.paused ? "Resume" : "Pause"} queue ${name}?`,
      () => post(`api/pause${on}`, { paused: !q.paused })) }, q.paused ? "Resume" : "Pause");
  const retryAll = el("button", { id: "retry-all", class: "danger", disabled: q.counts.failed ? null : "",
    onclick: () => confirmThen(`Retry all ${q.counts.failed} failed jobs of ${name}?`,
      () => post(`api/retry${on}`, { ids: null }).then((r) => toast(`${r.retried} job(s) back to wait`))) },
  "Retry all failed");
  const active = q.active.map((j) => el("tr", { id: `active-${j.job.id}`, class: j.lock_ttl_ms === -2 ? "stalled" : "" },
    el("td", {}, jobLink(name, j.job.id)), el("td", { text: j.job.name }), el("td", { class: "mono", text: j.worker || "–" }),
    el("td", { class: "num", text: `${j.attempt}/${j.job.max_attempts}` }), lockCell(j, fetchedAt),
    el("td", { text: j.progress === null ? "" : JSON.stringify(j.progress) })));
  const settings = Object.entries(q.settings);
  show(
    el("p", {}, el("a", { href: "#/", text: "← all queues" })),
    el("h1", {}, `Queue ${name} `, q.paused ? el("span", { class: "badge", text: "paused" }) : ""),
    el("div", { class: "scroll" }, el("table", { id: "counts" }, el("thead", {}, el("tr", {}, STATES.map((s) => el("th", { class: "num", text: s })))),
      el("tbody", {}, el("tr", {}, countsRow(q.counts))))),
    el("p", { class: "actions" }, pause, retryAll),
    q.demo ? el("p", { id: "demo-effects", class: "panel" },
      `Crash demo: ${q.demo.jobs} jobs applied their effect; with the dedup marker `,
      el("strong", { text: `${q.demo.guarded} effects` }),
      ` (${q.demo.guarded === q.demo.jobs ? "exactly once each" : "NOT once each"}), without it ${q.demo.unguarded}` +
      ` (${q.demo.unguarded - q.demo.jobs} duplicates from redeliveries).`) : "",
    el("p", { class: "muted" }, `Totals: ${Object.entries(q.metrics).filter(([k]) => !k.startsWith("ms_"))
      .map(([k, v]) => `${k} ${v}`).join(", ") || "none yet"}`),
    jobBrowser(name, q, page),
    el("h2", { text: `Active (${q.counts.active})` }),
    q.counts.active > q.active.length ? el("p", { class: "note", id: "active-cut",
      text: `Showing ${q.active.length} of ${q.counts.active}: the Jobs list below pages through them all.` }) : "",
    active.length ? el("div", { class: "scroll" }, el("table", { id: "active" }, el("thead", {}, el("tr", {},
      ["job", "name", "worker", "attempt", "lock TTL", "progress"].map((h) => el("th", { text: h })))),
    el("tbody", {}, active))) : el("p", { class: "muted", text: "No job is running." }),
    el("h2", { text: `Workers (${q.workers.length})` }), workersTable(name, q.workers),
    renderCharts(name, history),
    el("div", { class: "columns" },
      el("div", {}, el("h2", { text: "Repeatable jobs" }), repeatablesTable(q.repeatables)),
      el("div", {}, el("h2", { text: "Settings" }), settings.length
        ? el("dl", { class: "facts", id: "settings" }, settings.flatMap(([k, v]) => [el("dt", { text: k }), el("dd", { text: v })]))
        : el("p", { class: "muted", text: "None." }))),
    queueActions(name, q),
    el("div", { class: "columns" }, recoveredList(name, q), eventsList(name, q.events)));
  // A checkbox the user ticked keeps its own state: make every one say what the list holds.
  document.querySelectorAll("input.pick").forEach((box) => { box.checked = list.selected.has(box.dataset.id); });
}

// attemptsStarted counts deliveries, attemptsMade the attempts that ended in an error
// (PROTOCOL.md): a job that completed first time was run once, none failed.
function attemptsText(job) {
  const runs = job.attempts_started;
  return `run ${runs} time${runs === 1 ? "" : "s"}, ${job.attempts_made} failed (at most ${job.max_attempts} attempt${job.max_attempts === 1 ? "" : "s"})`;
}

async function renderJob(name, id, asked) {
  const on = `?queue=${enc(name)}`;
  const job = await pageApi(asked, `api/job${on}&id=${enc(id)}`);
  const fact = (k, v, attrs = {}) => [el("dt", { text: k }), el("dd", attrs, v ?? "–")];
  const marker = (m) => (m ? `${m.key} = ${m.value ?? "(gone)"}${m.ttl_ms > 0 ? ` (expires in ${fmtDuration(m.ttl_ms)})` : ""}` : "–");
  const actions = [];
  if (job.state === "delayed") {
    actions.push(el("button", { id: "job-promote", onclick: () => confirmThen(`Run delayed job ${id} now?`,
      () => post(`api/promote${on}&id=${enc(id)}`).then(() => toast(`job ${id} is ready to run`))) }, "Promote"));
  }
  if (job.state === "failed" || job.state === "completed") {
    actions.push(el("button", { id: "job-retry", onclick: () => confirmThen(`Retry job ${id}?`,
      () => post(`api/retry${on}`, { ids: [id], state: job.state }).then(() => toast(`job ${id} is back in wait`))) }, "Retry"));
  }
  if (job.state !== "active") {
    actions.push(el("button", { id: "job-remove", class: "danger", onclick: () => confirmThen(`Remove job ${id} for good?`,
      () => post(`api/remove${on}&id=${enc(id)}`).then(() => { toast(`job ${id} removed`); location.hash = `#/queue/${enc(name)}`; })) }, "Remove"));
  }
  const logs = job.logs;
  show(
    el("p", {}, el("a", { href: `#/queue/${enc(name)}`, text: `← queue ${name}` })),
    el("h1", {}, `Job ${id} `, el("span", { class: `badge state-${job.state}`, id: "job-state", text: job.state || "unknown" })),
    el("p", { class: "actions" }, actions),
    el("dl", { class: "facts" },
      fact("name", job.name || "–"), fact("added", fmtTime(job.timestamp)),
      job.due ? fact("runs at", when(job.due), { id: "job-due" }) : [],
      fact("attempts", attemptsText(job), { id: "job-attempts" }),
      fact("stalls", job.stalled_counter), fact("priority", job.priority || "none"),
      fact("processed", fmtTime(job.processed_on)), fact("finished", fmtTime(job.finished_on)),
      fact("held by", job.locked_by), fact("lock", marker(job.lock)),
      fact("dedup marker", marker(job.dedup), { id: "job-dedup" })),
    el("h2", { text: "Data" }), el("pre", { id: "job-data", text: pretty(job.data) }),
    el("h2", { text: "Progress" }), el("pre", { id: "job-progress", text: pretty(job.progress) }),
    el("h2", { text: "Result" }), el("pre", { id: "job-result", text: pretty(job.result) }),
    el("h2", { text: "Error" }),
    el("pre", { id: "job-error", class: job.failed_reason ? "error" : "", text: job.failed_reason || "–" }),
    job.stacktrace ? el("pre", { id: "job-stacktrace", class: "trace", text: job.stacktrace }) : "",
    el("h2", { text: `Attempts that failed (${job.errors.length})` }),
    job.errors.length ? el("div", { class: "scroll" }, el("table", { id: "job-errors" }, el("thead", {}, el("tr", {},
      ["attempt", "at", "error"].map((h) => el("th", { text: h })))),
    el("tbody", {}, job.errors.map((e) => el("tr", {}, el("td", { class: "num", text: e.attempt }),
      el("td", { text: fmtTime(e.at) }), el("td", { class: "reason", text: e.reason }))))))
      : el("p", { class: "muted", text: "None." }),
    el("h2", { text: `Log (${logs.total} line${logs.total === 1 ? "" : "s"}${logs.total > logs.lines.length ? `, the last ${logs.lines.length} shown` : ""})` }),
    logs.lines.length ? el("pre", { id: "job-logs", text: logs.lines.join("\n") })
      : el("p", { class: "muted", id: "job-logs-none", text: "Nothing logged (job.log(line) in the handler)." }),
    el("h2", { text: "Effect markers" }),
    job.effects.length ? el("ul", { id: "job-effects" }, job.effects.map((m) => el("li", { text: marker(m) })))
      : el("p", { class: "muted", text: "None: no guarded effect applied (or their markers expired)." }));
}

async function refresh() {
  const r = route();
  const asked = location.hash;
  try {
    if (r.page === "overview") renderOverview(lastOverview || await pageApi(asked, "api/overview"));
    else if (r.page === "queue") await renderQueue(r.queue, asked);
    else await renderJob(r.queue, r.job, asked);
    renderedRoute = asked;
    markFresh();
  } catch (error) {
    if (error instanceof RouteLeft) return;  // (the page now open draws itself)
    if (unreachable(error) && renderedRoute === location.hash) markStale(error.message);
    else { dropCharts(); show(el("p", { class: "error", id: "page-error", text: error.message })); }
  }
}

function onRoute() {
  clearInterval(pollTimer);
  dropCharts();
  markFresh();
  if (renderedRoute !== location.hash) { renderedRoute = null; show(el("p", { text: "loading…" })); }
  refresh();
  // The overview follows the event stream; a queue's or a job's page polls while open.
  if (route().page !== "overview") pollTimer = setInterval(refresh, POLL_MS);
}

window.addEventListener("hashchange", onRoute);
// Charts are drawn for a width: on a resize they are drawn again, at the next refresh.
function redrawCharts() {
  dropCharts();
  document.querySelectorAll("#view .charts").forEach((box) => box.replaceChildren());
}
window.addEventListener("resize", () => { clearTimeout(redrawCharts.timer); redrawCharts.timer = setTimeout(redrawCharts, 200); });
countdownTimer = setInterval(tickLocks, 100);
connectStream();
onRoute();
