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

// Re-render on matching events, at most every 500 ms.
function follow(query, render) {
  if (stream) stream.close();
  let timer = null;
  stream = new EventSource(`/api/v1/stream?${query}`);
  stream.onopen = () => liveDot.classList.add("on");
  stream.onerror = () => liveDot.classList.remove("on");
  const later = () => { if (!timer) timer = setTimeout(() => { timer = null; render(); }, 500); };
  for (const type of ["JobObserved", "JobDeleted", "PodObserved", "PodDeleted", "PhaseChanged",
    "ActionDecided", "PodsKill", "PodsCreate", "PodsReplace", "TimerScheduled", "TimerCancelled",
    "JobRejected"]) {
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
    if (!page.jobs.length) {
      table.append(el("tr", {}, el("td", { class: "muted empty", colspan: "8", text: search.value
        ? `No job matches "${search.value}".`
        : "No jobs yet: they appear here as soon as the controller observes them." })));
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

const ROW = 22, LABEL = 140, BAND = 26, TOP = 20, MARK_LANE = 14;

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

const textWidth = (text) => text.length * 6.5 + 6;  // 12px system-ui, near enough to avoid overlaps

function gantt(t) {
  const rows = t.tasks.flatMap((task) => task.indexes.map((ix) => ({ task: task.name, ...ix })));
  const t0 = origin(t);
  const last = Math.max(until(t), t.finished ?? 0, t0 + 1);
  const t1 = last + (last - t0) * 0.03;  // room to see the phase the job ended in
  const width = Math.max(view.clientWidth - 64, 600);
  const span = width - LABEL - 36;
  const x = (time) => LABEL + ((time - t0) / (t1 - t0)) * span;
  const groups = t.podgroup.filter((g) => g.phase !== "Deleted");
  const rowsTop = TOP + BAND + (groups.length ? ROW : 0);
  const marksY = rowsTop + rows.length * ROW + 4;  // the decision marks' triangles sit here
  const height = marksY + 2 * MARK_LANE + 8;
  const chart = svg("svg", { id: "gantt", width, height, "data-rows": rows.length });

  const axis = svg("g", { class: "axis" });
  const step = tickStep(t1 - t0);
  for (let offset = 0; offset <= t1 - t0 + 1e-9; offset += step) {
    axis.append(svg("line", { class: "grid", x1: x(t0 + offset), x2: x(t0 + offset), y1: TOP - 4, y2: marksY }),
      svg("text", { x: x(t0 + offset), y: TOP - 8, "text-anchor": "middle", text: `+${seconds(offset)}` }));
  }
  chart.append(axis);

  const band = svg("g", { class: "phase-band" }, svg("text", { x: 4, y: TOP + 14, text: "job phase" }));
  for (const p of t.phases) {
    const x0 = x(p.start), w = Math.max(x(p.end ?? t1) - x0, 1);
    const rect = svg("rect", { x: x0, y: TOP, width: w, height: BAND - 6, class: `band phase-${p.phase}`, "data-phase": p.phase });
    band.append(withTip(rect, `${p.phase}  +${seconds(p.start - t0)} → ${p.end == null ? "now" : `+${seconds(p.end - t0)}`}` +
      `  (${when(p.start)})\nreason: ${p.reason || "—"}${p.trigger ? `\non ${p.trigger} → ${p.action}` : ""}` +
      `\nretries ${p.retry_count}, version ${p.version} from here on\ncause ${p.cause}`));
    if (w >= textWidth(p.phase)) band.append(svg("text", { class: "band-label", x: x0 + 4, y: TOP + 14, text: p.phase }));
  }
  chart.append(band);

  // The PodGroup's phases say why a job waits: Pending until the gang fits the queue.
  if (groups.length) {
    const y = TOP + BAND;
    const g = svg("g", { class: "podgroup-band" }, svg("text", { x: 4, y: y + 13, text: "podgroup" }));
    t.podgroup.forEach((point, i) => {
      if (point.phase === "Deleted") return;
      const end = t.podgroup[i + 1]?.time ?? t1;
      const x0 = x(point.time), w = Math.max(x(end) - x0, 1);
      g.append(withTip(svg("rect", { x: x0, y: y + 2, width: w, height: ROW - 8, class: `band podgroup phase-${point.phase}`, "data-phase": point.phase }),
        `PodGroup ${point.phase}  +${seconds(point.time - t0)}${point.reason ? `\nreason: ${point.reason}` : ""}`));
      if (w >= textWidth(point.phase)) g.append(svg("text", { class: "band-label", x: x0 + 4, y: y + 13, text: point.phase }));
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
      g.append(withTip(svg("rect", { class: `attempt outcome-${a.outcome}`, "data-outcome": a.outcome, "data-uid": a.uid,
        x: x(a.created), y: y + 3, width: Math.max(x(end) - x(a.created), 3), height: ROW - 6, rx: 3 }), attemptText(a, t0)));
    }
    chart.append(g);
  });

  // A dashed line per decision, with a wide invisible line to hover, and its action below
  // in the first of two lanes where it does not overlap the previous label.
  const laneEnds = [-Infinity, -Infinity];
  for (const d of t.decisions) {
    const xd = x(d.time);
    const mark = svg("g", { class: "decision-mark", "data-type": d.type },
      svg("line", { x1: xd, x2: xd, y1: TOP, y2: marksY }),
      svg("line", { class: "hit", x1: xd, x2: xd, y1: TOP, y2: marksY + 8 }),
      svg("path", { d: `M${xd - 5},${marksY + 8} l5,-8 l5,8 z` }));
    const label = d.action || d.type;
    const w = textWidth(label);
    const left = Math.min(Math.max(xd - w / 2, LABEL), width - w);
    const lane = laneEnds.findIndex((end) => left > end);
    if (lane >= 0) {
      laneEnds[lane] = left + w;
      mark.append(svg("text", { class: "mark-label", x: left + w / 2, y: marksY + 8 + (lane + 1) * MARK_LANE - 2, "text-anchor": "middle", text: label }));
    }
    chart.append(withTip(mark, decisionText(d, t0)));
  }
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
    el("span", {}, el("i", { class: "mark" }), "decision"));
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
  return el("div", { id: "pod-ends" }, el("h3", { text: "Pod failures and disruptions" }),
    el("table", {}, el("tr", {}, ...["At", "Pod", "Node", "Outcome", "Containers", "Disrupted by", "Last words"].map((h) => el("th", { text: h }))), ...rows));
}

async function jobPage(key, params) {
  let live = false;
  const render = async () => {
    const query = params.get("incarnation") ? `?incarnation=${params.get("incarnation")}` : "";
    let data;
    try { data = await getJSON(`/api/v1/jobs/${key}${query}`); } catch (e) {
      view.replaceChildren(el("p", { text: `No job ${key}.` }), el("a", { href: "#/", text: "all jobs" }));
      return;
    }
    const t = data.timeline;
    asOf = data.as_of;
    live = t.finished == null && t.deleted == null;
    const facts = el("div", { class: "facts" }, ...[
      ["queue", t.queue], ["submitted", when(t.submitted)], ["queue wait", seconds(t.queue_wait)],
      ["run time", seconds(t.run_time + (t.running_since != null ? until(t) - t.running_since : 0))],
      ["retries", t.retry_count], ["version", t.version], ["uid", t.uid],
      ["incarnation", `${t.incarnation} of ${data.incarnations.length}`],
    ].map(([k, v]) => el("span", {}, `${k} `, el("b", { text: String(v) }))));
    const t0 = origin(t);
    const decisions = el("table", { id: "decisions" }, el("tr", {}, ...["At", "Time", "Decision", "Action", "Trigger", "Policy", "Detail"].map((h) => el("th", { text: h }))));
    for (const d of t.decisions) {
      decisions.append(el("tr", {}, el("td", { text: `+${seconds(d.time - t0)}` }), el("td", { text: when(d.time) }),
        el("td", { text: d.type }), el("td", { text: d.action }), el("td", { text: d.trigger }), el("td", { text: d.policy }),
        el("td", { text: [d.pod, d.reason, d.exit_code != null ? `exit ${d.exit_code}` : "", ...failureParts(d)].filter(Boolean).join(" ") })));
    }
    const why = t.message ? el("p", { id: "why", class: "why" }, el("b", { text: `${t.reason}: ` }), t.message) : "";
    view.replaceChildren(
      el("p", {}, el("a", { href: "#/", text: "← jobs" })),
      el("h2", {}, `${t.key} `, badge(t.phase)),
      why, facts, el("div", { class: "panel" }, legend(t), gantt(t)),
      podEnds(t, t0),
      el("h3", { text: "Decisions" }),
      t.decisions.length ? decisions : el("p", { class: "muted empty", text: "No decisions: the controller has taken no action (restart, abort, complete...) on this job." }),
      el("p", {}, el("a", { href: `/api/v1/jobs/${key}/events`, text: "raw events (audit trail)" }), " · ",
        el("a", { id: "whatif-link", href: `#/jobs/${key}/whatif`, text: "what if… (replay under another policy)" })));
    for (const words of view.querySelectorAll("pre.last-words")) words.scrollTop = words.scrollHeight;  // the end first
  };
  follow(`job=${encodeURIComponent(key)}`, render);
  // a running job's bars grow with the log's clock, which other jobs' events move on
  ticker = setInterval(() => { if (!document.hidden && live) render(); }, 5000);
  return render();
}

// What if: the job's recorded facts replayed under spec changes typed as `--set` lines.
function whatIfPage(key) {
  if (stream) { stream.close(); stream = null; }  // a replay of the record: nothing live to follow
  const editor = el("textarea", { id: "whatif-set", rows: "4", cols: "70", spellcheck: "false" });
  editor.value = "spec.maxRetry=5";
  const result = el("div", { id: "whatif-result" });
  const run = async () => {
    const sets = editor.value.split("\n").map((line) => line.trim()).filter(Boolean);
    const response = await fetch(`/api/v1/jobs/${key}/whatif`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ set: sets }) });
    const data = await readJSON(response);
    if (!response.ok) { result.replaceChildren(el("p", { class: "error", text: data.error })); return; }
    result.replaceChildren(...whatIfView(data));
  };
  view.replaceChildren(
    el("p", {}, el("a", { href: `#/jobs/${key}`, text: `← ${key}` })),
    el("h2", { text: `What if: ${key}` }),
    el("p", { class: "muted", text: "One spec change per line, e.g. spec.maxRetry=5 or spec.tasks[worker].policies=[{\"event\":\"PodFailed\",\"action\":\"RestartTask\"}]" }),
    editor, el("p", {}, el("button", { id: "whatif-run", onclick: run, text: "replay" })), result);
  return run();
}

function whatIfView(w) {
  const t0 = w.steps.length ? w.steps[0].time : 0;
  const table = el("table", { id: "whatif-steps" }, el("tr", {}, ...["At", "Fact", "Recorded", "Alternative"].map((h) => el("th", { text: h }))));
  for (const s of w.steps) {
    table.append(el("tr", { class: s.observation === w.divergence ? "divergence" : "" },
      el("td", { text: `+${seconds(s.time - t0)}` }), el("td", { text: s.fact }),
      el("td", { text: s.recorded.join(", ") || "—" }), el("td", { text: s.alternative.join(", ") || "—" })));
  }
  const verdict = w.divergence == null
    ? `Identical: the change decides nothing differently (${w.recorded_phase}).`
    : `Diverges at ${w.divergence}: recorded, the job ends ${w.recorded_phase} after ${w.recorded_restarts} restart(s); ` +
      `the alternative is ${w.alternative_phase} there after ${w.alternative_restarts}, and unknown beyond.`;
  const known = w.known_after.map((k) => el("li", { text: `${k.pod} failed at +${seconds(k.time - t0)} (exit ${k.exit_code}${k.container ? ` in ${k.container}` : ""}, ${k.reason || "no reason"}) in the recorded run` }));
  const whys = [["recorded", w.recorded_why], ["alternative", w.alternative_why]].filter(([, why]) => why && w.divergence != null)
    .map(([run, why]) => el("li", { text: `${run}: ${why}` }));
  return [el("p", { id: "whatif-verdict", text: verdict }), whys.length ? el("ul", { id: "whatif-why" }, ...whys) : "", table,
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

window.addEventListener("hashchange", route);
route();
