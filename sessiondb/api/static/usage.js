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

// At most this many labels under a chart's bars (and values over them): about 70 px each
// at the chart's width, so none overlaps; more bars keep every bar and label every k-th.
const LABELS = 9;

// Vertical bars, one per item, scaled to the largest; each bar names its value in a <title>.
// With more bars than LABELS, every k-th bar is labelled and values are left to the titles
// and to the totals written beside the chart.
export function barChart(items, label, caption) {
  const width = 640, height = 180, top = 16, bottom = 34;
  const most = Math.max(1, ...items.map(tokens));
  const slot = (width - 6) / Math.max(items.length, 1);
  const gap = Math.min(6, slot / 4);
  const every = Math.ceil(items.length / LABELS);
  const chart = svg("svg", { viewBox: `0 0 ${width} ${height}`, role: "img", class: "chart",
    "aria-label": caption, preserveAspectRatio: "xMidYMid meet" });
  chart.append(svg("title", {}, caption));
  items.forEach((item, i) => {
    const h = Math.max(1, (tokens(item) / most) * (height - top - bottom));
    const x = 6 + i * slot, y = height - bottom - h, w = Math.max(1, slot - gap);
    const bar = svg("rect", { x, y, width: w, height: h, rx: 2, class: "bar" });
    bar.append(svg("title", {}, `${label(item)}: ${tokens(item).toLocaleString()} tokens, ${money(item.cost_usd)}`));
    chart.append(bar);
    if (i % every) return;
    chart.append(svg("text", { x: x + w / 2, y: height - bottom + 14, "text-anchor": "middle", class: "axis" }, label(item)));
    if (every === 1) {
      chart.append(svg("text", { x: x + w / 2, y: Math.max(12, y - 4), "text-anchor": "middle", class: "axis" },
        compact(tokens(item))));
    }
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
      el("div", { class: "chart-row" },
        barChart(report.days, (d) => d.day.slice(5), `Tokens by day (UTC, the day each session was last active), profile ${profile}`),
        dayTotals(report.days)),
      el("details", {}, el("summary", { text: "Every day as a table" }), dayTable(report.days, profile)));
  } catch (error) {
    showError(body, error);
  }
}

// The days' totals in words, beside their chart: the span, the sum, the busiest day.
function dayTotals(days) {
  const sum = days.reduce((n, d) => n + tokens(d), 0);
  const cost = days.reduce((n, d) => n + d.cost_usd, 0);
  const busiest = days.reduce((a, b) => (tokens(b) > tokens(a) ? b : a));
  const span = days.length > 1 ? `${days[0].day} to ${days[days.length - 1].day}` : days[0].day;
  return el("dl", { class: "chart-totals", "data-testid": "day-totals" },
    el("dt", { text: "Days with usage" }), el("dd", { text: `${days.length.toLocaleString()} (${span})` }),
    el("dt", { text: "Tokens" }), el("dd", { text: sum.toLocaleString() }),
    el("dt", { text: "Cost" }), el("dd", { text: money(cost) }),
    el("dt", { text: "Busiest day" }), el("dd", { text: `${busiest.day}: ${tokens(busiest).toLocaleString()} tokens` }));
}

function dayTable(days, profile) {
  const head = el("tr", {}, ...["Day (UTC)", "Tokens", "Cost"].map((h) => el("th", { scope: "col", text: h })));
  const rows = days.map((d) => el("tr", {}, el("th", { scope: "row", text: d.day }),
    el("td", { text: tokens(d).toLocaleString() }), el("td", { text: money(d.cost_usd) })));
  return el("div", { class: "table-scroll", tabindex: "0", role: "region", "aria-label": `Tokens by day, profile ${profile}` },
    el("table", { class: "usage-table", "data-testid": "day-table" }, el("thead", {}, head), el("tbody", {}, ...rows)));
}

export function sessionUsageFor(profile, id) {
  return api(sessionPath(id, "/usage?") + query({ profile }));
}
