// post sends body as JSON (POST unless method says otherwise) with the
// session's CSRF token (the page's csrf-token meta), and gives the envelope
// the server answers (docs/api.md: status, message, data, warnings).
export function post(url, body, method) {
  const meta = document.querySelector('meta[name="csrf-token"]');
  return fetch(url, {
    method: method || "POST", credentials: "same-origin",
    headers: { "Content-Type": "application/json", Accept: "application/json", "X-CSRF-Token": meta ? meta.content : "" },
    body: JSON.stringify(body)
  }).then(function (r) { return r.json(); });
}
