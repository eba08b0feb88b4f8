// Search: filters (role, source, dates, tool output, the open session), pages with the
// true count, hits spread so every session's best hit comes before any session's second,
// and a hit that opens the transcript at the message that matched. Text ending in "?" is
// a question: it is asked of /api/recall (any of its words, stemmed; one page of the best).

import { api, query } from "./api.js";
import { $, el, highlighted, plural, showError, titleOf, when } from "./dom.js";

const PAGE = 50;

function dayStart(value) {
  return value ? new Date(value + "T00:00").getTime() / 1000 : null;
}

export class Search {
  constructor(app) {
    this.app = app;
    this.text = "";
    this.offset = 0;
  }

  filters() {
    const until = dayStart($("f-until").value);
    return {
      role: $("f-role").value,
      source: $("f-source").value.trim(),
      since: dayStart($("f-since").value),
      until: until === null ? null : until + 86400,  // the whole "to" day
      include_tools: $("f-tools").checked,
      session_id: $("f-session").checked ? this.app.transcript.id : null,
    };
  }

  async run(text, offset = 0) {
    this.text = text;
    this.offset = offset;
    if (!text.trim()) return this.app.showLists();
    this.app.showSidebar();
    this.app.showResults();
    $("hits-count").textContent = "Searching…";
    const list = $("hits");
    try {
      const found = /\?\s*$/.test(text) ? await this.recall(text)
        : await api("/api/search?" + query(Object.assign(
          { profile: this.app.profile, q: text, limit: PAGE, offset, spread: true }, this.filters())));
      if (text !== this.text || offset !== this.offset) return;  // a newer search is under way
      this.render(found);
    } catch (error) {
      showError(list, error);
    }
  }

  // A question's best hits, in the shape of a search's one page (and its note for none).
  async recall(text) {
    const asked = await api("/api/recall?" + query(Object.assign(
      { profile: this.app.profile, q: text, limit: PAGE }, this.filters())));
    const sessions = {};
    for (const hit of asked.items) sessions[hit.session_id] = (sessions[hit.session_id] || 0) + 1;
    return { items: asked.items, total: asked.items.length, total_exact: true, next_offset: null, sessions,
             note: asked.note };
  }

  render(found) {
    const sessions = Object.keys(found.sessions).length;
    const count = found.total_exact ? plural(found.total, "match", "matches") : `More than ${(found.total - 1).toLocaleString()} matches`;
    $("hits-count").textContent = found.total ? `${count} in ${plural(sessions, "session")}` : "No matches";
    const items = found.items.map((hit) => el("li", {}, el("button", {
      type: "button", class: "hit item", "data-testid": "hit", "data-session": hit.session_id, "data-message": hit.message_id,
      onclick: () => this.app.open(hit.session_id, hit.message_id, hit.compacted) },
      el("span", { class: "title", text: titleOf(hit.session_title, hit.session_first_words) }),
      el("span", { class: "meta", text: `${hit.session_source} · ${hit.role} · ${when(hit.timestamp)}${hit.compacted ? " · compacted" : ""} · ${plural(found.sessions[hit.session_id], "match", "matches")} in this session` }),
      highlighted(hit.snippet))));
    $("hits").replaceChildren(...items);
    if (!found.total) {
      $("hits").append(el("li", { class: "empty", "data-testid": "no-hits",
        text: found.note ? `${found.note} Try other words, other filters, or include tool output.`
          : "Nothing matches. Try fewer or shorter words, a prefix such as compact*, other filters, or include tool output." }));
    }
    const first = found.total ? this.offset + 1 : 0;
    $("page-range").textContent = found.total ? `${first.toLocaleString()}–${(this.offset + found.items.length).toLocaleString()}` : "";
    $("prev-page").hidden = this.offset === 0;
    $("next-page").hidden = found.next_offset === null;
    this.next = found.next_offset;
  }

  nextPage() { if (this.next !== null) this.run(this.text, this.next); }
  previousPage() { this.run(this.text, Math.max(0, this.offset - PAGE)); }
}
