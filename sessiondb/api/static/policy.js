// What the profile keeps, read-only: its retention rules (per source, and for every other
// source) and its legal holds, from GET /api/policy. They are set with `sessiondb policy`.

import { api, query } from "./api.js";
import { $, el, plural, showError, when } from "./dom.js";

// The rules of a Policy, in the order `sessiondb policy show` says them, each with its column.
const RULES = [["inactive_after", "Inactive after"], ["keep_last", "Keep last"],
  ["compacted_after", "Compacted text after"], ["never_active_after", "Never active after"]];
const UNITS = [["week", 7 * 86400], ["day", 86400], ["hour", 3600], ["minute", 60]];

// A period in the largest unit that says it whole: 7776000 is "90 days", 1209600 "2 weeks".
function period(seconds) {
  const [unit, size] = UNITS.find(([, size]) => seconds >= size && seconds % size === 0) || ["second", 1];
  return plural(seconds / size, unit);
}

function ruleCell(rule, name) {
  const value = rule[name];
  if (value === null) return "—";
  return name === "keep_last" ? plural(value, "conversation") : period(value);
}

function rulesTable(rules, profile) {
  const headings = ["Source", ...RULES.map(([, label]) => label), "Last set"];
  const row = (rule) => el("tr", {},
    el("th", { scope: "row", text: rule.source === null ? "every other source" : rule.source }),
    ...RULES.map(([name]) => el("td", { text: ruleCell(rule, name) })),
    el("td", { text: when(rule.updated_at) }));
  const table = el("table", { class: "policy-table", "data-testid": "policy-rules" },
    el("thead", {}, el("tr", {}, ...headings.map((h) => el("th", { scope: "col", text: h })))),
    el("tbody", {}, ...rules.map(row)));
  return el("div", { class: "table-scroll", tabindex: "0", role: "region",
    "aria-label": `Retention rules, profile ${profile}` }, table);
}

function holdItem(hold) {
  const whose = hold.user_id !== null ? `User ${hold.user_id}` : `Session ${hold.session_id}`;
  return el("li", { text: `${whose}: ${hold.reason} (placed ${when(hold.placed_at)})` });
}

function empty(text, testid) {
  return el("p", { class: "empty", "data-testid": testid, text });
}

export async function openPolicy(profile) {
  const body = $("policy-body");
  body.replaceChildren(el("p", { text: "Reading the rules…" }));
  $("policy").showModal();
  try {
    const { rules, holds } = await api("/api/policy?" + query({ profile }));
    body.replaceChildren(
      el("h3", { text: "Rules" }),
      rules.length ? rulesTable(rules, profile) : empty("No rules: everything is kept.", "policy-no-rules"),
      el("h3", { text: "Legal holds" }),
      holds.length ? el("ul", { "data-testid": "policy-holds" }, ...holds.map(holdItem))
        : empty("No legal holds.", "policy-no-holds"),
      el("p", { class: "meta" }, "A pinned or held conversation is never removed. Rules are set with ",
        el("code", { text: "sessiondb policy set" }), " and applied by ",
        el("code", { text: "sessiondb policy apply --yes" }), " (hourly, from cron)."));
  } catch (error) {
    showError(body, error);
  }
}
