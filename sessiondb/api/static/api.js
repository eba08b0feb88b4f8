// The JSON API, as the dashboard calls it: the service's token, JSON
// bodies (always sent as application/json), and errors as the API's {code, message}.

// The link `sessiondb serve` prints carries the token after '#', which the browser never
// sends to the server: it is kept for this tab and taken out of the address at once, so it
// is neither in the history nor in a link copied from the address bar.
const TOKEN_KEY = "sessiondb-token";
{
  const params = new URLSearchParams(location.hash.slice(1));
  if (params.has("token")) {
    sessionStorage.setItem(TOKEN_KEY, params.get("token"));
    params.delete("token");
    const rest = params.toString();
    history.replaceState(null, "", location.pathname + location.search + (rest ? "#" + rest : ""));
  }
}

// Every call carries the token; anything that changes data is sent as JSON, body or not,
// because the service refuses any other state-changing request.
export async function request(path, options = {}) {
  const headers = Object.assign({ Accept: "application/json" }, options.headers || {});
  const token = sessionStorage.getItem(TOKEN_KEY);
  if (token) headers["Authorization"] = "Bearer " + token;
  if (options.method && options.method !== "GET") headers["Content-Type"] = "application/json";
  if (options.body !== undefined && typeof options.body !== "string") {
    options = Object.assign({}, options, { body: JSON.stringify(options.body) });
  }
  const response = await fetch(path, Object.assign({}, options, { headers }));
  if (response.status === 401) {
    const given = window.prompt("This sessiondb service answers its owner only: paste its token (open the " +
      "link `sessiondb serve` printed, or copy the token from serve-token in the sessiondb home):");
    if (given) {
      sessionStorage.setItem(TOKEN_KEY, given.trim());
      return request(path, options);
    }
  }
  if (!response.ok) {
    const body = await response.json().catch(() => ({}));
    const error = new Error(body.message || response.statusText);
    error.body = body;
    throw error;
  }
  return response;
}

export async function api(path, options = {}) {
  const response = await request(path, options);
  return response.json().catch(() => ({}));
}

// A link cannot send the token, so an export is fetched with it and handed to the browser
// as a download of the fetched bytes.
export async function download(path, name) {
  const blob = await (await request(path)).blob();
  const url = URL.createObjectURL(blob);
  const link = document.createElement("a");
  link.href = url;
  link.download = name;
  document.body.append(link);
  link.click();
  link.remove();
  setTimeout(() => URL.revokeObjectURL(url), 60000);
}

// A query string from the parameters that have a value.
export function query(params) {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== null && v !== undefined && v !== "" && v !== false) q.set(k, v);
  return q.toString();
}

export function sessionPath(id, rest = "") {
  return `/api/sessions/${encodeURIComponent(id)}${rest}`;
}
