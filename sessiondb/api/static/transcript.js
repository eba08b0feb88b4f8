// One session: its header (facts, lineage, usage, actions) and its transcript, opened at
// the newest messages or, from a search hit, around the message that matched.

import { api, download, query, sessionPath } from "./api.js";
import { $, copy, el, markWords, plural, showError, titleOf, when } from "./dom.js";
import { sessionUsage, sessionUsageFor } from "./usage.js";

const MESSAGES = 200;  // messages per transcript page
const AROUND = 100;    // messages around a search hit

function textOf(m) {
  return typeof m.content === "string" ? m.content
    : Array.isArray(m.content) ? m.content.map((p) => (p && typeof p === "object" ? p.text || "" : String(p))).join("\n")
    : "";
}

function messageNode(m) {
  const text = textOf(m);
  const body = [];
  if (m.role === "tool") {
    body.push(el("details", {}, el("summary", { text: `Tool output${m.tool_name ? " · " + m.tool_name : ""} (${plural(text.length, "character")})` }),
      el("pre", { text })));
  } else if (m.html) {
    const rendered = el("div", { class: "text md" });
    rendered.innerHTML = m.html;  // rendered from Markdown and sanitised by the service (nh3)
    for (const table of rendered.querySelectorAll("table")) table.tabIndex = 0;  // scrolls sideways: reachable by keys
    body.push(rendered);
  } else if (text) {
    body.push(el("div", { class: "text", text }));
  }
  if (m.reasoning) body.push(el("details", {}, el("summary", { text: "Reasoning" }), el("pre", { text: m.reasoning })));
  for (const call of m.tool_calls || []) {
    const fn = (call && call.function) || call || {};
    let args = fn.arguments !== undefined ? fn.arguments : call;
    if (typeof args !== "string") args = JSON.stringify(args, null, 2);
    body.push(el("details", { class: "call" }, el("summary", { text: `Tool call · ${fn.name || call.name || "tool"}` }), el("pre", { text: args })));
  }
  const tools = el("div", { class: "msg-tools" },
    el("button", { type: "button", class: "small", "data-testid": "copy-message", text: "Copy", "aria-label": `Copy message ${m.id}`, onclick: () => copy(text, "the message") }),
    el("button", { type: "button", class: "small", "data-testid": "copy-message-id", text: `#${m.id}`, "aria-label": `Copy message id ${m.id}`, onclick: () => copy(String(m.id), "the message id") }));
  return el("article", { class: `msg ${m.role}`, "data-testid": "message", "data-id": m.id, "data-state": m.state, id: `m${m.id}`, tabindex: "-1",
    "aria-label": `${m.role} message ${m.id}` },
    el("div", { class: "msg-head" }, el("span", { class: "role", text: `${m.role} · ${when(m.timestamp)}${m.state === "compacted" ? " · compacted" : ""}` }), tools),
    ...body);
}

// Consecutive compacted messages fold into one <details>, so the live conversation reads first.
function renderMessages(messages, open) {
  const fragment = document.createDocumentFragment();
  let fold = null;
  for (const m of messages) {
    if (m.state === "compacted") {
      if (!fold) {
        fold = el("details", { class: "compacted", "data-testid": "compacted", open }, el("summary"));
        fold.count = 0;
        fragment.append(fold);
      }
      fold.append(messageNode(m));
      fold.count += 1;
      fold.firstChild.textContent = `${plural(fold.count, "compacted message")} (archived history)`;
    } else {
      fold = null;
      fragment.append(messageNode(m));
    }
  }
  return fragment;
}

export class Transcript {
  constructor(app) {
    this.app = app;
    this.compacted = false;
    this.id = null;
  }

  get profile() { return this.app.profile; }

  page(params) {
    return api(sessionPath(this.id, "/transcript?") + query(Object.assign({ profile: this.profile, html: true, include_compacted: this.compacted }, params)));
  }

  // Show a session at its newest messages, or at `target` (a message id) with its
  // neighbours; with `compacted`, its compacted history too.
  async open(id, target = null, compacted = false) {
    this.id = id;
    this.compacted = compacted;
    const view = $("view");
    try {
      const p = query({ profile: this.profile });
      const [s, lineage, usage, turns, checkpoints, page] = await Promise.all([
        api(sessionPath(id, "?") + p), api(sessionPath(id, "/lineage?") + p), sessionUsageFor(this.profile, id),
        api(sessionPath(id, "/turns?") + p), api(sessionPath(id, "/checkpoints?") + p),
        target === null ? this.page({ order: "latest", limit: MESSAGES }) : this.page({ around: target, limit: AROUND }),
      ]);
      if (this.id !== id) return;
      this.older = page.next_before;
      this.newer = target === null ? null : page.next_after;
      const older = el("button", { type: "button", class: "older", "data-testid": "older", text: "Load older messages", onclick: () => this.loadOlder() });
      const newer = el("button", { type: "button", class: "newer", "data-testid": "newer", text: "Load newer messages", onclick: () => this.loadNewer() });
      older.hidden = this.older === null;
      newer.hidden = this.newer === null;
      const transcript = el("div", { id: "transcript", "data-testid": "transcript", tabindex: "-1", role: "region",
        "aria-label": "Messages" }, renderMessages(page.items, target !== null));
      view.replaceChildren(this.header(s, lineage.items, usage), turnList(turns.items),
        checkpointList(this, id, checkpoints), older, transcript, newer);
      if (!page.items.length) {
        view.append(el("p", { class: "empty", "data-testid": "empty-session", text: s.message_count
          ? "Every message of this session is archived history: show it with “Show compacted history”."
          : "No messages yet. Messages appear here as soon as an agent appends them (POST /api/sessions/{id}/append, or store.append)." }));
      }
      if (target === null) {
        view.scrollTop = view.scrollHeight;  // the newest messages first in view
      } else {
        const hit = document.getElementById(`m${target}`);
        hit.classList.add("target");
        hit.setAttribute("aria-current", "true");
        const q = this.app.route.q;
        if (q && !/\?\s*$/.test(q)) markWords(hit, q);  // a question's words are not what it matched
        hit.scrollIntoView({ block: "center" });
        hit.focus({ preventScroll: true });
      }
    } catch (error) {
      showError(view, error);
    }
  }

  async loadOlder() {
    if (this.older === null) return;
    const id = this.id;
    const page = await this.page({ order: "latest", limit: MESSAGES, before: this.older });
    if (this.id !== id) return;
    const transcript = $("transcript");
    const keep = transcript.scrollHeight;
    transcript.prepend(renderMessages(page.items, false));
    $("view").scrollTop += transcript.scrollHeight - keep;
    this.older = page.next_before;
    document.querySelector(".older").hidden = this.older === null;
  }

  async loadNewer() {
    if (this.newer === null) return;
    const id = this.id;
    const page = await this.page({ order: "asc", limit: MESSAGES, after: this.newer });
    if (this.id !== id) return;
    $("transcript").append(renderMessages(page.items, false));
    this.newer = page.next_after;
    document.querySelector(".newer").hidden = this.newer === null;
  }

  header(s, lineage, usage) {
    const act = (label, testid, change) => el("button", { type: "button", "data-testid": testid, text: label, onclick: () => this.app.update(s.id, change) });
    const exportLink = (format, label) => el("button", { "data-testid": `export-${format}`, text: label,
      onclick: () => download(sessionPath(s.id, "/export?") + query({ profile: this.profile, format }), `${s.id}.${format}`)
        .catch((error) => window.alert(error.message)) });
    const actions = el("div", { class: "actions" },
      act(s.pinned ? "Unpin" : "Pin", "pin", { pinned: !s.pinned }),
      act(s.archived ? "Unarchive" : "Archive", "archive", { archived: !s.archived }),
      act(s.hidden ? "Unhide" : "Hide", "hide", { hidden: !s.hidden }),
      el("button", { type: "button", "data-testid": "rename", text: "Rename", onclick: () => {
        const title = window.prompt("New title (empty clears it):", s.title || "");
        if (title !== null) this.app.update(s.id, { title: title.trim() || null });
      } }),
      el("button", { type: "button", "data-testid": "toggle-compacted", text: this.compacted ? "Hide compacted history" : "Show compacted history",
        onclick: () => this.app.navigate({ compacted: !this.compacted, message: null }) }),
      el("button", { type: "button", "data-testid": "copy-session-id", text: "Copy id", onclick: () => copy(s.id, "the session id") }),
      exportLink("md", "Export Markdown"), exportLink("jsonl", "Export JSONL"));
    const chain = el("p", { class: "lineage", "data-testid": "lineage" });
    if (lineage.length > 1) {
      chain.append("Lineage: ");
      lineage.forEach((item, i) => {
        if (i) chain.append(" → ");
        chain.append(item.id === s.id ? el("span", { class: "here", text: item.title || item.id })
          : el("button", { type: "button", class: "link", text: item.title || item.id, onclick: () => this.app.open(item.id, null, i < lineage.length - 1) }));  // an earlier session holds compacted history
      });
    } else chain.hidden = true;
    const origin = s.parent_session_id && s.parent_relation !== "compression"
      ? el("p", { class: "lineage" }, `${s.parent_relation || "continues"} of `,
        el("button", { type: "button", class: "link", text: s.parent_session_id, onclick: () => this.app.open(s.parent_session_id) })) : null;
    const flags = [s.pinned && "pinned", s.archived && "archived", s.hidden && "hidden", s.ended_at && `ended (${s.end_reason})`].filter(Boolean);
    return el("div", { class: "head" },
      el("button", { type: "button", class: "back", "data-testid": "back", text: "← Sessions", onclick: () => this.app.closeView() }),
      el("h2", { "data-testid": "session-title", text: titleOf(s.title, s.first_words) }),
      el("p", { class: "meta", text: `${s.id} · ${s.source} · started ${when(s.started_at)} · ${plural(s.message_count, "message")}${flags.length ? " · " + flags.join(", ") : ""}` }),
      chain, origin, sessionUsage(usage), actions);
  }
}


// Why each turn ended, in the guidance table's words (the reason's name on hover).
function turnList(turns) {
  if (!turns.length) return document.createDocumentFragment();
  const list = el("ol", { class: "turns", "data-testid": "turns" });
  for (const t of turns) {
    const failed = t.receipts.length ? ` · ${t.receipts.length} file edit(s) FAILED this turn` : "";
    list.append(el("li", { "data-testid": "turn", title: t.reason || "running",
      text: `${when(t.started_at)} · ${t.outcome || "running"}: ${t.explanation || "still running"}${failed}` }));
  }
  return el("details", { class: "turns-box" }, el("summary", { text: `${turns.length} turn(s): why each ended` }), list);
}


// The agent's checkpoints of the session's working tree, with diff and restore through the
// same library calls as `sessiondb checkpoints` (turns.Checkpoints), so with the same
// refusals in the same words: tools that run in a container or over ssh, and a restore that
// would overwrite a file changed since the agent's own last write (every file listed, and
// a second, forced restore offered).
function checkpointList(transcript, id, { environment, items }) {
  if (!items.length) return document.createDocumentFragment();
  const path = (c, rest) => sessionPath(id, `/checkpoints/${encodeURIComponent(c.id)}${rest}?`) + query({ profile: transcript.profile });
  const list = el("ol", { class: "checkpoints", "data-testid": "checkpoints" });
  for (const c of items) {
    const out = el("div", { class: "checkpoint-out", "data-testid": "checkpoint-out", role: "status" });
    const refused = (error) => {
      const files = ((error.body && error.body.detail && error.body.detail.files) || []).filter((f) => f.status === "refused");
      out.replaceChildren(el("p", { class: "error", text: error.message }),
        ...(files.length ? [el("ul", {}, ...files.map((f) => el("li", { text: `${f.path}: ${f.reason}` })))] : []));
      return files.length > 0;  // a person's edits stand in the way: forcing is a choice to offer
    };
    const restore = async (force) => {
      const question = force ? `Overwrite the files listed and put the tree back as checkpoint ${c.id} has it?`
        : `Put the tree back as checkpoint ${c.id} has it? The tree as it is now is checkpointed first.`;
      if (!window.confirm(question)) return;
      try {
        const report = await api(path(c, "/restore") + (force ? "&force=true" : ""), { method: "POST" });
        out.replaceChildren(el("p", { text: `Restored checkpoint ${report.checkpoint}; the tree as it was is checkpoint ${report.checkpoint_before}.` }),
          el("ul", {}, ...report.files.map((f) => el("li", { text: `${f.status}: ${f.path}` }))));
      } catch (error) {
        if (refused(error) && !force) {
          out.append(el("button", { type: "button", "data-testid": "checkpoint-force", text: "Restore anyway, overwriting these files", onclick: () => restore(true) }));
        }
      }
    };
    const diff = async () => {
      try {
        const found = await api(path(c, "/diff"));
        out.replaceChildren(found.changes.length
          ? el("pre", { class: "diff", "data-testid": "checkpoint-diff", tabindex: "0",
            text: found.changes.map((f) => f.patch || `${f.change}: ${f.path} (binary)\n`).join("") })
          : el("p", { text: `Nothing changed since checkpoint ${found.checkpoint}.` }));
      } catch (error) {
        refused(error);
      }
    };
    list.append(el("li", { "data-testid": "checkpoint", "data-id": c.id },
      el("span", { text: `#${c.id} · ${when(c.created_at)} · ${c.label} · ${plural(c.files, "file")} · ${c.tree}` }),
      el("span", { class: "msg-tools" },
        el("button", { type: "button", class: "small", "data-testid": "checkpoint-diff-open", text: "Diff", "aria-label": `Diff checkpoint ${c.id}`, onclick: diff }),
        el("button", { type: "button", class: "small", "data-testid": "checkpoint-restore", text: "Restore", "aria-label": `Restore checkpoint ${c.id}`, onclick: () => restore(false) })),
      out));
  }
  return el("details", { class: "turns-box", "data-testid": "checkpoints-box" },
    el("summary", { text: `${plural(items.length, "checkpoint")} of the working tree` }),
    environment.refusal ? el("p", { class: "error", "data-testid": "checkpoint-refusal", text: `Diff and restore are refused: ${environment.refusal}` }) : null,
    list);
}
