// lavalog web UI: the job list and a job's Gantt timeline, live from /api/v1/stream.
// Plain DOM and SVG, no build step. Text goes in through textContent only.
"use strict";

const SVG_NS = "http://www.w3.org/2000/svg";
const view = document.getElementById("view");
const tip = document.getElementById("tip");
const liveDot = document.getElementById("live");
let stream = null;
let ticker = null;

// The time a job's open intervals run to: while it lives, the log's "now" (the latest event
// stored, `as_of`; not the browser's clock, which is another clock), else its last event.
let asOf = null;
const until = (t) => (t.finished == null && t.deleted == null ? Math.max(t.updated, asOf ?? 0) : t.updated);

function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v == null || v === false) continue;
    if (k === "text") node.textContent = v;
    else if (k.startsWith("on")) node.addEventListener(k.slice(2), v);
    else node.setAttribute(k, v === true ? "" : v);
  }
  for (const child of children) node.append(child);
  return node;
}

function svg(tag, attrs = {}, ...children) {
  const node = document.createElementNS(SVG_NS, tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (k === "text") node.textContent = v;
    else node.setAttribute(k, v);
  }
  for (const child of children) node.append(child);
  return node;
}

// The tooltip at (x, y), kept inside the window: flipped to the left of (or above) the
// pointer when it would run past the right (or bottom) edge.
function showTip(text, x, y) {
  tip.anchor = null;
  tip.textContent = text;
  tip.hidden = false;
  const { width, height } = tip.getBoundingClientRect();
  const left = x + 12 + width > innerWidth - 4 ? Math.max(4, x - 12 - width) : x + 12;
  const top = y + 12 + height > innerHeight - 4 ? Math.max(4, y - 12 - height) : y + 12;
  tip.style.left = left + "px";
  tip.style.top = top + "px";
}

// The tooltip below a focused chart item; `tip.anchor` keeps the item, so that a scroll
// (the browser bringing the item into view) moves the tip with it rather than hiding it.
function tipUnder(node, text) {
  const box = node.getBoundingClientRect();
  showTip(text, box.left + box.width / 2, box.bottom);
  tip.anchor = node;
}

// A chart item with its detail: on hover, and on keyboard focus (each is a tab stop with
// the detail as its accessible name).
function withTip(node, text) {
  node.setAttribute("tabindex", "0");
  node.setAttribute("aria-label", text.replaceAll("\n", "; "));
  node.addEventListener("mousemove", (e) => showTip(text, e.clientX, e.clientY));
  node.addEventListener("mouseleave", () => { tip.hidden = true; });
  node.addEventListener("focus", () => tipUnder(node, text));
  node.addEventListener("blur", () => { tip.hidden = true; });
  node.append(svg("title", { text }));
  return node;
}

const badge = (phase) => (phase
  ? el("span", { class: `badge phase-${phase}`, text: phase })
  : el("span", { class: "badge phase-Unknown", text: "new", title: "observed; the controller has not given it a phase yet" }));
const when = (t) => (t == null ? "—" : new Date(t * 1000).toISOString().replace("T", " ").slice(0, 19));
function seconds(s) {
  if (s == null) return "—";
  if (s < 10) return `${Math.round(s * 10) / 10}s`;  // the demo's jobs live seconds: keep tenths
  if (s < 59.5) return `${Math.round(s)}s`;
  const pair = (big, small, a, b) => (small ? `${big}${a}${small}${b}` : `${big}${a}`);
  const whole = Math.round(s), minutes = Math.round(s / 60);
  if (whole < 3600) return pair(Math.floor(whole / 60), whole % 60, "m", "s");
  return pair(Math.floor(minutes / 60), minutes % 60, "h", "m");
}

// The API writes instants as RFC 3339 text; the charts do arithmetic on seconds.
const RFC3339 = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)$/;
const asSeconds = (key, value) => (typeof value === "string" && RFC3339.test(value) ? Date.parse(value) / 1000 : value);

async function readJSON(response) {
  if (response.status === 401) { location.reload(); throw new Error("signed out"); }  // the sign-in page
  return JSON.parse(await response.text(), asSeconds);
}

async function getJSON(url) {
  const response = await fetch(url);
  if (!response.ok && response.status !== 401) throw new Error(`${url}: ${response.status}`);
  return readJSON(response);
}

// A JSON POST; the answer's status and body (the error's text when it failed).
async function postJSON(url, body) {
  const response = await fetch(url, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
  return { status: response.status, ok: response.ok, data: await readJSON(response) };
}

// Re-render on matching events, at most every 500 ms; and each time the stream opens
// (the server subscribes before it answers), since what was stored between the page's
// first read and the stream's start (or while it reconnected) comes on no stream.
function follow(query, render) {
  if (stream) stream.close();
  let timer = null;
  stream = new EventSource(`/api/v1/stream?${query}`);
  const later = () => { if (!timer) timer = setTimeout(() => { timer = null; render(); }, 500); };
  stream.onopen = () => { liveDot.classList.add("on"); later(); };
  stream.onerror = () => liveDot.classList.remove("on");
  for (const type of ["JobObserved", "JobDeleted", "PodObserved", "PodDeleted", "PhaseChanged",
    "ActionDecided", "PodsKill", "PodsCreate", "PodsReplace", "TimerScheduled", "TimerCancelled",
    "JobRejected", "PodGroupPending"]) {
    stream.addEventListener(type, later);
  }
}

// A press in progress (a pointer down, not up yet): a region redrawn under it would take
// its click away (the press and the release on different elements), so its redraw waits
// for the click the release makes; the latest one asked for is the one drawn.
let pressing = false;
const afterRelease = new Map();
document.addEventListener("pointerdown", () => { pressing = true; }, true);
for (const [target, type] of [[document, "pointerup"], [document, "pointercancel"], [window, "blur"]]) {
  target.addEventListener(type, () => {
    pressing = false;
    const draws = [...afterRelease.values()];
    afterRelease.clear();
    if (draws.length) setTimeout(() => draws.forEach((draw) => draw()));
  }, true);
}
function unlessPressing(region, draw) {
  if (pressing) afterRelease.set(region, draw);
  else draw();
}

// Replace a region's content keeping the keyboard focus on the element of the same
// `data-focus` key, so that a live refresh does not throw a keyboard user out.
function refill(region, ...children) {
  const focused = document.activeElement?.closest?.("[data-focus]")?.dataset.focus;
  region.replaceChildren(...children);
  if (focused != null) {
    const again = [...region.querySelectorAll("[data-focus]")].find((n) => n.dataset.focus === focused);
    if (again) again.focus({ preventScroll: true });
  }
}

const table = (attrs, headers, rows) => el("table", attrs,
  el("thead", {}, el("tr", {}, ...headers.map((h) => el("th", { scope: "col", text: h })))),
  el("tbody", {}, ...rows));

// ---- job list ------------------------------------------------------------------------

const PHASES = ["Pending", "Running", "Restarting", "Completing", "Completed", "Aborting", "Aborted",
  "Terminating", "Terminated", "Failed"];
const PAGE = 100;
const STATS_EVERY = 15_000;  // ms between two refreshes of the filters' counts

// One job's line in the list.
function jobRow(job) {
  return el("tr", { class: "job-row", "data-key": job.key, "data-phase": job.phase },
    el("td", {}, el("a", { href: `#/jobs/${job.key}`, text: job.key }),
      job.incarnation > 1 ? el("span", { class: "muted", text: ` #${job.incarnation}` }) : ""),
    el("td", { text: job.queue }), el("td", {}, badge(job.phase)),
    el("td", { class: "reason", text: job.reason, title: job.reason || null }),
    el("td", { text: when(job.submitted) }),
    el("td", { text: seconds(job.queue_wait) }), el("td", { text: String(job.retry_count) }),
    el("td", { text: String(job.pods) }), el("td", { text: String(job.restarts) }));
}

function jobList(params) {
  const chosen = new Set((params.get("phase") || "").split(",").filter((p) => PHASES.includes(p)));
  const search = el("input", { type: "search", id: "filter-q", placeholder: "namespace/name contains…", value: params.get("q") || "" });
  const namespace = el("select", { id: "filter-namespace" });
  const queue = el("select", { id: "filter-queue" });
  const phaseBoxes = PHASES.map((phase) => el("input", { type: "checkbox", id: `phase-${phase}`, value: phase, checked: chosen.has(phase) }));
  const phaseCounts = new Map(PHASES.map((phase) => [phase, el("span", { class: "count" })]));
  const clear = el("button", { type: "button", id: "filter-clear", text: "clear filters" });
  const body = el("tbody");
  const list = el("table", { id: "jobs" },
    el("caption", { class: "visually-hidden", text: "Jobs, newest first" }),
    el("thead", {}, el("tr", {}, ...["Job", "Queue", "Phase", "Reason", "Submitted", "Queue wait", "Retries", "Pods", "Restarts"]
      .map((h) => el("th", { scope: "col", text: h })))),
    body);
  const pager = el("nav", { class: "pager", "aria-label": "pages" });
  const filters = el("form", { class: "filters", role: "search", onsubmit: (e) => e.preventDefault() },
    el("label", { for: "filter-q", text: "Search" }), search,
    el("label", { for: "filter-namespace", text: "Namespace" }), namespace,
    el("label", { for: "filter-queue", text: "Queue" }), queue,
    el("fieldset", { id: "filter-phase" }, el("legend", { text: "Phase" }),
      ...PHASES.map((phase, i) => el("label", { class: `phase-choice phase-${phase}`, for: `phase-${phase}` },
        phaseBoxes[i], el("i"), phase, phaseCounts.get(phase)))),
    clear);
  view.replaceChildren(el("h2", { text: "Jobs" }), filters, list, pager);

  const current = () => {
    const picked = new URLSearchParams();
    if (namespace.value) picked.set("namespace", namespace.value);
    if (queue.value) picked.set("queue", queue.value);
    const phases = phaseBoxes.filter((box) => box.checked).map((box) => box.value);
    if (phases.length) picked.set("phase", phases.join(","));
    if (search.value.trim()) picked.set("q", search.value.trim());
    return picked;
  };
  // The options of each filter, with their job counts: namespaces and queues of every job
  // the caller may read, phases within the other filters.
  // (rebuilt only when they change: a select being used is left alone)
  const options = (select, counts, all, wanted) => {
    const names = Object.keys(counts).sort();
    if (wanted && !names.includes(wanted)) names.push(wanted);
    const signature = JSON.stringify([names, counts, wanted]);
    if (select.dataset.options === signature) return;
    select.dataset.options = signature;
    select.replaceChildren(el("option", { value: "", text: all }),
      ...names.map((name) => el("option", { value: name, text: `${name} (${counts[name] ?? 0})`, selected: name === wanted })));
  };
  let statsAt = 0, statsKey = null;
  const refreshStats = async (picked) => {
    const within = new URLSearchParams([...picked].filter(([k]) => k !== "phase"));
    if (Date.now() - statsAt < STATS_EVERY && statsKey === within.toString()) return;
    statsAt = Date.now();
    statsKey = within.toString();
    const [everything, here] = await Promise.all([getJSON("/api/v1/stats"), getJSON(`/api/v1/stats?${within}`)]);
    const queues = Object.fromEntries(Object.entries(everything.by_queue).map(([q, phases]) => [q, Object.values(phases).reduce((a, b) => a + b, 0)]));
    options(namespace, everything.by_namespace, "all namespaces", picked.get("namespace") || "");
    options(queue, queues, "all queues", picked.get("queue") || "");
    for (const [phase, count] of phaseCounts) count.textContent = ` ${here.by_phase[phase] ?? 0}`;
  };

  let after = null, pageNumber = 1, latest = 0, next = null;
  // The rows drawn, by job key, with the line each shows: a refresh keeps the row of a
  // job whose line has not changed, and the rows stay in place while the page holds the
  // same jobs in the same order, for the same reason as the pager's buttons below.
  let drawn = new Map();
  // The pager's count and buttons are made once and only updated by each render: a live
  // refresh that drew new buttons between the press of one and its release would take
  // the click away (the press and the release would land on different elements).
  const shownCount = el("span", { class: "muted", id: "jobs-shown" });
  const firstPage = el("button", { type: "button", class: "link", text: "first page", hidden: true,
    onclick: () => { after = null; pageNumber = 1; render(); } });
  const nextPage = el("button", { type: "button", class: "link", id: "next-page", text: "next page", hidden: true,
    onclick: () => { after = next; pageNumber += 1; render(); } });
  pager.append(shownCount, " ", firstPage, " ", nextPage);
  // Renders overlap (the live stream's, a click's): each shows the page it asked for, and
  // only the latest one started shows at all, so an earlier page's rows never land under
  // a later page's count.
  const render = async () => {
    const started = ++latest, number = pageNumber;
    const picked = current();
    const query = new URLSearchParams(picked);
    query.set("limit", String(PAGE));
    if (after) query.set("after", after);
    const [page] = await Promise.all([getJSON(`/api/v1/jobs?${query}`), refreshStats(picked)]);
    if (started !== latest) return;
    const kept = new Map();
    const rows = page.jobs.map((job) => {
      const shows = JSON.stringify(job), before = drawn.get(job.key);
      const row = before?.shows === shows ? before.row : jobRow(job);
      kept.set(job.key, { shows, row });
      return row;
    });
    drawn = kept;
    if (!rows.length) {
      rows.push(el("tr", {}, el("td", { class: "muted empty", colspan: "9", text: picked.toString()
        ? "No job matches these filters."
        : "No jobs yet: they appear here as soon as the controller observes them." })));
    }
    const present = [...body.children];
    if (rows.length === present.length && rows.every((row, i) => row.dataset.key === present[i].dataset.key)) {
      rows.forEach((row, i) => { if (row !== present[i]) present[i].replaceWith(row); });
    } else {
      body.replaceChildren(...rows);
    }
    const first = (number - 1) * PAGE;
    const shown = page.jobs.length ? `${first + 1}–${first + page.jobs.length} of ${page.total} jobs` : `0 of ${page.total} jobs`;
    shownCount.textContent = shown;
    firstPage.hidden = !after;
    next = page.next;
    nextPage.hidden = !next;
  };
  // A change of filter is written into the URL (a view can be shared) and starts again
  // from the first page.
  const apply = () => {
    const picked = current().toString();
    history.replaceState(null, "", picked ? `#/?${picked}` : "#/");
    after = null;
    pageNumber = 1;
    render();
  };
  let typing = null;
  search.addEventListener("input", () => { clearTimeout(typing); typing = setTimeout(apply, 200); });
  for (const control of [namespace, queue, ...phaseBoxes]) control.addEventListener("change", apply);
  clear.addEventListener("click", () => {
    search.value = "";
    namespace.value = queue.value = "";
    for (const box of phaseBoxes) box.checked = false;
    apply();
  });
  options(namespace, {}, "all namespaces", params.get("namespace") || "");
  options(queue, {}, "all queues", params.get("queue") || "");
  follow("type=JobObserved,JobDeleted,PhaseChanged,ActionDecided", render);
  return render();
}

// ---- job page ------------------------------------------------------------------------

const ROW = 22, LABEL = 140, BAND = 26, TOP = 20, MARK_LANE = 14, EVENT_LANE = 24;

// Times on the log's clock, relative to the chart's origin; the pod's own clock as detail.
function attemptText(a, t0) {
  const at = (t) => (t == null ? "—" : `+${seconds(t - t0)}`);
  const lines = [`${a.name}  (uid ${a.uid}, version ${a.job_version})`, `outcome: ${a.outcome}   phase: ${a.phase}`];
  if (a.node) lines.push(`node: ${a.node}`);
  lines.push(`seen created ${at(a.created)}  scheduled ${at(a.scheduled)}  started ${at(a.started)}  ` +
    (a.finished != null ? `finished ${at(a.finished)}` : `deleted ${at(a.deleted)}`));
  if (a.ran != null) lines.push(`ran ${seconds(a.ran)}`);
  const pod = a.pod_clock;
  if (pod.created != null || pod.started != null || pod.finished != null) {
    lines.push(`pod's own clock: created ${when(pod.created)}  started ${when(pod.started)}  finished ${when(pod.finished)}`);
  }
  if (a.exit_code != null || a.reason) {
    lines.push(`exit code ${a.exit_code ?? "—"}  ${a.reason}${a.container ? `  in container ${a.container}` : ""}`);
  }
  if (a.disruption) lines.push(`disrupted by ${a.disruption}`);
  for (const c of a.containers) lines.push(`  ${c.name}${c.init ? " (init)" : ""}: exit ${c.exit_code} ${c.reason}`);
  const words = lastWords(a);
  if (words.length) lines.push(`last words of ${words[0].name}: ${words[0].message.trimEnd().split("\n").slice(-3).join(" | ")}`);
  if (a.ended_by) lines.push(`ended by ${a.ended_by} (${a.end_action || a.end_reason})`);
  if (a.replaced_by) lines.push(`replaced by ${a.replaced_by}`);
  return lines.join("\n");
}

// The containers of an attempt that failed and left last words (termination messages).
const lastWords = (a) => a.containers.filter((c) => c.exit_code !== 0 && c.message);

// How the pod behind a decision went: container, reason, node, who disrupted it.
function failureParts(d) {
  const f = d.failure || {};
  return [f.container ? `container ${f.container}` : "", f.reason || "", f.node ? `node ${f.node}` : "",
    f.disruption ? `disrupted by ${f.disruption}` : "", d.uncounted ? "not counted as a retry" : ""].filter(Boolean);
}

function decisionText(d, t0) {
  const parts = [`${d.type} ${d.action}`.trim()];
  if (d.trigger) parts.push(`on ${d.trigger}`);
  if (d.policy) parts.push(`policy ${d.policy}`);
  if (d.exit_code != null) parts.push(`exit code ${d.exit_code}`);
  if (d.pod) parts.push(`pod ${d.pod}`);
  parts.push(...failureParts(d));
  if (d.reason) parts.push(d.reason);  // a restart backoff's "delayed 4s by restart backoff (restart 2)"
  if (d.fire_at != null) parts.push(`due +${seconds(d.fire_at - t0)}`);
  return `+${seconds(d.time - t0)}  ${parts.join(", ")}\n${when(d.time)}  ${d.id}`;
}

// The chart's time origin: submission, else the first phase (the API's times are seconds).
function origin(t) {
  const starts = [t.submitted, ...t.phases.map((p) => p.start)].filter((x) => x != null);
  return starts.length ? Math.min(...starts) : t.updated;
}

// A round step for about six axis ticks over `span` seconds.
function tickStep(span) {
  const steps = [0.5, 1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 21600, 43200, 86400];
  return steps.find((step) => span / step <= 8) ?? Math.ceil(span / 8 / 86400) * 86400;
}

const textWidth = (text, size = 12) => text.length * size * 0.54 + 6;  // system-ui, near enough to avoid overlaps

// What a bar says on itself: where it ran and how it ended, as much as fits.
function barLabel(a, width) {
  const exit = a.exit_code != null ? `exit ${a.exit_code}` : "";
  const candidates = [
    [a.node, [exit, a.exit_code != null ? a.reason : ""].filter(Boolean).join(" ")].filter(Boolean).join(" · "),
    [a.node, exit].filter(Boolean).join(" · "),
    exit, a.node,
  ];
  return candidates.find((text) => text && textWidth(text, 11) <= width - 4) || "";
}

// The Kubernetes Events on the chart's time axis: events closer than a marker's width
// share one marker; a Warning among them marks it as one.
function eventMarkers(events, x) {
  const groups = [];
  for (const e of events) {
    const last = groups[groups.length - 1];
    if (last && x(e.time) - last.x < 12) last.events.push(e);
    else groups.push({ x: x(e.time), events: [e] });
  }
  return groups;
}

const eventText = (e, t0) => `+${seconds(e.time - t0)}  ${e.type} ${e.reason}: ${e.message}`;

function gantt(t, events, onEvents) {
  const rows = t.tasks.flatMap((task) => task.indexes.map((ix) => ({ task: task.name, ...ix })));
  const t0 = origin(t);
  const last = Math.max(until(t), t.finished ?? 0, t0 + 1, ...events.map((e) => e.time));
  const t1 = last + (last - t0) * 0.03;  // room to see the phase the job ended in
  const width = Math.max(view.clientWidth - 64, 600);
  const span = width - LABEL - 36;
  const x = (time) => LABEL + ((time - t0) / (t1 - t0)) * span;
  const groups = t.podgroup.filter((g) => g.phase !== "Deleted");
  const rowsTop = TOP + BAND + (groups.length ? ROW : 0);
  const marksY = rowsTop + rows.length * ROW + 4;  // the decision marks' triangles sit here
  const eventsY = marksY + 2 * MARK_LANE + 14;  // the Events' lane
  const height = eventsY + EVENT_LANE;
  const chart = svg("svg", { id: "gantt", width, height, "data-rows": rows.length, role: "group",
    "aria-label": `timeline of ${t.key}: phases, pod attempts, decisions and Kubernetes Events` });

  const axis = svg("g", { class: "axis", "aria-hidden": "true" });
  const step = tickStep(t1 - t0);
  for (let offset = 0; offset <= t1 - t0 + 1e-9; offset += step) {
    axis.append(svg("line", { class: "grid", x1: x(t0 + offset), x2: x(t0 + offset), y1: TOP - 4, y2: eventsY + EVENT_LANE - 6 }),
      svg("text", { x: x(t0 + offset), y: TOP - 8, "text-anchor": "middle", text: `+${seconds(offset)}` }));
  }
  chart.append(axis);

  const band = svg("g", { class: "phase-band" }, svg("text", { x: 4, y: TOP + 14, text: "job phase" }));
  t.phases.forEach((p, i) => {
    const x0 = x(p.start), w = Math.max(x(p.end ?? t1) - x0, 1);
    const rect = svg("rect", { x: x0, y: TOP, width: w, height: BAND - 6, class: `band phase-${p.phase}`, "data-phase": p.phase, "data-focus": `phase-${i}` });
    band.append(withTip(rect, `${p.phase}  +${seconds(p.start - t0)} → ${p.end == null ? "now" : `+${seconds(p.end - t0)}`}` +
      `  (${when(p.start)})\nreason: ${p.reason || "—"}${p.trigger ? `\non ${p.trigger} → ${p.action}` : ""}` +
      `\nretries ${p.retry_count}, version ${p.version} from here on\ncause ${p.cause}`));
    if (w >= textWidth(p.phase, 11)) band.append(svg("text", { class: "band-label", x: x0 + 4, y: TOP + 14, text: p.phase }));
  });
  chart.append(band);

  // The PodGroup's phases say why a job waits: Pending until the gang fits the queue.
  if (groups.length) {
    const y = TOP + BAND;
    const g = svg("g", { class: "podgroup-band" }, svg("text", { x: 4, y: y + 13, text: "podgroup" }));
    t.podgroup.forEach((point, i) => {
      if (point.phase === "Deleted") return;
      const end = t.podgroup[i + 1]?.time ?? t1;
      const x0 = x(point.time), w = Math.max(x(end) - x0, 1);
      g.append(withTip(svg("rect", { x: x0, y: y + 2, width: w, height: ROW - 8, class: `band podgroup phase-${point.phase}`, "data-phase": point.phase, "data-focus": `podgroup-${i}` }),
        `PodGroup ${point.phase}  +${seconds(point.time - t0)}${point.reason ? `\nreason: ${point.reason}` : ""}`));
      if (w >= textWidth(point.phase, 11)) g.append(svg("text", { class: "band-label", x: x0 + 4, y: y + 13, text: point.phase }));
    });
    chart.append(g);
  }

  rows.forEach((row, i) => {
    const y = rowsTop + i * ROW;
    const g = svg("g", { class: "gantt-row", "data-task": row.task, "data-index": row.index },
      svg("text", { x: 4, y: y + 15, text: `${row.task}-${row.index}` }));
    if (!row.attempts.length) g.append(svg("text", { class: "empty", x: LABEL + 4, y: y + 15, text: "no pod yet" }));
    for (const a of row.attempts) {
      const end = a.finished ?? a.deleted ?? t1;  // not seen to end: still there (a kill takes time)
      const x0 = x(a.created), w = Math.max(x(end) - x0, 3);
      g.append(withTip(svg("rect", { class: `attempt outcome-${a.outcome}`, "data-outcome": a.outcome, "data-uid": a.uid,
        "data-node": a.node, "data-exit-code": a.exit_code ?? "", "data-focus": `attempt-${a.uid}`,
        x: x0, y: y + 3, width: w, height: ROW - 6, rx: 3 }), attemptText(a, t0)));
      const label = barLabel(a, w);
      if (label) g.append(svg("text", { class: "bar-label", "data-uid": a.uid, x: x0 + 4, y: y + 15, text: label }));
    }
    chart.append(g);
  });

  // A dashed line per decision, with a wide invisible line to hover, and its action below
  // in the first of two lanes where it does not overlap the previous label.
  const laneEnds = [-Infinity, -Infinity];
  for (const d of t.decisions) {
    const xd = x(d.time);
    const mark = svg("g", { class: "decision-mark", "data-type": d.type, "data-focus": `decision-${d.id}` },
      svg("line", { x1: xd, x2: xd, y1: TOP, y2: marksY }),
      svg("line", { class: "hit", x1: xd, x2: xd, y1: TOP, y2: marksY + 8 }),
      svg("path", { d: `M${xd - 5},${marksY + 8} l5,-8 l5,8 z` }));
    const label = d.action || d.type;
    const w = textWidth(label, 11);
    const left = Math.min(Math.max(xd - w / 2, LABEL), width - w);
    const lane = laneEnds.findIndex((end) => left > end);
    if (lane >= 0) {
      laneEnds[lane] = left + w;
      mark.append(svg("text", { class: "mark-label", x: left + w / 2, y: marksY + 8 + (lane + 1) * MARK_LANE - 2, "text-anchor": "middle", text: label }));
    }
    chart.append(withTip(mark, decisionText(d, t0)));
  }

  // The job's Kubernetes Events, on the same axis: a dot per moment (a diamond when one of
  // them is a Warning), their number beside it when more than one; a click (or Enter)
  // shows them in the Events table below.
  const lane = svg("g", { class: "event-lane" }, svg("text", { x: 4, y: eventsY + 14, text: "k8s events" }));
  if (!events.length) lane.append(svg("text", { class: "empty", x: LABEL + 4, y: eventsY + 14, text: "no Events" }));
  for (const group of eventMarkers(events, x)) {
    const warning = group.events.some((e) => e.type === "Warning");
    const cy = eventsY + 10;
    const shape = warning
      ? svg("path", { d: `M${group.x},${cy - 7} l7,7 l-7,7 l-7,-7 z` })
      : svg("circle", { cx: group.x, cy, r: 5.5 });
    const marker = svg("g", { class: `kube-event${warning ? " warning" : ""}`, "data-count": group.events.length,
      "data-reasons": group.events.map((e) => e.reason).join(","), "data-focus": `event-${group.events[0].decision}-${group.events[0].reason}` }, shape);
    if (group.events.length > 1) marker.append(svg("text", { class: "event-count", x: group.x + 9, y: cy + 4, text: String(group.events.length) }));
    const show = () => onEvents(group.events);
    marker.addEventListener("click", show);
    marker.addEventListener("keydown", (e) => { if (e.key === "Enter" || e.key === " ") { e.preventDefault(); show(); } });
    lane.append(withTip(marker, group.events.map((e) => eventText(e, t0)).join("\n")));
  }
  chart.append(lane);
  return chart;
}

// What the colours mean: the pod outcomes always, the phases this job and its PodGroup went through.
function legend(t) {
  const phases = [...new Set([...t.phases, ...t.podgroup].map((p) => p.phase).filter((p) => p !== "Deleted"))];
  return el("div", { class: "legend" },
    el("span", { class: "legend-title", text: "pod attempts" }),
    ...["pending", "running", "succeeded", "failed", "evicted", "killed"].map((o) => el("span", {}, el("i", { class: `outcome-${o}` }), o)),
    phases.length ? el("span", { class: "legend-title", text: "job phases" }) : "",
    ...phases.map((p) => el("span", {}, el("i", { class: `phase-${p}` }), p)),
    el("span", {}, el("i", { class: "mark" }), "decision"),
    el("span", {}, el("i", { class: "event" }), "Event"),
    el("span", {}, el("i", { class: "event warning" }), "Warning Event"));
}

// The pod attempts that failed or were disrupted: how each container ended, and its last
// words, kept after the pod is gone.
function podEnds(t, t0) {
  const ended = t.tasks.flatMap((task) => task.indexes.flatMap((ix) => ix.attempts))
    .filter((a) => a.outcome === "failed" || a.outcome === "evicted");
  if (!ended.length) return "";
  const rows = ended.map((a) => el("tr", { class: "pod-end", "data-uid": a.uid },
    el("td", { text: `+${seconds((a.finished ?? a.deleted ?? a.created) - t0)}` }),
    el("td", { text: a.name }), el("td", { text: a.node || "—" }), el("td", { text: a.outcome }),
    el("td", { text: a.containers.map((c) => `${c.name}${c.init ? " (init)" : ""} exit ${c.exit_code} ${c.reason}`).join(", ")
      || [a.exit_code != null ? `exit ${a.exit_code}` : "", a.reason].filter(Boolean).join(" ") || "—" }),
    el("td", { text: a.disruption || "" }),
    el("td", {}, ...lastWords(a).map((c) => el("div", {}, el("span", { class: "muted", text: `${c.name}:` }),
      el("pre", { class: "last-words", text: c.message.trimEnd() }))))));
  return el("section", { id: "pod-ends" }, el("h3", { text: "Pod failures and disruptions" }),
    table({}, ["At", "Pod", "Node", "Outcome", "Containers", "Disrupted by", "Last words"], rows));
}

const OPT_IN = "phase changes, written to Kubernetes only when the controller runs with --phase-events (Volcano writes none)";

// The job's Kubernetes Events as `kubectl describe vcjob` lists them, kept past the hour
// Kubernetes keeps them; those of a marker clicked on the chart are picked out.
function eventsTable(events, t0, picked) {
  if (!events.length) {
    return el("p", { class: "muted empty", text: "No Events: the controller has recorded none on this job." });
  }
  const rows = events.map((e) => el("tr", { class: `kube-event-row${picked.has(e) ? " picked" : ""}${e.type === "Warning" ? " warning" : ""}${e.opt_in ? " opt-in" : ""}`,
    "data-decision": e.decision, "data-reason": e.reason, title: e.opt_in ? OPT_IN : null },
  el("td", { text: `+${seconds(e.time - t0)}` }), el("td", { text: when(e.time) }), el("td", { text: e.type }),
  el("td", { text: e.reason }), el("td", { text: e.source }), el("td", { class: "message", text: e.message })));
  const note = events.some((e) => e.opt_in)
    ? [el("p", { class: "muted", id: "opt-in-note", text: `Rows in grey: ${OPT_IN}.` })] : [];
  return el("div", {}, table({ id: "kube-events" }, ["At", "Time", "Type", "Reason", "From", "Message"], rows), ...note);
}

// Which commands apply in a phase (Volcano's state machine: a job suspends while it runs
// or waits, resumes once aborted, restarts while it runs or waits).
const COMMANDS = [
  { verb: "suspend", label: "Suspend", action: "AbortJob", phases: ["Pending", "Running", "Restarting"],
    what: "its pods are killed and it stays Aborted until resumed" },
  { verb: "resume", label: "Resume", action: "ResumeJob", phases: ["Aborting", "Aborted"],
    what: "it starts again from Pending" },
  { verb: "restart", label: "Restart", action: "RestartJob", phases: ["Pending", "Running", "Restarting"],
    what: "its pods are killed and made again; this counts a retry" },
];

// Suspend, resume and restart, for a caller RBAC lets create Commands in the namespace.
// A click asks first; the confirmation creates the Command (as `vcctl job suspend`), and
// the page follows what the controller makes of it.
// The keyboard focus follows: onto the confirmation, and back to the command's button.
function commandBar(key, phase, state, redraw) {
  const bar = el("div", { id: "job-commands", role: "group", "aria-label": "commands" });
  if (state.confirming) {
    const command = COMMANDS.find((c) => c.verb === state.confirming);
    const back = `command-${command.verb}`;
    const cancel = () => { state.confirming = null; redraw(back); };
    const run = async () => {
      state.confirming = null;
      state.message = { text: `${command.label}: creating the Command…`, error: false };
      redraw(back);
      const answer = await postJSON(`/api/v1/jobs/${key}/commands`, { action: command.verb });
      state.message = answer.ok
        ? { text: `Command ${answer.data.namespace}/${answer.data.name} created (${answer.data.action}): the controller acts on it.`, error: false }
        : { text: `${command.label} refused: ${answer.data.error}`, error: true };
      redraw();
    };
    bar.append(el("span", { class: "confirm-text", text: `${command.label} ${key}? ${command.action}: ${command.what}.` }),
      el("button", { type: "button", id: "command-confirm", class: "primary", "data-focus": "command-confirm", onclick: run, text: `${command.label} job` }),
      el("button", { type: "button", id: "command-cancel", "data-focus": "command-cancel", onclick: cancel, text: "Cancel" }));
  } else {
    for (const command of COMMANDS) {
      const applies = command.phases.includes(phase);
      bar.append(el("button", { type: "button", id: `command-${command.verb}`, "data-focus": `command-${command.verb}`,
        disabled: !applies, title: applies ? `${command.action}: ${command.what}` : `only for a ${command.phases.join(", ")} job`,
        onclick: () => { state.confirming = command.verb; state.message = null; redraw("command-confirm"); }, text: command.label }));
    }
  }
  const status = state.message
    ? el("p", { id: "command-status", class: state.message.error ? "error" : "muted", role: state.message.error ? "alert" : "status", text: state.message.text })
    : "";
  return [bar, status];
}

// The specs the job ran with, one per generation, read when the section is opened.
function specSection(key, incarnation, state) {
  const pre = el("pre", { id: "spec-yaml", tabindex: "0" });
  const choice = el("select", { id: "spec-generation", "aria-label": "generation" });
  const note = el("p", { class: "muted", text: "As the controller observed it: the spec and lavalog's annotations (the log keeps no labels or other metadata)." });
  const details = el("details", { id: "spec", open: state.specOpen }, el("summary", { text: "Spec (YAML)" }), note, choice, pre);
  const show = () => {
    const version = state.specs.find((s) => String(s.generation) === choice.value) ?? state.specs[state.specs.length - 1];
    pre.textContent = version ? version.yaml : "";
  };
  const fill = () => {
    choice.replaceChildren(...state.specs.map((s) => el("option", { value: String(s.generation),
      text: `generation ${s.generation}, observed ${when(s.observed)}`, selected: s.generation === state.specs[state.specs.length - 1].generation })));
    choice.hidden = state.specs.length < 2;
    show();
  };
  const load = async () => {
    if (!state.specs) {
      const query = incarnation ? `?incarnation=${incarnation}` : "";
      state.specs = (await getJSON(`/api/v1/jobs/${key}/spec${query}`)).specs;
    }
    if (state.specs.length) fill();
    else pre.textContent = "No spec on the log for this job.";
  };
  choice.addEventListener("change", show);
  details.addEventListener("toggle", () => { state.specOpen = details.open; if (details.open) load(); });
  if (state.specOpen) load();
  return details;
}

async function jobPage(key, params) {
  let live = false;
  const incarnation = params.get("incarnation");
  // what survives a live refresh: the command being confirmed and its outcome, the spec
  // section (open or not, its text), the Events picked on the chart
  const state = { confirming: null, message: null, specOpen: false, specs: null, uid: null, picked: new Set() };
  const title = el("h2", { id: "job-title" });
  const commands = el("div", { class: "job-commands" });
  const why = el("div");
  const facts = el("div", { class: "facts" });
  const chart = el("div", { class: "panel" });
  const events = el("section", { id: "events-section" });
  const ends = el("div");
  const decisions = el("section");
  const spec = el("div");
  let data = null;
  const page = [
    el("p", {}, el("a", { href: "#/", text: "← jobs" })),
    el("div", { class: "job-head" }, title, commands), why, facts, chart, ends, decisions, events, spec,
    el("p", {}, el("a", { href: `/api/v1/jobs/${key}/events`, text: "raw events (audit trail)" }), " · ",
      el("a", { id: "whatif-link", href: `#/jobs/${key}/whatif`, text: "what if… (replay under another policy)" }))];
  // a job not stored yet (a link followed before the projections caught up) is shown as
  // soon as its events arrive: the page follows its key either way
  const missing = el("p", { id: "no-job", text: `No job ${key} (yet: it shows here once its events are stored).` });
  const shown = () => title.isConnected || missing.isConnected;  // not another page since
  view.replaceChildren(...page);

  // drawn again only when what the bar shows changes: new buttons under a press would
  // take its click away (the press and the release on different elements), and a live
  // job's page is refreshed on each of its events
  let commandsShown = null;
  const drawCommands = (focus) => {
    const shows = JSON.stringify([data?.may_command, COMMANDS.map((c) => c.phases.includes(data?.timeline.phase)),
      state.confirming, state.message]);
    if (shows === commandsShown) return;
    commandsShown = shows;
    if (!data?.may_command) { commands.replaceChildren(); return; }
    refill(commands, ...commandBar(key, data.timeline.phase, state, drawCommands));
    if (focus) document.getElementById(focus)?.focus();
  };
  const pick = (picked) => {
    state.picked = new Set(picked);
    drawEvents();
    document.querySelector("#kube-events tr.picked")?.scrollIntoView({ block: "nearest" });
  };
  const drawEvents = () => {
    const t0 = origin(data.timeline);
    // the picked Events are found again by identity after a refresh
    const same = (a, b) => a.decision === b.decision && a.reason === b.reason;
    const picked = new Set(data.kube_events.filter((e) => [...state.picked].some((p) => same(p, e))));
    refill(events, el("h3", { text: "Kubernetes Events" }), eventsTable(data.kube_events, t0, picked));
  };
  const render = async () => {
    const query = incarnation ? `?incarnation=${incarnation}` : "";
    let answer;
    try { answer = await getJSON(`/api/v1/jobs/${key}${query}`); } catch (e) {
      if (shown() && data == null) view.replaceChildren(missing, el("a", { href: "#/", text: "all jobs" }));
      return;
    }
    if (!shown()) return;
    // the same answer again (the stream reopened, the ticker of a job that did not move):
    // redrawing it would only pull the chart from under a pointer, a focused marker's
    // detail and the scroll
    if (data != null && JSON.stringify(answer) === JSON.stringify(data)) return;
    data = answer;
    if (missing.isConnected) view.replaceChildren(...page);
    const t = data.timeline;
    asOf = data.as_of;
    live = t.finished == null && t.deleted == null;
    if (state.uid !== t.uid) {  // a new incarnation of the name: its own spec
      state.uid = t.uid;
      state.specs = null;
      spec.replaceChildren(specSection(key, incarnation, state));
    }
    title.replaceChildren(`${t.key} `, badge(t.phase));
    drawCommands();
    why.replaceChildren(t.message ? el("p", { id: "why", class: "why" }, el("b", { text: `${t.reason}: ` }), t.message) : "");
    facts.replaceChildren(...[
      ["queue", t.queue], ["submitted", when(t.submitted)], ["queue wait", seconds(t.queue_wait)],
      ["run time", seconds(t.run_time + (t.running_since != null ? until(t) - t.running_since : 0))],
      ["retries", t.retry_count], ["version", t.version], ["uid", t.uid],
      ["incarnation", `${t.incarnation} of ${data.incarnations.length}`],
    ].map(([k, v]) => el("span", {}, `${k} `, el("b", { text: String(v) }))));
    const t0 = origin(t);
    unlessPressing(chart, () => refill(chart, legend(t), gantt(t, data.kube_events, pick)));
    drawEvents();
    ends.replaceChildren(podEnds(t, t0));
    for (const words of ends.querySelectorAll("pre.last-words")) words.scrollTop = words.scrollHeight;  // the end first
    const rows = t.decisions.map((d) => el("tr", {}, el("td", { text: `+${seconds(d.time - t0)}` }), el("td", { text: when(d.time) }),
      el("td", { text: d.type }), el("td", { text: d.action }), el("td", { text: d.trigger }), el("td", { text: d.policy }),
      el("td", { text: [d.pod, d.reason, d.exit_code != null ? `exit ${d.exit_code}` : "", ...failureParts(d)].filter(Boolean).join(" ") })));
    decisions.replaceChildren(el("h3", { text: "Decisions" }), rows.length
      ? table({ id: "decisions" }, ["At", "Time", "Decision", "Action", "Trigger", "Policy", "Detail"], rows)
      : el("p", { class: "muted empty", text: "No decisions: the controller has taken no action (restart, abort, complete...) on this job." }));
  };
  follow(`job=${encodeURIComponent(key)}`, render);
  // a running job's bars grow with the log's clock, which other jobs' events move on
  ticker = setInterval(() => { if (!document.hidden && live) render(); }, 5000);
  return render();
}

// What if: the job's recorded facts replayed under spec changes typed as `--set` lines.
function whatIfPage(key) {
  if (stream) { stream.close(); stream = null; }  // a replay of the record: nothing live to follow
  const editor = el("textarea", { id: "whatif-set", rows: "4", spellcheck: "false" });
  editor.value = "spec.maxRetry=5";
  const result = el("div", { id: "whatif-result", "aria-live": "polite" });
  const run = async () => {
    const sets = editor.value.split("\n").map((line) => line.trim()).filter(Boolean);
    const answer = await postJSON(`/api/v1/jobs/${key}/whatif`, { set: sets });
    if (!answer.ok) { result.replaceChildren(el("p", { class: "error", role: "alert", text: answer.data.error })); return; }
    result.replaceChildren(...whatIfView(answer.data));
  };
  view.replaceChildren(
    el("p", {}, el("a", { href: `#/jobs/${key}`, text: `← ${key}` })),
    el("h2", { text: `What if: ${key}` }),
    el("label", { for: "whatif-set", class: "muted", text: "One spec change per line, e.g. spec.maxRetry=5 or spec.tasks[worker].policies=[{\"event\":\"PodFailed\",\"action\":\"RestartTask\"}]" }),
    editor, el("p", {}, el("button", { type: "button", id: "whatif-run", onclick: run, text: "replay" })), result);
  return run();
}

function whatIfView(w) {
  const t0 = w.steps.length ? w.steps[0].time : 0;
  const rows = w.steps.map((s) => el("tr", { class: s.observation === w.divergence ? "divergence" : "" },
    el("td", { text: `+${seconds(s.time - t0)}` }), el("td", { text: s.fact }),
    el("td", { text: s.recorded.join(", ") || "—" }), el("td", { text: s.alternative.join(", ") || "—" })));
  const verdict = w.divergence == null
    ? `Identical: the change decides nothing differently (${w.recorded_phase}).`
    : `Diverges at ${w.divergence}: recorded, the job ends ${w.recorded_phase} after ${w.recorded_restarts} restart(s); ` +
      `the alternative is ${w.alternative_phase} there after ${w.alternative_restarts}, and unknown beyond.`;
  const known = w.known_after.map((k) => el("li", { text: `${k.pod} failed at +${seconds(k.time - t0)} (exit ${k.exit_code}${k.container ? ` in ${k.container}` : ""}, ${k.reason || "no reason"}) in the recorded run` }));
  const whys = [["recorded", w.recorded_why], ["alternative", w.alternative_why]].filter(([, why]) => why && w.divergence != null)
    .map(([run, why]) => el("li", { text: `${run}: ${why}` }));
  return [el("p", { id: "whatif-verdict", text: verdict }), whys.length ? el("ul", { id: "whatif-why" }, ...whys) : "",
    table({ id: "whatif-steps" }, ["At", "Fact", "Recorded", "Alternative"], rows),
    known.length ? el("div", {}, el("h3", { text: "Known from the recorded run after the divergence" }), el("ul", {}, ...known)) : "",
    el("p", { class: "muted", text: `baseline: ${w.baseline} decisions; pod time saved ${seconds(w.pod_seconds_saved)}, spent ${seconds(w.pod_seconds_spent)} (estimates)` })];
}

function route() {
  tip.hidden = true;
  clearInterval(ticker);
  const [path, search] = location.hash.slice(1).split("?");
  const params = new URLSearchParams(search || "");
  const whatIf = /^\/jobs\/([^/]+\/[^/]+)\/whatif$/.exec(path || "");
  if (whatIf) return whatIfPage(decodeURIComponent(whatIf[1]));
  const match = /^\/jobs\/([^/]+\/[^/]+)$/.exec(path || "");
  return match ? jobPage(decodeURIComponent(match[1]), params) : jobList(params);
}

// a pointer's tooltip stays where it was put: it goes when the page moves under it; a
// focused item's follows the item
window.addEventListener("scroll", () => {
  if (!tip.hidden && tip.anchor && tip.anchor === document.activeElement) tipUnder(tip.anchor, tip.textContent);
  else tip.hidden = true;
}, { passive: true });
window.addEventListener("hashchange", route);
route();
