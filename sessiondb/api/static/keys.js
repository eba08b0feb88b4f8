// The keyboard: `/` focuses search; arrows (outside the transcript, which they scroll) or
// j/k move through the sessions or hits shown in the sidebar; Enter opens (they are buttons); Esc closes the open dialog, then the
// open transcript (on a phone), then the search. Every control is a native button, link
// or field, so Tab reaches it.

function typing(target) {
  return target.closest("input, textarea, select, [contenteditable]") !== null;
}

function items() {
  return [...document.querySelectorAll(".sidebar .item")].filter((node) => node.offsetParent !== null);
}

function move(step) {
  const all = items();
  if (!all.length) return;
  const at = all.indexOf(document.activeElement);
  const next = at === -1 ? (step > 0 ? 0 : all.length - 1) : Math.min(all.length - 1, Math.max(0, at + step));
  all[next].focus();
  all[next].scrollIntoView({ block: "nearest" });
}

export function installKeys(app) {
  document.addEventListener("keydown", (event) => {
    if (event.ctrlKey || event.metaKey || event.altKey) return;
    if (event.key === "Escape") {
      if (document.querySelector("dialog[open]")) return;  // the dialog closes itself
      if (app.viewing()) { app.closeView(); event.preventDefault(); return; }
      if (app.search.text) { app.clearSearch(); event.preventDefault(); }
      return;
    }
    if (typing(event.target)) {
      if (event.key === "ArrowDown" && event.target.id === "search") { move(1); event.preventDefault(); }
      return;
    }
    if (event.key === "/") {
      event.preventDefault();
      app.showSidebar();
      document.getElementById("search").focus();
      return;
    }
    // In the transcript the arrows scroll it; j and k move through the list from anywhere.
    const arrows = !event.target.closest("#view");
    if ((arrows && event.key === "ArrowDown") || event.key === "j") {
      event.preventDefault();
      move(1);
    } else if ((arrows && event.key === "ArrowUp") || event.key === "k") {
      event.preventDefault();
      move(-1);
    }
  });
}
