// Where the dashboard is, kept in the address after '#': the profile, the open session and
// message, whether compacted history is shown, the search, and the open dialog (usage,
// policy or doctor). Reload keeps it, Back and Forward walk it, and the address can be shared.
//
// The hash rather than paths through history.pushState: the service serves the dashboard
// at `/` alone, and what follows '#' never leaves the browser, so the session ids and the
// words searched stay out of the service's and any proxy's logs, as the token does.

const KEYS = ["profile", "session", "message", "compacted", "q", "view"];

// The route the address holds now (only the keys above, only those with a value).
export function current() {
  const params = new URLSearchParams(location.hash.slice(1));
  const route = {};
  for (const key of KEYS) if (params.get(key)) route[key] = params.get(key);
  return route;
}

// `route` with `change` applied: a key given null (or "", or false) is removed.
export function changed(route, change) {
  const next = Object.assign({}, route, change);
  for (const key of KEYS) if (next[key] === null || next[key] === undefined || next[key] === "" || next[key] === false) delete next[key];
  return next;
}

function address(route) {
  const params = new URLSearchParams();
  for (const key of KEYS) if (route[key] !== undefined) params.set(key, route[key]);
  const hash = params.toString();
  return location.pathname + location.search + (hash ? "#" + hash : "");
}

// Put `route` in the address: a new history entry, or in place of this one with `replace`.
// An entry pushed here is marked, so that closing a dialog it opened can go back to it.
export function go(route, replace = false) {
  const url = address(route);
  if (url === location.pathname + location.search + location.hash) return;
  if (replace) history.replaceState(history.state, "", url);
  else history.pushState({ pushed: true }, "", url);
}

// Whether the entry before this one is the dashboard's own (Back stays in the dashboard).
export function pushed() {
  return Boolean(history.state && history.state.pushed);
}
