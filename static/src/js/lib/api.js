// csrfToken is the session's CSRF token, from the page's csrf-token meta
// ("" on a page without one).
export function csrfToken() {
  const meta = document.querySelector('meta[name="csrf-token"]');
  return meta ? meta.content : "";
}

// sendText sends text of a content type (a CSV to import) with the
// session's CSRF token, and gives the envelope the server answers.
export function sendText(url, text, contentType) {
  return fetch(url, {
    method: "POST", credentials: "same-origin",
    headers: { "Content-Type": contentType, Accept: "application/json", "X-CSRF-Token": csrfToken() },
    body: text
  }).then(function (r) { return r.json(); });
}

// post sends body as JSON (POST unless method says otherwise) with the
// session's CSRF token (the page's csrf-token meta), and gives the envelope
// the server answers (docs/architecture.md: status, message, data, warnings).
export function post(url, body, method) {
  return fetch(url, {
    method: method || "POST", credentials: "same-origin",
    headers: { "Content-Type": "application/json", Accept: "application/json", "X-CSRF-Token": csrfToken() },
    body: JSON.stringify(body)
  }).then(function (r) { return r.json(); });
}
