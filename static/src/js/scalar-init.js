// Mounts the Scalar API reference on the document named by data-url, with every feature that
// would reach another host (fonts, telemetry, request proxy, AI agent) off.
function main() {
  var el = document.getElementById("api-docs");
  // Scalar declares its web fonts from its own CDN whatever withDefaultFonts
  // says; a font is only fetched when used, so use the system's fonts instead.
  var systemFonts =
    ":root, .scalar-app, .light-mode, .dark-mode {" +
    " --scalar-font: ui-sans-serif, system-ui, sans-serif !important;" +
    " --scalar-font-code: ui-monospace, SFMono-Regular, Menlo, Consolas, 'Liberation Mono', monospace !important; }";
  // The authentication box's "Required" badge is clipped against the auth
  // type picker beside it, so the two read as one run of text; the box's
  // description already says a token is needed.
  var authBox = ' [data-testid="auth-indicator"] { display: none !important; }';
  // Secondary and faint text at readable contrast (WCAG AA) on Scalar's
  // light backgrounds: slate-700 and slate-600 instead of its greys.
  var contrast = " .light-mode, .light-mode .scalar-app, :root { --scalar-color-2: #334155 !important; --scalar-color-3: #475569 !important;" +
    " --scalar-color-green: #047857 !important; --scalar-color-blue: #1d4ed8 !important; --scalar-color-orange: #b45309 !important;" +
    " --scalar-color-red: #b91c1c !important; --scalar-color-purple: #6d28d9 !important; --scalar-color-yellow: #a16207 !important; }" +
    " .light-mode .sidebar-search-placeholder { color: #475569 !important; }";
  // Scalar's code blocks have a copy button with an icon and no name: name
  // them as they appear.
  // A tag's list of endpoints scrolls once it is long (the routes' tag):
  // the keyboard reaches it to scroll it.
  new MutationObserver(function () {
    el.querySelectorAll("button.scalar-code-copy:not([aria-label])").forEach(function (b) {
      b.setAttribute("aria-label", "Copy the code");
    });
    el.querySelectorAll('ul[aria-label$=" endpoints"]:not([tabindex])').forEach(function (u) {
      u.setAttribute("tabindex", "0");
    });
  }).observe(el, { childList: true, subtree: true });
  Scalar.createApiReference(el, {
    url: el.dataset.url,
    withDefaultFonts: false,
    telemetry: false,
    proxyUrl: "",
    hideClientButton: false,
    showDeveloperTools: "never",
    agent: { disabled: true },
    mcp: { disabled: true },
    documentDownloadType: "json",
    defaultOpenAllTags: true,
    metaData: { title: el.dataset.title },
    customCss: systemFonts + authBox + contrast,
  });
}

main();
