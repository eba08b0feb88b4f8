// The sessiondb dashboard: plain JavaScript over the JSON API, no build step.
// Everything a store returns is inserted as text (textContent), except search snippets,
// whose <mark>…</mark> highlights are restored after escaping everything else.
"use strict";

const PAGE = 100;          // sessions per sidebar page
const MESSAGES = 200;      // messages per transcript page
const state = { profile: null, cursor: null, current: null, oldest: null, compacted: false, loading: false };
const $ = (id) => document.getElementById(id);

// --- the API ------------------------------------------------------------------------

// Every call carries the token when there is one; anything that changes data is sent as
// JSON, body or not, because the service refuses any other state-changing request.
async function request(path, options = {}) {
  const headers = Object.assign({}, options.headers || {});
  const token = sessionStorage.getItem("sessiondb-token");
  if (token) headers["Authorization"] = "Bearer " + token;
  if (options.method && options.method !== "GET") headers["Content-Type"] = "application/json";
  if (options.body && typeof options.body !== "string") {
    options = Object.assign({}, options, { body: JSON.stringify(options.body) });
  }
  const response = await fetch(path, Object.assign({}, options, { headers }));
  if (response.status === 401) {
    const given = window.prompt("This sessiondb service needs its token:");
    if (given) {
      sessionStorage.setItem("sessiondb-token", given.trim());
      return request(path, options);
    }
  }
  if (!response.ok) {
    const body = await response.json().catch(() => ({}));
    const error = new Error(body.message || response.statusText);
    error.body = body;
    throw error;
  }
  return response;
}

async function api(path, options = {}) {
  const response = await request(path, options);
  return response.json().catch(() => ({}));
}

// A link cannot send the token, so an export is fetched with it and handed to the browser
// as a download of the fetched bytes.
async function download(path, name) {
  const blob = await (await request(path)).blob();
  const url = URL.createObjectURL(blob);
  const link = el("a", { href: url, download: name });
  document.body.append(link);
  link.click();
  link.remove();
  setTimeout(() => URL.revokeObjectURL(url), 60000);
}

function query(params) {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== null && v !== undefined && v !== "") q.set(k, v);
  return q.toString();
}

// --- small DOM helpers ----------------------------------------------------------------

function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (k === "class") node.className = v;
    else if (k === "text") node.textContent = v;
    else if (k.startsWith("on")) node.addEventListener(k.slice(2), v);
    else if (v !== null && v !== undefined && v !== false) node.setAttribute(k, v === true ? "" : v);
  }
  for (const child of children) if (child !== null && child !== undefined) node.append(child);
  return node;
}

function escapeHTML(text) {
  return String(text).replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" }[c]));
}

// Escape the whole snippet, then give back only the exact <mark> and </mark> the library added.
function highlighted(snippet) {
  return escapeHTML(snippet).replace(/&lt;(\/?)mark&gt;/g, "<$1mark>");
}

function when(ts) {
  if (!ts) return "";
  const d = new Date(ts * 1000);
  return d.toLocaleString(undefined, { dateStyle: "medium", timeStyle: "short" });
}

function showError(where, error) {
  where.replaceChildren(el("div", { class: "error", text: error.message || String(error) }));
}

// --- profiles ---------------------------------------------------------------------------

async function loadProfiles() {
  const { items } = await api("/api/profiles");
  const select = $("profile");
  select.replaceChildren(...items.map((p) => el("option", { value: p.name, text: p.name })));
  let chosen = new URLSearchParams(location.hash.slice(1)).get("profile");
  if (!items.some((p) => p.name === chosen)) chosen = null;
  if (!chosen) {
    // The first profile that has sessions (the demo of `make run` lives in `demo`).
    for (const p of items) {
      const page = await api("/api/sessions?" + query({ profile: p.name, limit: 1, include_archived: true, include_hidden: true }));
      if (page.items.length) { chosen = p.name; break; }
    }
  }
  state.profile = chosen || items[0].name;
  select.value = state.profile;
}

// --- the sidebar ------------------------------------------------------------------------

function sessionItem(s) {
  const flags = [];
  if (s.pinned) flags.push("pinned");
  if (s.archived) flags.push("archived");
  if (s.hidden) flags.push("hidden");
  const li = el("li", { "data-id": s.id, "data-testid": "session", title: s.id, onclick: () => openSession(s.id) },
    el("div", { class: "title", text: s.title || "Untitled session" }),
    el("div", { class: "meta" },
      document.createTextNode(`${s.source} · ${s.message_count} messages · ${when(s.last_activity_at || s.started_at)}`),
      ...flags.map((f) => el("span", { class: "flag", text: f }))));
  if (state.current === s.id) li.classList.add("current");
  return li;
}

function listParams(extra) {
  return query(Object.assign({
    profile: state.profile,
    include_archived: $("show-archived").checked,
    include_hidden: $("show-hidden").checked,
  }, extra));
}

async function loadSessions() {
  $("results").hidden = true;
  $("lists").hidden = false;
  const [pinned, recent] = await Promise.all([
    api("/api/sessions?" + listParams({ pinned: true, limit: 1000 })),
    api("/api/sessions?" + listParams({ pinned: false, limit: PAGE })),
  ]);
  $("pinned").replaceChildren(...pinned.items.map(sessionItem));
  $("recent").replaceChildren(...recent.items.map(sessionItem));
  state.cursor = recent.cursor;
  $("more").hidden = !state.cursor;
}

async function loadMore() {
  if (!state.cursor || state.loading) return;
  state.loading = true;
  try {
    const page = await api("/api/sessions?" + listParams({ pinned: false, limit: PAGE, cursor: state.cursor }));
    $("recent").append(...page.items.map(sessionItem));
    state.cursor = page.cursor;
    $("more").hidden = !state.cursor;
  } finally {
    state.loading = false;
  }
}

// --- search -----------------------------------------------------------------------------

async function search(text) {
  if (!text.trim()) return loadSessions();
  const { items } = await api("/api/search?" + query({ profile: state.profile, q: text, limit: 50 }));
  const results = $("results");
  const nodes = items.map((hit) => {
    const snippet = el("div", { class: "snippet" });
    snippet.innerHTML = highlighted(hit.snippet);  // escaped; only <mark> survives
    return el("div", { class: "hit", "data-testid": "hit", onclick: () => openSession(hit.session_id, hit.message_id) },
      el("div", { class: "title", text: hit.session_title || "Untitled session" }),
      el("div", { class: "meta", text: `${hit.role} · ${when(hit.timestamp)}${hit.compacted ? " · compacted" : ""}` }),
      snippet);
  });
  results.replaceChildren(el("h2", { class: "section-title", text: `${items.length} match${items.length === 1 ? "" : "es"}` }), ...nodes);
  results.hidden = false;
  $("lists").hidden = true;
}

// --- one session --------------------------------------------------------------------------

function messageNode(m) {
  const body = [];
  const text = typeof m.content === "string" ? m.content
    : Array.isArray(m.content) ? m.content.map((p) => (p && typeof p === "object" ? p.text || "" : String(p))).join("\n")
    : "";
  if (m.role === "tool") {
    body.push(el("details", {}, el("summary", { text: `tool output${m.tool_name ? " · " + m.tool_name : ""} (${text.length} characters)` }),
      el("pre", { text })));
  } else if (text) {
    body.push(el("div", { class: "text", text }));
  }
  if (m.reasoning) {
    body.push(el("details", {}, el("summary", { text: "reasoning" }), el("pre", { text: m.reasoning })));
  }
  for (const call of m.tool_calls || []) {
    const fn = (call && call.function) || call || {};
    const name = fn.name || call.name || "tool";
    let args = fn.arguments !== undefined ? fn.arguments : call;
    if (typeof args !== "string") args = JSON.stringify(args, null, 2);
    body.push(el("details", { class: "call" }, el("summary", { text: `tool call · ${name}` }), el("pre", { text: args })));
  }
  return el("div", { class: `msg ${m.role}`, "data-testid": "message", "data-id": m.id, "data-state": m.state },
    el("div", { class: "role", text: `${m.role} · ${when(m.timestamp)}${m.state === "compacted" ? " · compacted" : ""}` }), ...body);
}

// Consecutive compacted messages fold into one <details>, so the live conversation reads first.
function renderMessages(messages) {
  const fragment = document.createDocumentFragment();
  let fold = null;
  for (const m of messages) {
    if (m.state === "compacted") {
      if (!fold) {
        fold = el("details", { class: "compacted", "data-testid": "compacted" }, el("summary"));
        fold.count = 0;
        fragment.append(fold);
      }
      fold.append(messageNode(m));
      fold.count += 1;
      fold.firstChild.textContent = `${fold.count} compacted message${fold.count === 1 ? "" : "s"} (archived history)`;
    } else {
      fold = null;
      fragment.append(messageNode(m));
    }
  }
  return fragment;
}

async function openSession(id) {
  state.current = id;
  for (const li of document.querySelectorAll(".sessions li")) li.classList.toggle("current", li.dataset.id === id);
  const view = $("view");
  try {
    const p = { profile: state.profile };
    const [s, lineage, usage, page] = await Promise.all([
      api(`/api/sessions/${encodeURIComponent(id)}?` + query(p)),
      api(`/api/sessions/${encodeURIComponent(id)}/lineage?` + query(p)),
      api(`/api/sessions/${encodeURIComponent(id)}/usage?` + query(p)),
      api(`/api/sessions/${encodeURIComponent(id)}/messages?` + query(Object.assign({ order: "latest", limit: MESSAGES, include_compacted: state.compacted }, p))),
    ]);
    if (state.current !== id) return;
    view.replaceChildren(header(s, lineage.items, usage));
    const transcript = el("div", { id: "transcript", "data-testid": "transcript" });
    const older = el("button", { class: "older", "data-testid": "older", text: "Load older messages", onclick: () => loadOlder(id) });
    older.hidden = page.next_before === null;
    state.oldest = page.next_before;
    transcript.append(renderMessages(page.items));
    view.append(older, transcript);
    if (!page.items.length) view.append(el("p", { class: "empty", text: "No messages." }));
    view.scrollTop = view.scrollHeight;  // the newest messages first in view
  } catch (error) {
    showError(view, error);
  }
}

async function loadOlder(id) {
  if (state.oldest === null) return;
  const page = await api(`/api/sessions/${encodeURIComponent(id)}/messages?` + query({
    profile: state.profile, order: "latest", limit: MESSAGES, before: state.oldest, include_compacted: state.compacted }));
  if (state.current !== id) return;
  const transcript = $("transcript");
  const keep = transcript.scrollHeight;
  transcript.prepend(renderMessages(page.items));
  $("view").scrollTop += transcript.scrollHeight - keep;
  state.oldest = page.next_before;
  document.querySelector(".older").hidden = state.oldest === null;
}

function header(s, lineage, usage) {
  const act = (label, testid, change) => el("button", { "data-testid": testid, text: label, onclick: () => update(s.id, change) });
  const actions = el("div", { class: "actions" },
    act(s.pinned ? "Unpin" : "Pin", "pin", { pinned: !s.pinned }),
    act(s.archived ? "Unarchive" : "Archive", "archive", { archived: !s.archived }),
    act(s.hidden ? "Unhide" : "Hide", "hide", { hidden: !s.hidden }),
    el("button", { "data-testid": "rename", text: "Rename", onclick: () => {
      const title = window.prompt("New title (empty clears it):", s.title || "");
      if (title !== null) update(s.id, { title: title.trim() || null });
    } }),
    el("button", { "data-testid": "toggle-compacted", text: state.compacted ? "Hide compacted history" : "Show compacted history",
      onclick: () => { state.compacted = !state.compacted; openSession(s.id); } }),
    exportButton(s.id, "md", "Export Markdown"),
    exportButton(s.id, "jsonl", "Export JSONL"));
  const chain = el("div", { class: "lineage", "data-testid": "lineage" });
  if (lineage.length > 1) {
    chain.append("lineage: ");
    lineage.forEach((item, i) => {
      if (i) chain.append(" → ");
      chain.append(item.id === s.id ? el("span", { class: "here", text: item.title || item.id })
        : el("a", { text: item.title || item.id, onclick: () => openSession(item.id) }));
    });
  }
  const origin = s.parent_session_id && s.parent_relation !== "compression"
    ? el("div", { class: "lineage" }, `${s.parent_relation || "continues"} of `,
      el("a", { text: s.parent_session_id, onclick: () => openSession(s.parent_session_id) })) : null;
  const totals = el("div", { class: "usage", "data-testid": "usage",
    text: usage.calls ? `usage: ${usage.calls} calls · ${usage.input_tokens.toLocaleString()} in · ${usage.output_tokens.toLocaleString()} out · $${usage.cost_usd.toFixed(4)}`
      : "usage: no model calls recorded" });
  const flags = [s.pinned && "pinned", s.archived && "archived", s.hidden && "hidden", s.ended_at && `ended (${s.end_reason})`].filter(Boolean);
  return el("div", { class: "head" },
    el("h2", { "data-testid": "session-title", text: s.title || "Untitled session" }),
    el("div", { class: "meta", text: `${s.id} · ${s.source} · started ${when(s.started_at)} · ${s.message_count} messages${flags.length ? " · " + flags.join(", ") : ""}` }),
    chain, origin, totals, actions);
}

function exportButton(id, format, label) {
  const path = `/api/sessions/${encodeURIComponent(id)}/export?` + query({ profile: state.profile, format });
  return el("button", { "data-testid": `export-${format}`, text: label,
    onclick: () => download(path, `${id}.${format}`).catch((error) => window.alert(error.message)) });
}

async function update(id, change) {
  try {
    await api(`/api/sessions/${encodeURIComponent(id)}?` + query({ profile: state.profile }), { method: "PATCH", body: change });
    await Promise.all([loadSessions(), openSession(id)]);
  } catch (error) {
    window.alert(error.message);
  }
}

// --- the doctor ---------------------------------------------------------------------------

async function checkHealth() {
  const badge = $("health");
  try {
    const report = await api("/api/doctor?" + query({ profile: state.profile }));
    badge.className = "badge " + (report.healthy ? "ok" : report.damage === "none" ? "warn" : "bad");
    badge.textContent = report.healthy ? "healthy" : report.damage === "none" ? "attention" : `damage: ${report.damage}`;
    badge.report = report;
  } catch (error) {
    badge.className = "badge bad";
    badge.textContent = "unreachable";
    badge.report = { error: error.message };
  }
}

function openDoctor() {
  const report = $("health").report || {};
  const rows = [];
  const show = (k, v) => rows.push(el("dt", { text: k }), el("dd", { text: v }));
  if (report.error) show("error", report.error);
  for (const key of ["path", "damage", "healthy", "sqlite_version", "journal_mode", "filesystem", "size", "wal_bytes", "free_pages", "spool_pending"]) {
    if (key in report) show(key, String(report[key]));
  }
  if (report.integrity) show("integrity", `${report.integrity.check || "?"}: ${(report.integrity.errors || []).length ? "errors" : "ok"}`);
  if (report.holders) show("holders", report.holders.join(", ") || "none");
  for (const key of ["problems", "findings", "steps"]) {
    if (report[key] && report[key].length) show(key, report[key].join("\n"));
  }
  $("doctor-body").replaceChildren(el("dl", {}, ...rows));
  $("doctor").showModal();
}

// --- wiring -------------------------------------------------------------------------------

async function switchProfile(name) {
  state.profile = name;
  state.current = null;
  location.hash = query({ profile: name });
  $("view").replaceChildren(el("p", { class: "empty", text: "Pick a session, or search." }));
  $("search").value = "";
  await Promise.all([loadSessions(), checkHealth()]);
}

async function start() {
  try {
    await loadProfiles();
    await Promise.all([loadSessions(), checkHealth()]);
  } catch (error) {
    showError($("view"), error);
  }
  $("profile").addEventListener("change", (e) => switchProfile(e.target.value));
  $("search-form").addEventListener("submit", (e) => { e.preventDefault(); search($("search").value).catch((err) => showError($("results"), err)); });
  let timer = null;
  $("search").addEventListener("input", () => {
    clearTimeout(timer);
    timer = setTimeout(() => search($("search").value).catch(() => {}), 250);
  });
  for (const id of ["show-archived", "show-hidden"]) $(id).addEventListener("change", () => loadSessions());
  $("more").addEventListener("click", loadMore);
  $("health").addEventListener("click", openDoctor);
  // Infinite scroll: load the next page as the sidebar's end comes into view.
  new IntersectionObserver((entries) => { if (entries.some((e) => e.isIntersecting)) loadMore(); }, { root: document.querySelector(".sidebar") })
    .observe($("more"));
  document.body.dataset.ready = "1";
}

start();
