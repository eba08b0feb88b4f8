// Small DOM helpers. Everything a store returns is inserted as text (textContent), except
// search snippets, whose <mark>…</mark> highlights are restored after escaping everything
// else, and message HTML, which the service rendered from Markdown and sanitised.

export const $ = (id) => document.getElementById(id);

export function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (k === "class") node.className = v;
    else if (k === "text") node.textContent = v;
    else if (k.startsWith("on")) node.addEventListener(k.slice(2), v);
    else if (v !== null && v !== undefined && v !== false) node.setAttribute(k, v === true ? "" : v);
  }
  for (const child of children) if (child !== null && child !== undefined && child !== false) node.append(child);
  return node;
}

function escapeHTML(text) {
  return String(text).replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" }[c]));
}

// Escape the whole snippet, then give back only the exact <mark> and </mark> the library added.
export function highlighted(snippet) {
  const node = el("span", { class: "snippet" });
  node.innerHTML = escapeHTML(snippet).replace(/&lt;(\/?)mark&gt;/g, "<$1mark>");
  return node;
}

// What a session is called: its title, else the first words its user said (the API's
// first_words, the same rule as the CLI's list), else a placeholder.
export function titleOf(title, firstWords) {
  return title || firstWords || "Untitled session";
}

// The words of search `q` marked inside `root` (an opened message): each text node is split
// around its matches and each match wrapped in a <mark> element, built as DOM nodes, so the
// message's text is never parsed as HTML. Words are matched whole, `prefix*` as a prefix;
// excluded words (-word) and the operators are not marked. Returns how many were marked.
export function markWords(root, q) {
  const terms = [];
  for (const raw of q.split(/\s+/)) {
    if (!raw || raw.startsWith("-") || /^(OR|AND|NOT)$/.test(raw)) continue;
    const word = raw.replace(/^["(]+|[")]+$/g, "");
    const core = word.replace(/\*$/, "").replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
    if (core) terms.push(word.endsWith("*") ? core : core + "(?![\\p{L}\\p{N}])");
  }
  if (!terms.length) return 0;
  const pattern = new RegExp(`(?<![\\p{L}\\p{N}])(?:${terms.join("|")})`, "giu");
  const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
  const nodes = [];
  while (walker.nextNode()) nodes.push(walker.currentNode);
  let marked = 0;
  for (const node of nodes) {
    if (node.parentElement.closest("mark, .msg-head")) continue;
    const text = node.nodeValue;
    const parts = [];
    let at = 0;
    for (const match of text.matchAll(pattern)) {
      parts.push(text.slice(at, match.index), el("mark", { text: match[0] }));
      at = match.index + match[0].length;
      marked += 1;
    }
    if (parts.length) node.replaceWith(...parts, text.slice(at));
  }
  return marked;
}

export function when(ts) {
  if (!ts) return "";
  return new Date(ts * 1000).toLocaleString(undefined, { dateStyle: "medium", timeStyle: "short" });
}

export function plural(n, word, many = word + "s") {
  return `${n.toLocaleString()} ${n === 1 ? word : many}`;
}

export function bytes(n) {
  if (n === null || n === undefined) return "unknown";
  const units = ["bytes", "KiB", "MiB", "GiB", "TiB"];
  let i = 0;
  while (n >= 1024 && i < units.length - 1) { n /= 1024; i += 1; }
  return i === 0 ? `${n} bytes` : `${n.toFixed(1)} ${units[i]}`;
}

export function money(usd) {
  return "$" + usd.toFixed(usd < 1 ? 4 : 2);
}

export function showError(where, error) {
  where.replaceChildren(el("div", { class: "error", role: "alert", text: error.message || String(error) }));
}

// A message for screen readers and a short visible confirmation ("Copied").
export function announce(text) {
  const status = $("status");
  status.textContent = "";
  status.textContent = text;
}

export async function copy(text, what) {
  try {
    await navigator.clipboard.writeText(text);
    announce(`Copied ${what}`);
  } catch (error) {
    announce(`Could not copy ${what}: ${error.message}`);
  }
}
