// Mounts the Scalar API reference on the document named by data-url, with every feature that
// would reach another host (fonts, telemetry, request proxy, AI agent) off.
(function () {
  "use strict";
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
    customCss: systemFonts + authBox,
  });
})();
