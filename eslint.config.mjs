// ESLint for the app's JavaScript (ui/js/, read by ui/views/scripts.py): `npm run lint` after `./setup.sh --dev`;
// tests/test_page_scripts.py runs it too (CI fails on any finding).
import js from "@eslint/js";
import globals from "globals";

// Gradio runs a gr.HTML's js_on_load as the body of Function("element", "trigger", "props", "server", "upload",
// "watch", body): these are its arguments, and a `return` at the top is allowed.
const JS_ON_LOAD = {element: "readonly", trigger: "readonly", props: "readonly", server: "readonly",
                    upload: "readonly", watch: "readonly"};

export default [
  js.configs.recommended,
  {
    files: ["ui/js/**/*.js"],
    languageOptions: {
      ecmaVersion: 2022,
      sourceType: "script",
      parserOptions: {ecmaFeatures: {globalReturn: true}},
      globals: {...globals.browser, Plotly: "readonly"},
    },
    rules: {
      eqeqeq: ["error", "always", {null: "ignore"}],
      "no-var": "error",
      "prefer-const": "error",
      "no-shadow": "error",
      "no-unused-vars": ["error", {args: "none"}],
      curly: ["error", "multi-line"],
    },
  },
  {files: ["ui/js/plot.js", "ui/js/treelod.js", "ui/js/runbar.js", "ui/js/links.js", "ui/js/inspector.js"],
   languageOptions: {globals: JS_ON_LOAD}},
  // treelod.js and plot.js are one js_on_load (ui/tabs/common.py PLOT_JS): plot.js calls these two
  {files: ["ui/js/treelod.js"], rules: {"no-unused-vars": ["error", {args: "none", varsIgnorePattern: "^lod(Inject|Refresh)$"}]}},
  {files: ["ui/js/plot.js"], languageOptions: {globals: {lodInject: "readonly", lodRefresh: "readonly"}}},
  // column_tips.js runs inside `(() => { const tips = {...}; ... })()` in the page head (ui/glossary.py)
  {files: ["ui/js/column_tips.js"], languageOptions: {globals: {tips: "readonly"}}},
  // the exported offline page (ui/views/export.py) defines FIGS in the script before this one
  {files: ["ui/js/export_page.js"], languageOptions: {globals: {FIGS: "readonly"}}},
];
