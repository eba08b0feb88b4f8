// The doctor for a person: what to do first on top, then the report in words and units.

import { api, query } from "./api.js";
import { $, bytes, el, plural } from "./dom.js";

export async function checkHealth(profile) {
  const badge = $("health");
  try {
    const report = await api("/api/doctor?" + query({ profile }));
    badge.className = "badge " + (report.healthy ? "ok" : report.damage === "none" ? "warn" : "bad");
    badge.textContent = report.healthy ? "Healthy" : report.damage === "none" ? "Needs attention" : `Damaged: ${report.damage}`;
    badge.report = report;
  } catch (error) {
    badge.className = "badge bad";
    badge.textContent = "Unreachable";
    badge.report = { error: error.message };
  }
}

function firstSentence(text) {
  const match = /^.*?[.!?](\s|$)/.exec(text);
  return match ? match[0].trim() : text;
}

const DAMAGE = { none: "None", index: "The search index (messages are safe)", schema: "An index, trigger or view (recreated by the fix)",
  structural: "The file or its table data (see the steps)", counters: "A session's counters (recounted by the fix)",
  records: "Rows breaking an invariant (see the steps)" };
// What a person reads first, per class of damage (docs/recovery.md says the same at length).
const LEAD = { index: "The search index is damaged; your messages are safe and the fix rebuilds it.",
  schema: "An index, trigger or view of the store is damaged; your messages are safe and the fix recreates it.",
  structural: "The store's file is damaged: do not write to it, and salvage what is readable with the steps below." };

export function openDoctor() {
  const report = $("health").report || {};
  const top = [];
  if (report.error) {
    top.push(el("p", { class: "lead", text: `The doctor could not be reached: ${report.error}` }));
  } else if (report.healthy) {
    top.push(el("p", { class: "lead ok", text: "Healthy: nothing needs attention." }));
  } else {
    const problem = report.problems && report.problems.length ? firstSentence(report.problems[0]) : "";
    top.push(el("p", { class: "lead", "data-testid": "doctor-lead", text: LEAD[report.damage] || problem || "Something needs attention." }));
    if (LEAD[report.damage] && problem) top.push(el("p", { class: "problem", text: problem }));
    if (report.steps && report.steps.length) top.push(el("p", { class: "first-step", "data-testid": "doctor-step" }, el("strong", { text: "First step: " }), report.steps[0]));
  }
  const rows = [];
  const show = (label, value) => { if (value !== undefined && value !== null && value !== "") rows.push(el("dt", { text: label }), el("dd", { text: value })); };
  if ("path" in report) {
    show("Store file", report.path + (report.exists ? "" : " (does not exist yet)"));
    show("Damage", DAMAGE[report.damage] || report.damage);
    show("Size", bytes(report.size));
    show("Write-ahead log", bytes(report.wal_bytes));
    show("Free pages", report.free_pages === null ? "unknown" : `${report.free_pages.toLocaleString()}${report.page_size ? ` (${bytes(report.free_pages * report.page_size)})` : ""}`);
    if (report.integrity && report.integrity.check) {
      show("Integrity check", `${report.integrity.errors && report.integrity.errors.length ? "errors found" : "passed"} (${report.integrity.complete ? "complete" : "partial"} ${report.integrity.check})`);
    }
    show("Search index", report.index_stale ? "stale: rebuilt by the fix" : "up to date");
    show("Waiting in the spool", plural(report.spool_pending, "batch", "batches"));
    show("Processes holding it", (report.holders || []).join(", ") || "none");
    show("Forensic backups", plural((report.backups || []).length, "backup"));
    show("Journal mode", report.journal_mode || "unknown");
    show("Filesystem", report.filesystem || "unknown");
    show("SQLite", report.sqlite_version);
  } else if ("server_version" in report) {  // a store on a PostgreSQL server
    show("Store", report.location + (report.exists ? "" : " (does not exist yet)"));
    show("Damage", DAMAGE[report.damage] || report.damage);
    show("Server", `PostgreSQL ${report.server_version}`);
    if (report.migrations && "applied" in report.migrations) {
      show("Migrations", `${report.migrations.applied} applied, ${report.migrations.pending.length} pending`);
    }
    show("Size", bytes(report.size));
    show("sessiondb connections", (report.connections || []).join(", ") || "none");
    show("Waiting in this host's spool", plural(report.spool_pending, "batch", "batches"));
  }
  const lists = [];
  for (const [key, title] of [["problems", "Problems"], ["steps", "What to do"], ["findings", "Findings"], ["notes", "Notes"]]) {
    if (report[key] && report[key].length) lists.push(el("h3", { text: title }), el(key === "steps" ? "ol" : "ul", {}, ...report[key].map((t) => el("li", { text: t }))));
  }
  $("doctor-body").replaceChildren(...top, el("dl", {}, ...rows), ...lists);
  $("doctor").showModal();
}
