// Mounts the Scalar API reference on /openapi.json, with every feature that
// would reach another host (fonts, telemetry, request proxy, AI agent) off.
(function () {
  "use strict";
  var el = document.getElementById("api-reference");
  Scalar.createApiReference(el, {
    url: el.dataset.specUrl,
    withDefaultFonts: false,
    telemetry: false,
    proxyUrl: "",
    hideClientButton: false,
    showDeveloperTools: "never",
    agent: { disabled: true },
    mcp: { disabled: true },
    documentDownloadType: "json",
    metaData: { title: "API reference · Stencil" },
  });
})();
