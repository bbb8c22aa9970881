// ESLint's checks of the pages' scripts (static/src/js, bundled by esbuild
// into static/js) and of the repository's other JavaScript; `make test` runs
// them (make lint-js).
import js from "@eslint/js";
import globals from "globals";

export default [
  { ignores: ["static/js/**", "static/vendor/**", "node_modules/**", ".cache/**", "artifacts/**", "bin/**"] },
  js.configs.recommended,
  {
    files: ["static/src/js/**/*.js"],
    languageOptions: {
      ecmaVersion: 2020,
      sourceType: "module",
      // uPlot and Scalar are vendored, loaded before the scripts that use
      // them (the run statistics, the API reference).
      globals: { ...globals.browser, uPlot: "readonly", Scalar: "readonly" }
    },
    rules: {
      "no-unused-vars": ["error", { args: "none", caughtErrors: "none" }],
      eqeqeq: ["error", "smart"],
      "no-var": "off"
    }
  },
  {
    files: ["static/src/js/test/**/*.js"],
    languageOptions: { globals: globals.node }
  },
  {
    files: ["static/src/vendor-scalar.js", "tailwind.config.js"],
    languageOptions: { sourceType: "commonjs", globals: globals.node }
  },
  {
    files: ["eslint.config.mjs"],
    languageOptions: { sourceType: "module" }
  }
];
