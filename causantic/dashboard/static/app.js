// causantic dashboard: plain JavaScript, no build step, no dependencies.
//
// Safety rule: everything that comes from memory is transcript text and is inserted with
// text nodes only (el()/svg() below turn strings into document.createTextNode). Nothing here
// assigns innerHTML, outerHTML or insertAdjacentHTML, and the page's CSP forbids inline script.
"use strict";

const SVG_NS = "http://www.w3.org/2000/svg";
const TOKEN = new URLSearchParams(location.search).get("token") || "";
const EDGE_COLORS = { next: "#8a94a6", brief: "#2f6fde", debrief: "#1f9d55", continues: "#d97706" };
const HOOKS = ["session-start", "user-prompt-submit", "pre-compact", "session-end"];

function append(node, ...children) {
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    node.appendChild(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

function setAttrs(node, attrs) {
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === null || value === undefined || value === false) continue;
    if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else if (key === "class") node.setAttribute("class", value);
    else node.setAttribute(key, String(value));
  }
  return node;
}

function el(tag, attrs, ...children) {
  return append(setAttrs(document.createElement(tag), attrs), children);
}

function svg(tag, attrs, ...children) {
  return append(setAttrs(document.createElementNS(SVG_NS, tag), attrs), children);
}

async function api(name, params) {
  const url = new URL("/api/" + name, location.origin);
  for (const [k, v] of Object.entries(params || {})) if (v !== undefined && v !== "") url.searchParams.set(k, v);
  if (TOKEN) url.searchParams.set("token", TOKEN);
  const response = await fetch(url, { credentials: "same-origin" });
  const data = await response.json();
  if (!response.ok) throw new Error(data.error || response.statusText);
  return data;
}

const when = (iso) => (iso ? String(iso).slice(0, 16).replace("T", " ") : "–");
const day = (iso) => (iso ? String(iso).slice(0, 10) : "–");
const short = (id) => String(id || "").slice(0, 8);
const fmt = (n) => Number(n || 0).toLocaleString("en");

function link(hash, ...children) {
  return el("a", { href: "#" + hash }, ...children);
}

function sessionLink(sessionId, project) {
  return link("timeline/" + encodeURIComponent(sessionId), short(sessionId), project ? " · " + project : "");
}

function chunkText(text, lines) {
  return el("pre", { class: "chunk-text" + (lines ? " clamp" : ""), onclick: (e) => e.currentTarget.classList.toggle("clamp") }, text);
}

// -- routing ------------------------------------------------------------------------------

const views = { overview, timeline, search, topics, memories: optional("memories"), lessons: optional("lessons") };

function route() {
  const raw = location.hash.replace(/^#/, "") || "overview";
  const [path, query] = raw.split("?");
  const [name, ...rest] = path.split("/");
  return { name: views[name] ? name : "overview", arg: rest.map(decodeURIComponent).join("/"), params: new URLSearchParams(query || "") };
}

async function render() {
  const r = route();
  const main = document.getElementById("view");
  for (const a of document.querySelectorAll("#nav a")) a.classList.toggle("active", a.dataset.view === r.name);
  main.dataset.view = r.name;
  main.dataset.state = "loading";
  const body = el("div", {});
  try {
    await views[r.name](body, r.arg, r.params);
    main.replaceChildren(body);
    main.dataset.state = "ready";
  } catch (err) {
    main.replaceChildren(el("p", { class: "error" }, "Could not load: " + err.message));
    main.dataset.state = "error";
  }
}

window.addEventListener("hashchange", render);
window.addEventListener("DOMContentLoaded", render);

// -- charts -------------------------------------------------------------------------------

function barChart(title, rows, key, color) {
  const width = 520, height = 150, pad = 28;
  const max = Math.max(1, ...rows.map((r) => r[key]));
  const step = rows.length ? (width - pad) / rows.length : 0;
  const bars = rows.map((r, i) => {
    const h = Math.round(((height - pad) * r[key]) / max);
    return svg("rect", { x: pad + i * step + 1, y: height - pad - h, width: Math.max(2, step - 2), height: h, fill: color, class: "bar" },
      svg("title", {}, `week of ${r.week}: ${fmt(r[key])} ${key}`));
  });
  const every = Math.max(1, Math.ceil(rows.length / 6));
  const labels = rows.map((r, i) => (i % every === 0
    ? svg("text", { x: pad + i * step + 1, y: height - pad + 14, class: "axis" }, r.week.slice(5)) : null));
  return el("figure", { class: "chart" },
    el("figcaption", {}, title),
    svg("svg", { viewBox: `0 0 ${width} ${height}`, width, height, role: "img", "aria-label": title },
      svg("line", { x1: pad, y1: height - pad, x2: width, y2: height - pad, class: "axis-line" }),
      svg("text", { x: 0, y: 12, class: "axis" }, fmt(max)),
      bars, labels));
}

// -- overview -----------------------------------------------------------------------------

async function overview(root) {
  const data = await api("overview");
  const s = data.stats;
  document.getElementById("db").textContent = data.db;
  const card = (label, value, note) => el("div", { class: "card" }, el("div", { class: "value" }, fmt(value)), el("div", { class: "label" }, label), note ? el("div", { class: "muted small" }, note) : null);
  const kinds = Object.entries(s.edge_kinds || {}).map(([k, v]) => `${k} ${fmt(v)}`).join(", ");
  append(root, [
    el("h1", {}, "Overview"),
    el("p", { class: "muted" }, `Memory from ${when(s.first)} to ${when(s.last)} · schema ${s.schema_version}`),
    el("div", { class: "cards", id: "counts" },
      card("projects", s.projects), card("sessions", s.sessions), card("chunks", s.chunks, `${fmt(s.subagent_chunks)} from sub-agents`),
      card("edges", s.edges, kinds), card("vectors", s.vectors), card("topics", s.clusters),
      card("secrets redacted", s.redactions), card("forgotten", s.forgotten),
      Object.entries(data.optional).map(([name, n]) => card(name, n))),
    el("div", { class: "charts" },
      barChart("Chunks per week", data.growth, "chunks", "#2f6fde"),
      barChart("New sessions per week", data.growth, "sessions", "#1f9d55")),
    el("h2", {}, "Redactions"),
    Object.keys(data.redactions).length
      ? el("table", {}, el("tr", {}, el("th", {}, "project"), el("th", {}, "secrets redacted")),
        Object.entries(data.redactions).map(([p, n]) => el("tr", {}, el("td", {}, p), el("td", { class: "num" }, fmt(n)))))
      : el("p", { class: "muted" }, "No secrets were found in what was ingested."),
    el("h2", {}, "Hook health"),
    el("table", { id: "hooks" },
      el("tr", {}, ["hook", "status", "last run", "runs", "failures", "last error"].map((h) => el("th", {}, h))),
      HOOKS.concat(Object.keys(data.hooks).filter((h) => !HOOKS.includes(h))).map((name) => {
        const h = data.hooks[name];
        if (!h) return el("tr", {}, el("td", {}, name), el("td", { class: "muted" }, "never ran"), el("td", {}), el("td", {}), el("td", {}), el("td", {}));
        const ok = h.success !== false;
        const error = h.error || (h.last_failure && h.last_failure.error) || "";
        return el("tr", {}, el("td", {}, name), el("td", { class: ok ? "ok" : "bad" }, ok ? "ok" : "failing"),
          el("td", {}, when(h.last_run)), el("td", { class: "num" }, fmt(h.runs)), el("td", { class: "num" }, fmt(h.failures)),
          el("td", { class: "small" }, error));
      })),
  ]);
}

// -- timeline -----------------------------------------------------------------------------

async function timeline(root, sessionId) {
  const data = await api("timeline");
  const lanes = new Map();
  for (const s of data.sessions) {
    if (!lanes.has(s.project)) lanes.set(s.project, []);
    lanes.get(s.project).push(s);
  }
  const times = data.sessions.flatMap((s) => [Date.parse(s.start_time), Date.parse(s.end_time)]).filter((t) => !isNaN(t));
  const t0 = Math.min(...times), t1 = Math.max(...times, t0 + 1);
  const width = 900, label = 150, laneH = 26;
  const x = (iso) => label + ((Date.parse(iso) - t0) / (t1 - t0)) * (width - label - 10);
  const rows = [...lanes.entries()].map(([project, sessions], i) => {
    const y = i * laneH;
    return svg("g", { class: "lane" },
      svg("text", { x: 0, y: y + 17, class: "lane-label" }, project.length > 20 ? project.slice(0, 19) + "…" : project),
      svg("line", { x1: label, y1: y + 13, x2: width - 10, y2: y + 13, class: "lane-line" }),
      sessions.map((s) => {
        const left = x(s.start_time), w = Math.max(7, x(s.end_time) - left);
        return svg("a", { href: "#timeline/" + encodeURIComponent(s.session_id) },
          svg("rect", { x: left, y: y + 4, width: w, height: 18, rx: 3, class: "session" + (s.session_id === sessionId ? " selected" : ""), "data-session": s.session_id },
            svg("title", {}, `${s.title || short(s.session_id)}\n${when(s.start_time)} → ${when(s.end_time)}\n${s.chunks} chunks`)));
      }));
  });
  append(root, [
    el("h1", {}, "Timeline"),
    el("p", { class: "muted" }, `${lanes.size} projects, ${data.sessions.length} sessions, ${day(new Date(t0).toISOString())} – ${day(new Date(t1).toISOString())}. Click a session to open its chunks.`),
    svg("svg", { viewBox: `0 0 ${width} ${lanes.size * laneH + 4}`, width, height: lanes.size * laneH + 4, id: "lanes" }, rows),
  ]);
  if (sessionId) append(root, await sessionView(sessionId));
  else {
    const recent = [...data.sessions].sort((a, b) => (a.end_time < b.end_time ? 1 : -1)).slice(0, 12);
    append(root, el("h2", {}, "Recent sessions"), el("table", { id: "recent" },
      el("tr", {}, ["session", "project", "title", "from", "to", "chunks"].map((h) => el("th", {}, h))),
      recent.map((s) => el("tr", {}, el("td", {}, sessionLink(s.session_id)), el("td", {}, s.project), el("td", {}, s.title || ""),
        el("td", {}, when(s.start_time)), el("td", {}, when(s.end_time)), el("td", { class: "num" }, s.chunks)))));
  }
}

async function sessionView(sessionId) {
  const g = await api("session", { id: sessionId });
  const streams = [...new Set(g.chunks.map((c) => c.agent_id))];
  const pos = new Map();
  const rowH = 30, colW = 150, nodeW = 120, top = g.linked.length ? 40 : 10;
  g.chunks.forEach((c, i) => pos.set(c.id, { x: 10 + streams.indexOf(c.agent_id) * colW, y: top + i * rowH, chunk: c }));
  g.linked.forEach((c, i) => pos.set(c.id, { x: 10 + (streams.length + i) * colW, y: 5, outside: c }));
  const detail = el("div", { class: "detail", id: "chunk-detail" }, el("p", { class: "muted" }, "Click a chunk to read it."));
  const show = (c) => {
    detail.replaceChildren(
      el("h3", {}, `${c.kind === "summary" ? "summary" : "turn " + c.turn + (c.part ? "." + c.part : "")}${c.agent_id ? " · sub-agent " + short(c.agent_id) : ""}`),
      el("p", { class: "muted small" }, `${when(c.start_time)} → ${when(c.end_time)} · ${c.tokens} tokens · ${short(c.id)}`),
      chunkText(c.text, false));
  };
  const edgeShapes = g.edges.map((e) => {
    const a = pos.get(e.src), b = pos.get(e.dst);
    if (!a || !b) return null;
    const x1 = a.x + nodeW / 2, y1 = a.y + 10, x2 = b.x + nodeW / 2, y2 = b.y + 10;
    const bend = e.kind === "next" && a.x === b.x ? 0 : 40;
    const up = y2 < y1 ? -1 : 1;  // leave and enter on the facing sides
    return svg("path", { d: `M${x1},${y1 + 10 * up} C${x1 + bend},${(y1 + y2) / 2} ${x2 + bend},${(y1 + y2) / 2} ${x2},${y2 - 10 * up}`,
      class: "edge edge-" + e.kind, stroke: EDGE_COLORS[e.kind] || "#999", "stroke-opacity": e.weight < 1 ? 0.4 : 0.9,
      "marker-end": EDGE_COLORS[e.kind] ? `url(#arrow-${e.kind})` : null },
      svg("title", {}, `${e.kind}${e.weight < 1 ? " (weakened)" : ""}`));
  });
  const nodes = [...pos.values()].map((p) => {
    if (p.outside) {
      return svg("a", { href: "#timeline/" + encodeURIComponent(p.outside.session_id) },
        svg("rect", { x: p.x, y: p.y, width: nodeW, height: 20, rx: 4, class: "node outside" }),
        svg("text", { x: p.x + 6, y: p.y + 14, class: "node-label" }, `↗ ${short(p.outside.session_id)} ${p.outside.project}`.slice(0, 22)));
    }
    const c = p.chunk;
    return svg("g", { class: "node-group", onclick: () => show(c), "data-chunk": c.id },
      svg("rect", { x: p.x, y: p.y, width: nodeW, height: 20, rx: 4, class: "node " + c.kind + (c.agent_id ? " sub" : "") }),
      svg("text", { x: p.x + 6, y: p.y + 14, class: "node-label" }, `${c.kind === "summary" ? "summary" : "turn " + c.turn}${c.part ? "." + c.part : ""} ${c.start_time.slice(11, 16)}`),
      svg("title", {}, c.text.slice(0, 300)));
  });
  const height = top + g.chunks.length * rowH + 10;
  const width = 20 + (streams.length + g.linked.length) * colW;
  if (g.chunks.length) show(g.chunks[0]);
  return el("section", { id: "session", "data-session": sessionId },
    el("h2", {}, `Session ${short(sessionId)}`, g.project ? ` · ${g.project}` : ""),
    el("p", { class: "muted" }, [g.title, g.git_branch ? "branch " + g.git_branch : null, `${g.chunks.length} chunks, ${g.edges.length} edges`].filter(Boolean).join(" · ")),
    el("div", { class: "legend" }, Object.entries(EDGE_COLORS).map(([k, c]) => el("span", { class: "key" }, el("i", { class: "swatch swatch-" + k }), k))),
    el("div", { class: "split" },
      el("div", { class: "graph" }, svg("svg", { width, height, viewBox: `0 0 ${width} ${height}`, id: "graph" },
        streams.map((sid, i) => svg("text", { x: 10 + i * colW, y: top - 6 + (g.linked.length ? 0 : 4), class: "axis" }, sid ? "sub-agent " + short(sid) : (g.linked.length ? "" : ""))),
        svg("defs", {}, Object.entries(EDGE_COLORS).map(([kind, color]) => svg("marker", {
          id: "arrow-" + kind, viewBox: "0 0 10 10", refX: 9, refY: 5, markerWidth: 7, markerHeight: 7, orient: "auto-start-reverse" },
        svg("path", { d: "M0,0 L10,5 L0,10 z", fill: color })))),
        edgeShapes, nodes)),
      detail));
}

// -- search -------------------------------------------------------------------------------

async function search(root, _arg, params) {
  const q = params.get("q") || "", kind = params.get("kind") || "search", mode = params.get("mode") || "hybrid";
  const project = params.get("project") || "";
  const projects = (await api("projects")).projects;
  const input = el("input", { type: "search", name: "q", value: q, placeholder: "an error, a file, a decision…", autofocus: true, id: "q" });
  const select = (name, value, options) => el("select", { name, id: name }, options.map(([v, label]) => {
    const o = el("option", { value: v }, label); if (v === value) o.selected = true; return o;
  }));
  const form = el("form", { id: "search-form", onsubmit: (e) => {
    e.preventDefault();
    const f = new FormData(e.target);
    const p = new URLSearchParams();
    for (const [k, v] of f.entries()) if (v) p.set(k, v);
    location.hash = "search?" + p.toString();
  } },
    input,
    select("kind", kind, [["search", "search"], ["recall", "recall (what led here)"], ["predict", "predict (what came next)"]]),
    select("mode", mode, [["hybrid", "hybrid"], ["keyword", "keyword"], ["vector", "vector"]]),
    select("project", project, [["", "all projects"], ...projects.map((p) => [p.project, p.project])]),
    el("button", { type: "submit" }, "Go"));
  append(root, el("h1", {}, "Search"), form);
  if (!q) {
    append(root, el("p", { class: "muted" }, "The same answers as the command line: search ranks chunks; recall and predict follow the causal chain backward or forward from the best match."));
    return;
  }
  const answer = await api(kind, { q, mode: kind === "search" ? mode : undefined, project });
  const summary = el("p", { class: "summary", id: "answer-summary" },
    `${kind} · mode ${answer.mode} · ${answer.results.length} results · ${answer.tokens} tokens · ${Math.round(answer.duration_ms)} ms`);
  append(root, summary, answer.notice ? el("p", { class: "notice" }, answer.notice) : null);
  if (!answer.results.length) {
    append(root, el("p", { class: "muted" }, "Nothing found."));
    return;
  }
  const header = (r) => el("div", { class: "result-head" },
    r.seed ? el("span", { class: "seed", title: "matched the query" }, "◆") : null,
    r.sources.map((s) => el("span", { class: "badge badge-" + s }, s)),
    el("span", { class: "score" }, "score " + Number(r.score).toFixed(3)), " ",
    sessionLink(r.session_id, r.project), " · ", when(r.start_time));
  if (kind === "search") {
    append(root, el("ol", { class: "results", id: "results" }, answer.results.map((r) =>
      el("li", { class: "result", "data-session": r.session_id }, header(r), chunkText(r.text, true)))));
  } else {
    append(root, el("p", { class: "muted" }, kind === "recall" ? "How we got here, oldest first:" : "What came next, oldest first:"),
      el("div", { class: "narrative", id: "results" }, answer.results.map((r, i) => [
        i ? el("div", { class: "arrow" }, "↓") : null,
        el("div", { class: "step result" + (r.seed ? " seed-step" : ""), "data-session": r.session_id }, header(r), chunkText(r.text, true))])));
  }
}

// -- topics -------------------------------------------------------------------------------

async function topics(root, topicId) {
  if (topicId) {
    const view = await api("topic", { id: topicId });
    const t = view.topic;
    append(root, el("h1", {}, `Topic ${t.id}: ${t.name}`),
      el("p", { class: "muted" }, `${t.size} chunks · ${when(t.first)} → ${when(t.last)} · ${Object.keys(t.projects).join(", ")}`),
      el("p", {}, link("topics", "← all topics")),
      el("table", { id: "topic-chunks" }, el("tr", {}, ["time", "session", "first line"].map((h) => el("th", {}, h))),
        view.chunks.map((c) => el("tr", {}, el("td", {}, when(c.start_time)), el("td", {}, sessionLink(c.session_id, c.project)), el("td", { class: "first-line" }, c.first_line)))));
    return;
  }
  const data = await api("topics");
  append(root, el("h1", {}, "Topics"));
  if (!data.topics.length) {
    append(root, el("p", { class: "muted", id: "no-topics" }, data.reason || "No topics yet."));
    return;
  }
  const max = Math.max(...data.topics.map((t) => t.size));
  append(root, el("p", { class: "muted" }, `${data.topics.length} topics, built ${when(data.built_at)} from ${fmt(data.chunks)} chunk vectors.`),
    el("table", { id: "topic-list" },
      el("tr", {}, ["#", "name", "size", "span", "projects"].map((h) => el("th", {}, h))),
      data.topics.map((t) => el("tr", {},
        el("td", { class: "num" }, t.id),
        el("td", {}, link("topics/" + t.id, t.name)),
        el("td", {}, svg("svg", { width: 120, height: 12 }, svg("rect", { x: 0, y: 1, height: 10, width: Math.max(2, (110 * t.size) / max), class: "size-bar" })), " ", t.size),
        el("td", {}, `${day(t.first)} → ${day(t.last)}`),
        el("td", {}, Object.entries(t.projects).map(([p, n]) => el("span", { class: "chip" }, `${p} ${n}`)))))));
}

// -- memories / lessons (tables other features add) ----------------------------------------

function optional(name) {
  return async (root) => {
    const data = await api("table", { name });
    append(root, el("h1", {}, name[0].toUpperCase() + name.slice(1)));
    if (!data.available) {
      append(root, el("p", { class: "muted", id: "unavailable" }, `This memory has no ${name} yet: the ${name} table comes with a newer causantic. Nothing to show.`));
      return;
    }
    append(root, el("p", { class: "muted" }, `${fmt(data.total)} rows${data.total > data.rows.length ? `, newest ${data.rows.length} shown` : ""}.`),
      el("table", { id: name + "-table" }, el("tr", {}, data.columns.map((c) => el("th", {}, c))),
        data.rows.map((r) => el("tr", {}, r.map((v) => el("td", { class: "cell" }, v === null ? "" : String(v)))))));
  };
}
