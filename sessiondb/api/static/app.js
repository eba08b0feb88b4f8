// The sessiondb dashboard: plain JavaScript modules over the JSON API, no build step, no
// inline script or style (the service's Content-Security-Policy allows only its own files).

import { api, query, sessionPath } from "./api.js";
import { $, el, plural, showError, titleOf, when } from "./dom.js";
import { checkHealth, openDoctor } from "./doctor.js";
import { installKeys } from "./keys.js";
import { Search } from "./search.js";
import { changed, current, go, pushed } from "./route.js";
import { Transcript } from "./transcript.js";
import { openPolicy } from "./policy.js";
import { openProfileUsage } from "./usage.js";

const PAGE = 100;  // sessions per sidebar page
const NARROW = window.matchMedia("(max-width: 760px)");
const DARK = window.matchMedia("(prefers-color-scheme: dark)");

class App {
  constructor() {
    this.profile = null;
    this.profiles = [];
    this.route = {};
    this.goingBack = null;  // a history.back() the browser has yet to carry out (dialogClosed)
    this.backDone = null;  // what settles goingBack, called by the popstate that carries it out
    this.cursor = null;
    this.loading = false;
    this.transcript = new Transcript(this);
    this.search = new Search(this);
  }

  // --- profiles ---------------------------------------------------------------------

  async loadProfiles() {
    const { items } = await api("/api/profiles");
    this.profiles = items.map((p) => p.name);
    $("profile").replaceChildren(...items.map((p) => el("option", { value: p.name, text: p.name })));
  }

  // The profile a route names when it exists, else the first that has sessions (`make run` writes `demo`).
  async chooseProfile(named) {
    if (this.profiles.includes(named)) return named;
    for (const name of this.profiles) {
      const page = await api("/api/sessions?" + query({ profile: name, limit: 1, include_archived: true, include_hidden: true }));
      if (page.items.length) return name;
    }
    return this.profiles[0];
  }

  // --- where the dashboard is (route.js) ----------------------------------------------

  // Go somewhere: the address changes (a new history entry, or this one with `replace`) and the page follows.
  // A step taken while a Back is on its way waits for it: the Back's popstate would
  // otherwise land after the step and take the page back to where the dialog was opened.
  navigate(change, { replace = false } = {}) {
    if (this.goingBack) return this.goingBack.then(() => this.navigate(change, { replace }));
    const next = changed(this.route, change);
    go(next, replace);
    return this.show(next);
  }

  // Make the page show `next`, changing only what differs from what it shows.
  async show(next) {
    const was = this.route;
    this.route = next;
    const newProfile = next.profile !== was.profile;
    if (newProfile) {
      this.profile = next.profile;
      $("profile").value = this.profile;
      this.transcript.id = null;
      await Promise.all([this.loadSessions(), checkHealth(this.profile)]);
    }
    if (newProfile || next.q !== was.q) {
      $("search").value = next.q || "";
      if (next.q) this.search.run(next.q);
      else { this.search.text = ""; this.showLists(); }
    }
    const opened = ["session", "message", "compacted"].some((k) => next[k] !== was[k]);
    if (newProfile || opened) {
      if (next.session) {
        this.markCurrent(next.session);
        document.body.classList.add("viewing");
        await this.transcript.open(next.session, next.message ? Number(next.message) : null, Boolean(next.compacted));
      } else {
        this.transcript.id = null;
        this.markCurrent(null);
        document.body.classList.remove("viewing");
        this.emptyView();
      }
    }
    const views = [["usage", () => openProfileUsage(this.profile)], ["policy", () => openPolicy(this.profile)],
      ["doctor", openDoctor]];
    for (const [view, open] of views) {
      const dialog = $(view);
      if (next.view === view && !dialog.open) open();
      else if (next.view !== view && dialog.open) dialog.close();
    }
  }

  // A dialog closed (Esc, its ×): leave its entry, back to where it was opened when that is ours.
  dialogClosed() {
    if (!this.route.view || $(this.route.view).open) return;
    if (pushed()) {
      this.goingBack = new Promise((resolve) => { this.backDone = resolve; });
      history.back();
    } else this.navigate({ view: null }, { replace: true });
  }

  // --- the sidebar ------------------------------------------------------------------

  sessionItem(s) {
    const flags = ["pinned", "archived", "hidden"].filter((f) => s[f]);
    if (s.parent_relation === "compression") flags.push("compacted");  // earlier sessions hold its history
    const button = el("button", { type: "button", class: "session item", "data-id": s.id, "data-testid": "session",
      "aria-current": this.transcript.id === s.id ? "true" : null, onclick: () => this.open(s.id, null, Boolean(this.route.compacted)) },
      el("span", { class: "title", text: titleOf(s.title, s.first_words) }),
      el("span", { class: "meta", text: `${s.source} · ${plural(s.message_count, "message")} · ${when(s.last_activity_at || s.started_at)}` },
        ...flags.map((f) => el("span", { class: "flag", text: f }))));
    return el("li", { title: s.id }, button);
  }

  listParams(extra) {
    // The source filter (one tool's sessions, say) narrows the list as it narrows the search.
    // A conversation compaction rotated is one entry, its tip, unless its originals are asked for.
    return query(Object.assign({ profile: this.profile, source: $("f-source").value.trim(),
      include_archived: $("show-archived").checked, include_hidden: $("show-hidden").checked,
      conversations: !$("show-compacted").checked }, extra));
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
    return this.navigate({ q: null });
  }

  // A search typed or sent: a new entry when a search starts, the same entry while it is refined.
  searchFor(text) {
    return this.navigate({ q: text.trim() ? text : null }, { replace: Boolean(this.route.q) });
  }

  // --- the view: on a phone it takes the screen, and the sidebar comes back with Esc --

  markCurrent(id) {
    for (const b of document.querySelectorAll(".session")) b.setAttribute("aria-current", b.dataset.id === id ? "true" : "false");
  }

  // Open a session (at message `target`, with compacted history when asked) as a person
  // asked: opened from the keyboard or a click, focus follows into the transcript.
  async open(id, target = null, compacted = false) {
    const from = document.activeElement;
    this.opener = from && from.closest(".sidebar .item") ? from : null;  // where Esc brings focus back
    await this.navigate({ session: id, message: target, compacted });
    if (target === null && this.transcript.id === id && $("transcript")) $("transcript").focus({ preventScroll: true });
  }

  viewing() { return NARROW.matches && document.body.classList.contains("viewing"); }

  closeView() {
    document.body.classList.remove("viewing");
    (this.opener && this.opener.isConnected && this.opener.offsetParent !== null ? this.opener : $("search")).focus();
    return this.navigate({ session: null, message: null });
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
      await Promise.all([this.loadSessions(), this.transcript.open(id, null, Boolean(this.route.compacted))]);
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
      const route = current();
      route.profile = await this.chooseProfile(route.profile);
      go(route, true);
      await this.show(route);
    } catch (error) {
      showError($("view"), error);
    }
    window.addEventListener("popstate", () => {
      const route = current();
      if (!this.profiles.includes(route.profile)) route.profile = this.profile;  // an address edited by hand
      this.show(route).catch((error) => showError($("view"), error));
      if (this.goingBack) {
        this.goingBack = null;
        this.backDone();
      }
    });
    $("profile").addEventListener("change", (e) => this.navigate({ profile: e.target.value, session: null, message: null, q: null, view: null }));
    let timer = null;  // searching as one types, once the typing pauses
    $("search-form").addEventListener("submit", (e) => { e.preventDefault(); clearTimeout(timer); this.searchFor($("search").value); });
    $("search").addEventListener("input", () => {
      clearTimeout(timer);
      timer = setTimeout(() => { if ($("search").value !== this.search.text) this.searchFor($("search").value); }, 250);
    });
    $("filters").addEventListener("change", () => { this.loadSessions(); this.search.run($("search").value); });
    $("filters").addEventListener("submit", (e) => { e.preventDefault(); this.search.run($("search").value); });
    $("prev-page").addEventListener("click", () => this.search.previousPage());
    $("next-page").addEventListener("click", () => this.search.nextPage());
    for (const id of ["show-archived", "show-hidden", "show-compacted"]) $(id).addEventListener("change", () => this.loadSessions());
    $("more").addEventListener("click", () => this.loadMore());
    $("health").addEventListener("click", () => this.navigate({ view: "doctor" }));
    $("usage-open").addEventListener("click", () => this.navigate({ view: "usage" }));
    $("policy-open").addEventListener("click", () => this.navigate({ view: "policy" }));
    for (const id of ["usage", "policy", "doctor"]) $(id).addEventListener("close", () => this.dialogClosed());
    $("theme").addEventListener("click", () => this.toggleTheme());
    // Infinite scroll: the next page as the list's end comes into view (the viewport as
    // root: it sees the sidebar's own scrolling on a wide screen and the page's on a phone).
    new IntersectionObserver((entries) => { if (entries.some((e) => e.isIntersecting)) this.loadMore(); }).observe($("more"));
    installKeys(this);
    document.body.dataset.ready = "1";
  }
}

new App().start();
