// The sessiondb dashboard: plain JavaScript modules over the JSON API, no build step, no
// inline script or style (the service's Content-Security-Policy allows only its own files).

import { api, query, sessionPath } from "./api.js";
import { $, el, plural, showError, when } from "./dom.js";
import { checkHealth, openDoctor } from "./doctor.js";
import { installKeys } from "./keys.js";
import { Search } from "./search.js";
import { Transcript } from "./transcript.js";
import { openProfileUsage } from "./usage.js";

const PAGE = 100;  // sessions per sidebar page
const NARROW = window.matchMedia("(max-width: 760px)");
const DARK = window.matchMedia("(prefers-color-scheme: dark)");

class App {
  constructor() {
    this.profile = null;
    this.cursor = null;
    this.loading = false;
    this.transcript = new Transcript(this);
    this.search = new Search(this);
  }

  // --- profiles ---------------------------------------------------------------------

  async loadProfiles() {
    const { items } = await api("/api/profiles");
    $("profile").replaceChildren(...items.map((p) => el("option", { value: p.name, text: p.name })));
    let chosen = new URLSearchParams(location.hash.slice(1)).get("profile");
    if (!items.some((p) => p.name === chosen)) chosen = null;
    for (const p of chosen ? [] : items) {  // the first profile that has sessions (`make run` writes `demo`)
      const page = await api("/api/sessions?" + query({ profile: p.name, limit: 1, include_archived: true, include_hidden: true }));
      if (page.items.length) { chosen = p.name; break; }
    }
    this.profile = chosen || items[0].name;
    $("profile").value = this.profile;
  }

  async switchProfile(name) {
    this.profile = name;
    this.transcript.id = null;
    location.hash = query({ profile: name });
    this.emptyView();
    this.clearSearch();
    await Promise.all([this.loadSessions(), checkHealth(name)]);
  }

  // --- the sidebar ------------------------------------------------------------------

  sessionItem(s) {
    const flags = ["pinned", "archived", "hidden"].filter((f) => s[f]);
    const button = el("button", { type: "button", class: "session item", "data-id": s.id, "data-testid": "session",
      "aria-current": this.transcript.id === s.id ? "true" : null, onclick: () => this.open(s.id) },
      el("span", { class: "title", text: s.title || "Untitled session" }),
      el("span", { class: "meta", text: `${s.source} · ${plural(s.message_count, "message")} · ${when(s.last_activity_at || s.started_at)}` },
        ...flags.map((f) => el("span", { class: "flag", text: f }))));
    return el("li", { title: s.id }, button);
  }

  listParams(extra) {
    // The source filter (one tool's sessions, say) narrows the list as it narrows the search.
    return query(Object.assign({ profile: this.profile, source: $("f-source").value.trim(),
      include_archived: $("show-archived").checked, include_hidden: $("show-hidden").checked }, extra));
  }

  async loadSessions() {
    const [pinned, recent] = await Promise.all([
      api("/api/sessions?" + this.listParams({ pinned: true, limit: 1000 })),
      api("/api/sessions?" + this.listParams({ pinned: false, limit: PAGE })),
    ]);
    $("pinned").replaceChildren(...pinned.items.map((s) => this.sessionItem(s)));
    $("pinned-title").hidden = $("pinned").hidden = !pinned.items.length;  // no empty heading
    $("recent").replaceChildren(...recent.items.map((s) => this.sessionItem(s)));
    $("recent-title").hidden = !recent.items.length;
    $("no-sessions").hidden = Boolean(pinned.items.length || recent.items.length);
    $("no-sessions-profile").textContent = this.profile;
    this.cursor = recent.cursor;
    $("more").hidden = !this.cursor;
  }

  async loadMore() {
    if (!this.cursor || this.loading) return;
    this.loading = true;
    try {
      const page = await api("/api/sessions?" + this.listParams({ pinned: false, limit: PAGE, cursor: this.cursor }));
      $("recent").append(...page.items.map((s) => this.sessionItem(s)));
      this.cursor = page.cursor;
      $("more").hidden = !this.cursor;
    } finally {
      this.loading = false;
    }
  }

  showResults() { $("results").hidden = false; $("lists").hidden = true; }
  showLists() { $("results").hidden = true; $("lists").hidden = false; }

  clearSearch() {
    $("search").value = "";
    this.search.text = "";
    this.showLists();
  }

  // --- the view: on a phone it takes the screen, and the sidebar comes back with Esc --

  async open(id, target = null, compacted = false) {
    const from = document.activeElement;
    this.opener = from && from.closest(".sidebar .item") ? from : null;  // where Esc brings focus back
    for (const b of document.querySelectorAll(".session")) b.setAttribute("aria-current", b.dataset.id === id ? "true" : "false");
    document.body.classList.add("viewing");
    await this.transcript.open(id, target, compacted);
  }

  viewing() { return NARROW.matches && document.body.classList.contains("viewing"); }

  closeView() {
    document.body.classList.remove("viewing");
    (this.opener && this.opener.isConnected && this.opener.offsetParent !== null ? this.opener : $("search")).focus();
  }

  showSidebar() { if (NARROW.matches) document.body.classList.remove("viewing"); }

  emptyView() {
    $("view").replaceChildren(el("div", { class: "empty", "data-testid": "empty-view" },
      el("p", { text: "Pick a session to read its transcript, or search every message with the box above (press / to jump there)." }),
      el("p", { text: "Keys: ↑ ↓ or j k move through the list, Enter opens, Esc goes back." })));
  }

  async update(id, change) {
    try {
      await api(sessionPath(id, "?") + query({ profile: this.profile }), { method: "PATCH", body: change });
      await Promise.all([this.loadSessions(), this.transcript.open(id)]);
    } catch (error) {
      window.alert(error.message);
    }
  }

  // --- the theme: the system's, until the toggle says otherwise ------------------------

  applyTheme() {
    const chosen = localStorage.getItem("sessiondb-theme");
    const dark = chosen ? chosen === "dark" : DARK.matches;
    document.documentElement.dataset.theme = dark ? "dark" : "light";
    $("theme").setAttribute("aria-pressed", String(dark));
    $("theme").textContent = dark ? "Light theme" : "Dark theme";
  }

  toggleTheme() {
    localStorage.setItem("sessiondb-theme", document.documentElement.dataset.theme === "dark" ? "light" : "dark");
    this.applyTheme();
  }

  // --- wiring -----------------------------------------------------------------------

  async start() {
    this.applyTheme();
    DARK.addEventListener("change", () => this.applyTheme());
    this.emptyView();
    try {
      await this.loadProfiles();
      await Promise.all([this.loadSessions(), checkHealth(this.profile)]);
    } catch (error) {
      showError($("view"), error);
    }
    $("profile").addEventListener("change", (e) => this.switchProfile(e.target.value));
    let timer = null;  // searching as one types, once the typing pauses
    $("search-form").addEventListener("submit", (e) => { e.preventDefault(); clearTimeout(timer); this.search.run($("search").value); });
    $("search").addEventListener("input", () => {
      clearTimeout(timer);
      timer = setTimeout(() => { if ($("search").value !== this.search.text) this.search.run($("search").value); }, 250);
    });
    $("filters").addEventListener("change", () => { this.loadSessions(); this.search.run($("search").value); });
    $("filters").addEventListener("submit", (e) => { e.preventDefault(); this.search.run($("search").value); });
    $("prev-page").addEventListener("click", () => this.search.previousPage());
    $("next-page").addEventListener("click", () => this.search.nextPage());
    for (const id of ["show-archived", "show-hidden"]) $(id).addEventListener("change", () => this.loadSessions());
    $("more").addEventListener("click", () => this.loadMore());
    $("health").addEventListener("click", openDoctor);
    $("usage-open").addEventListener("click", () => openProfileUsage(this.profile));
    $("theme").addEventListener("click", () => this.toggleTheme());
    // Infinite scroll: the next page as the list's end comes into view (the viewport as
    // root: it sees the sidebar's own scrolling on a wide screen and the page's on a phone).
    new IntersectionObserver((entries) => { if (entries.some((e) => e.isIntersecting)) this.loadMore(); }).observe($("more"));
    installKeys(this);
    document.body.dataset.ready = "1";
  }
}

new App().start();
