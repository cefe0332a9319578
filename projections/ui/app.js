// lavalog web UI: the job list and a job's Gantt timeline, live from /api/v1/stream.
// Plain DOM and SVG, no build step. Text goes in through textContent only.
"use strict";

const SVG_NS = "http://www.w3.org/2000/svg";
const view = document.getElementById("view");
const tip = document.getElementById("tip");
const liveDot = document.getElementById("live");
let stream = null;

function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (k === "text") node.textContent = v;
    else if (k.startsWith("on")) node.addEventListener(k.slice(2), v);
    else node.setAttribute(k, v);
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

function withTip(node, text) {
  node.addEventListener("mousemove", (e) => {
    tip.textContent = text;
    tip.hidden = false;
    tip.style.left = e.clientX + 12 + "px";
    tip.style.top = e.clientY + 12 + "px";
  });
  node.addEventListener("mouseleave", () => { tip.hidden = true; });
  node.append(svg("title", { text }));
  return node;
}

const badge = (phase) => el("span", { class: `badge phase-${phase || "Unknown"}`, text: phase || "—" });
const when = (t) => (t == null ? "—" : new Date(t * 1000).toISOString().replace("T", " ").slice(0, 19));
function seconds(s) {
  if (s == null) return "—";
  if (s < 120) return `${Math.round(s)}s`;
  if (s < 7200) return `${Math.floor(s / 60)}m${Math.round(s % 60)}s`;
  return `${Math.floor(s / 3600)}h${Math.round((s % 3600) / 60)}m`;
}

async function getJSON(url) {
  const response = await fetch(url);
  if (!response.ok) throw new Error(`${url}: ${response.status}`);
  return response.json();
}

// Re-render on matching events, at most every 500 ms.
function follow(query, render) {
  if (stream) stream.close();
  let timer = null;
  stream = new EventSource(`/api/v1/stream?${query}`);
  stream.onopen = () => liveDot.classList.add("on");
  stream.onerror = () => liveDot.classList.remove("on");
  const later = () => { if (!timer) timer = setTimeout(() => { timer = null; render(); }, 500); };
  for (const type of ["JobObserved", "JobDeleted", "PodObserved", "PodDeleted", "PhaseChanged",
    "ActionDecided", "PodsKill", "PodsCreate", "TimerScheduled", "TimerCancelled", "JobRejected"]) {
    stream.addEventListener(type, later);
  }
}

// ---- job list ------------------------------------------------------------------------

function jobList(params) {
  const search = el("input", { type: "search", placeholder: "search namespace/name", value: params.get("q") || "" });
  const table = el("table", { id: "jobs" });
  const pager = el("div", { class: "pager" });
  view.replaceChildren(el("h2", { text: "Jobs" }), search, table, pager);
  let after = null;
  const render = async () => {
    const query = new URLSearchParams({ limit: "100" });
    if (search.value) query.set("q", search.value);
    for (const k of ["namespace", "queue", "phase"]) if (params.get(k)) query.set(k, params.get(k));
    if (after) query.set("after", after);
    const page = await getJSON(`/api/v1/jobs?${query}`);
    table.replaceChildren(el("tr", {},
      ...["Job", "Queue", "Phase", "Submitted", "Queue wait", "Retries", "Pods", "Restarts"].map((h) => el("th", { text: h }))));
    for (const job of page.jobs) {
      table.append(el("tr", { class: "job-row", "data-key": job.key, "data-phase": job.phase },
        el("td", {}, el("a", { href: `#/jobs/${job.key}`, text: job.key }),
          job.incarnation > 1 ? el("span", { class: "muted", text: ` #${job.incarnation}` }) : ""),
        el("td", { text: job.queue }), el("td", {}, badge(job.phase)), el("td", { text: when(job.submitted) }),
        el("td", { text: seconds(job.queue_wait) }), el("td", { text: String(job.retry_count) }),
        el("td", { text: String(job.pods) }), el("td", { text: String(job.restarts) })));
    }
    pager.replaceChildren(el("span", { class: "muted", text: `${page.jobs.length} of ${page.total} jobs ` }));
    if (page.next) pager.append(el("a", { href: "#", text: "next page", onclick: (e) => { e.preventDefault(); after = page.next; render(); } }));
  };
  let typing = null;
  search.addEventListener("input", () => { clearTimeout(typing); typing = setTimeout(() => { after = null; render(); }, 200); });
  follow("type=JobObserved,JobDeleted,PhaseChanged,ActionDecided", render);
  return render();
}

// ---- job page ------------------------------------------------------------------------

const ROW = 22, LABEL = 140, BAND = 26, TOP = 20;

function attemptText(a) {
  const lines = [`${a.name}  (uid ${a.uid}, version ${a.job_version})`, `outcome: ${a.outcome}   phase: ${a.phase}`];
  if (a.node) lines.push(`node: ${a.node}`);
  lines.push(`created ${when(a.created ?? a.first_seen)}  started ${when(a.started)}  finished ${when(a.finished ?? a.deleted)}`);
  if (a.exit_code != null || a.reason) lines.push(`exit code ${a.exit_code ?? "—"}  ${a.reason}`);
  if (a.ended_by) lines.push(`ended by ${a.ended_by} (${a.end_action || a.end_reason})`);
  if (a.replaced_by) lines.push(`replaced by ${a.replaced_by}`);
  return lines.join("\n");
}

function decisionText(d) {
  const parts = [`${d.type} ${d.action}`.trim()];
  if (d.trigger) parts.push(`on ${d.trigger}`);
  if (d.policy) parts.push(`policy ${d.policy}`);
  if (d.exit_code != null) parts.push(`exit code ${d.exit_code}`);
  if (d.pod) parts.push(`pod ${d.pod}`);
  if (d.reason) parts.push(d.reason);
  return `${when(d.time)}  ${parts.join(", ")}\n${d.id}`;
}

function gantt(t) {
  const rows = t.tasks.flatMap((task) => task.indexes.map((ix) => ({ task: task.name, ...ix })));
  const starts = [t.submitted, ...t.phases.map((p) => p.start)].filter((x) => x != null);
  const t0 = starts.length ? Math.min(...starts) : t.updated;
  const t1 = Math.max(t.updated, t.finished ?? 0, t0 + 1);
  const width = Math.max(view.clientWidth - 64, 600);
  const span = width - LABEL - 36;
  const x = (time) => LABEL + ((time - t0) / (t1 - t0)) * span;
  const height = TOP + BAND + rows.length * ROW + 30;
  const chart = svg("svg", { id: "gantt", width, height, "data-rows": rows.length });

  const axis = svg("g", { class: "axis" });
  for (let i = 0; i <= 5; i++) {
    const time = t0 + ((t1 - t0) * i) / 5;
    axis.append(svg("line", { class: "grid", x1: x(time), x2: x(time), y1: TOP - 4, y2: height - 20 }),
      svg("text", { x: x(time), y: TOP - 8, "text-anchor": "middle", text: `+${seconds(time - t0)}` }));
  }
  chart.append(axis);

  const band = svg("g", { class: "phase-band" }, svg("text", { x: 4, y: TOP + 16, text: "job phase" }));
  for (const p of t.phases) {
    const end = p.end ?? t1;
    const rect = svg("rect", { x: x(p.start), y: TOP, width: Math.max(x(end) - x(p.start), 1), height: BAND - 6,
      class: `band phase-${p.phase}`, "data-phase": p.phase });
    band.append(withTip(rect, `${p.phase}  ${when(p.start)} → ${when(p.end)}\nreason: ${p.reason || "—"}${p.trigger ? `\non ${p.trigger} → ${p.action}` : ""}\ncause ${p.cause}`));
  }
  chart.append(band);

  rows.forEach((row, i) => {
    const y = TOP + BAND + i * ROW;
    const g = svg("g", { class: "gantt-row", "data-task": row.task, "data-index": row.index },
      svg("text", { x: 4, y: y + 15, text: `${row.task}-${row.index}` }));
    for (const a of row.attempts) {
      const start = a.created ?? a.first_seen;
      const end = a.finished ?? a.deleted ?? (["running", "pending"].includes(a.outcome) ? t1 : start);
      g.append(withTip(svg("rect", { class: `attempt outcome-${a.outcome}`, "data-outcome": a.outcome, "data-uid": a.uid,
        x: x(start), y: y + 3, width: Math.max(x(end) - x(start), 3), height: ROW - 6, rx: 3 }), attemptText(a)));
    }
    chart.append(g);
  });

  for (const d of t.decisions) {
    const mark = svg("g", { class: "decision-mark", "data-type": d.type },
      svg("line", { x1: x(d.time), x2: x(d.time), y1: TOP, y2: height - 20 }),
      svg("path", { d: `M${x(d.time) - 5},${height - 20} l5,-8 l5,8 z` }));
    chart.append(withTip(mark, decisionText(d)));
  }
  return chart;
}

async function jobPage(key, params) {
  const render = async () => {
    const query = params.get("incarnation") ? `?incarnation=${params.get("incarnation")}` : "";
    let data;
    try { data = await getJSON(`/api/v1/jobs/${key}${query}`); } catch (e) {
      view.replaceChildren(el("p", { text: `No job ${key}.` }), el("a", { href: "#/", text: "all jobs" }));
      return;
    }
    const t = data.timeline;
    const legend = el("div", { class: "legend" }, ...["pending", "running", "succeeded", "failed", "evicted", "killed"].map(
      (o) => el("span", {}, el("i", { class: `outcome-${o}` }), o)));
    const facts = el("div", { class: "facts" }, ...[
      ["queue", t.queue], ["submitted", when(t.submitted)], ["queue wait", seconds(t.queue_wait)],
      ["run time", seconds(t.run_time + (t.running_since != null ? t.updated - t.running_since : 0))],
      ["retries", t.retry_count], ["version", t.version], ["uid", t.uid],
      ["incarnation", `${t.incarnation} of ${data.incarnations.length}`],
    ].map(([k, v]) => el("span", {}, `${k} `, el("b", { text: String(v) }))));
    const decisions = el("table", { id: "decisions" }, el("tr", {}, ...["Time", "Decision", "Action", "Trigger", "Policy", "Detail"].map((h) => el("th", { text: h }))));
    for (const d of t.decisions) {
      decisions.append(el("tr", {}, el("td", { text: when(d.time) }), el("td", { text: d.type }), el("td", { text: d.action }),
        el("td", { text: d.trigger }), el("td", { text: d.policy }), el("td", { text: [d.pod, d.reason, d.exit_code != null ? `exit ${d.exit_code}` : ""].filter(Boolean).join(" ") })));
    }
    view.replaceChildren(
      el("p", {}, el("a", { href: "#/", text: "← jobs" })),
      el("h2", {}, `${t.key} `, badge(t.phase)),
      facts, el("div", { class: "panel" }, legend, gantt(t)),
      el("h3", { text: "Decisions" }), decisions,
      el("p", {}, el("a", { href: `/api/v1/jobs/${key}/events`, text: "raw events (audit trail)" })));
  };
  follow(`job=${encodeURIComponent(key)}`, render);
  return render();
}

function route() {
  tip.hidden = true;
  const [path, search] = location.hash.slice(1).split("?");
  const params = new URLSearchParams(search || "");
  const match = /^\/jobs\/([^/]+\/[^/]+)$/.exec(path || "");
  return match ? jobPage(decodeURIComponent(match[1]), params) : jobList(params);
}

window.addEventListener("hashchange", route);
route();
