// Usage you can see: tokens and cost by model as a table, and a small SVG bar chart drawn
// here (no library): a session's tokens by model, a profile's tokens by day.

import { api, query, sessionPath } from "./api.js";
import { $, el, money, plural, showError } from "./dom.js";

const SVG = "http://www.w3.org/2000/svg";

function svg(tag, attrs = {}, text) {
  const node = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, v);
  if (text !== undefined) node.textContent = text;
  return node;
}

const tokens = (row) => row.input_tokens + row.output_tokens;

// Vertical bars, one per item, scaled to the largest; each bar names its value in a <title>.
export function barChart(items, label, caption) {
  const width = 640, height = 180, top = 16, bottom = 34, gap = 6;
  const most = Math.max(1, ...items.map(tokens));
  const slot = (width - gap) / Math.max(items.length, 1);
  const chart = svg("svg", { viewBox: `0 0 ${width} ${height}`, role: "img", class: "chart",
    "aria-label": caption, preserveAspectRatio: "xMidYMid meet" });
  chart.append(svg("title", {}, caption));
  items.forEach((item, i) => {
    const h = Math.max(1, (tokens(item) / most) * (height - top - bottom));
    const x = gap + i * slot, y = height - bottom - h, w = Math.max(2, slot - gap);
    const bar = svg("rect", { x, y, width: w, height: h, rx: 2, class: "bar" });
    bar.append(svg("title", {}, `${label(item)}: ${tokens(item).toLocaleString()} tokens, ${money(item.cost_usd)}`));
    chart.append(bar);
    chart.append(svg("text", { x: x + w / 2, y: height - bottom + 14, "text-anchor": "middle", class: "axis" }, label(item)));
    chart.append(svg("text", { x: x + w / 2, y: Math.max(12, y - 4), "text-anchor": "middle", class: "axis" },
      compact(tokens(item))));
  });
  chart.append(svg("line", { x1: 0, x2: width, y1: height - bottom, y2: height - bottom, class: "baseline" }));
  return chart;
}

function compact(n) {
  return n >= 1e6 ? (n / 1e6).toFixed(1) + "M" : n >= 1e3 ? (n / 1e3).toFixed(1) + "k" : String(n);
}

function modelTable(rows, totals, caption) {
  const head = el("tr", {}, ...["Model", "Provider", "Calls", "Input tokens", "Output tokens", "Cost"].map((h) => el("th", { scope: "col", text: h })));
  const line = (cells, cls) => el("tr", { class: cls || "" }, ...cells.map((c, i) => el(i === 0 ? "th" : "td", i === 0 ? { scope: "row", text: c } : { text: c })));
  const body = rows.map((r) => line([r.model || "(unnamed)", r.provider || "", r.calls.toLocaleString(), r.input_tokens.toLocaleString(),
    r.output_tokens.toLocaleString(), money(r.cost_usd)]));
  body.push(line(["Total", "", totals.calls.toLocaleString(), totals.input_tokens.toLocaleString(),
    totals.output_tokens.toLocaleString(), money(totals.cost_usd)], "total"));
  return el("div", { class: "table-scroll", tabindex: "0", role: "region", "aria-label": caption }, el("table", { class: "usage-table" }, el("caption", { text: caption }),
    el("thead", {}, head), el("tbody", {}, ...body)));
}

// A session's usage, for its header: a line of totals, and by model with a chart when asked.
export function sessionUsage(usage) {
  if (!usage.calls) return el("p", { class: "usage", "data-testid": "usage", text: "No model calls recorded for this session." });
  const summary = `Usage: ${plural(usage.calls, "call")} · ${(usage.input_tokens + usage.output_tokens).toLocaleString()} tokens · ${money(usage.cost_usd)}`;
  return el("details", { class: "usage", "data-testid": "usage" }, el("summary", { text: summary }),
    modelTable(usage.rows, usage, "Tokens and cost by model"),
    barChart(usage.rows, (r) => r.model || "(unnamed)", "Tokens by model in this session"));
}

// The profile's usage dialog: totals, by model, and tokens by day.
export async function openProfileUsage(profile) {
  const body = $("usage-body");
  body.replaceChildren(el("p", { text: "Adding up usage…" }));
  $("usage").showModal();
  try {
    const report = await api("/api/usage?" + query({ profile }));
    if (!report.totals.calls) {
      body.replaceChildren(el("p", { class: "empty", text: `No model calls recorded in profile ${profile}. Usage appears here once an agent records it (store.record_usage).` }));
      return;
    }
    body.replaceChildren(
      el("p", { text: `${plural(report.sessions, "session")} with usage · ${plural(report.totals.calls, "call")} · ${(report.totals.input_tokens + report.totals.output_tokens).toLocaleString()} tokens · ${money(report.totals.cost_usd)}` }),
      modelTable(report.models, report.totals, `Tokens and cost by model, profile ${profile}`),
      el("h3", { text: "Tokens by day" }),
      barChart(report.days, (d) => d.day.slice(5), `Tokens by day (UTC, the day each session was last active), profile ${profile}`));
  } catch (error) {
    showError(body, error);
  }
}

export function sessionUsageFor(profile, id) {
  return api(sessionPath(id, "/usage?") + query({ profile }));
}
