// require("inbox-core") from CommonJS. The package is an ES module (R42): node 20 cannot
// require() one before 20.19 (or with --no-experimental-require-module), and its own error
// ("require() of ES Module ... not supported") names no way out; later nodes load it here.
"use strict";
try {
  module.exports = require("./dist/index.js");
} catch (error) {
  if (error && error.code === "ERR_REQUIRE_ESM") {
    throw new Error(
      'inbox-core is an ES module: import it (import { followup } from "inbox-core"), or ' +
        'load it from CommonJS with await import("inbox-core") (node 20.19, 22.12 and later ' +
        "require() it as well)",
      { cause: error },
    );
  }
  throw error;
}
