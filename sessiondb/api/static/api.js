// The JSON API, as the dashboard calls it: the token when the service needs one, JSON
// bodies (always sent as application/json), and errors as the API's {code, message}.

export async function api(path, options = {}) {
  const headers = Object.assign({ Accept: "application/json" }, options.headers || {});
  const token = sessionStorage.getItem("sessiondb-token");
  if (token) headers["Authorization"] = "Bearer " + token;
  if (options.body !== undefined && typeof options.body !== "string") {
    headers["Content-Type"] = "application/json";
    options = Object.assign({}, options, { body: JSON.stringify(options.body) });
  }
  const response = await fetch(path, Object.assign({}, options, { headers }));
  if (response.status === 401) {
    const given = window.prompt("This sessiondb service needs its token:");
    if (given) {
      sessionStorage.setItem("sessiondb-token", given.trim());
      return api(path, options);
    }
  }
  const body = await response.json().catch(() => ({}));
  if (!response.ok) {
    const error = new Error(body.message || response.statusText);
    error.body = body;
    throw error;
  }
  return body;
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
