// Builds the browser scripts sluice vendors, each from its pinned release
// (package-lock.json) with the pinned esbuild, one minified script each:
//
// - shared/src/web/noble-sha256.js, the browser's incremental SHA-256
//   (@noble/hashes), which defines `nobleSha256`;
// - shared/src/web/tus.js, the tus client the page and the widget upload
//   with where sluice receives the bytes (tus-js-client), which defines `tus`.
//
// `make vendor` writes them; with --check, exits non-zero if a committed
// file differs from a fresh build (run by the tests).
//
//   node vendor.mjs [--check]

import { readFileSync, writeFileSync } from "node:fs";

import { build } from "esbuild";

const scripts = [
  {
    pkg: "@noble/hashes",
    file: "noble-sha256.js",
    what: "sha256 only; MIT, see noble-hashes.LICENSE",
    source: 'import { sha256 } from "@noble/hashes/sha2.js";\nglobalThis.nobleSha256 = sha256;\n',
  },
  {
    pkg: "tus-js-client",
    file: "tus.js",
    what: "its browser build; MIT, see tus-js-client.LICENSE",
    source: 'import * as tus from "tus-js-client";\nglobalThis.tus = tus;\n',
    // Its package maps its Node entry to the browser's for this platform.
    options: { platform: "browser", target: "es2020" },
  },
  {
    pkg: "hash-wasm",
    file: "hash-wasm-sha256.js",
    what: "createSHA256 only; MIT, see hash-wasm.LICENSE",
    source: 'import { createSHA256 } from "hash-wasm";\nglobalThis.hashWasmSha256 = createSHA256;\n',
    options: { platform: "browser", target: "es2020" },
  },
];

const checks = [];
let stale = false;
for (const { pkg, file, what, source, options = {} } of scripts) {
  const { version } = JSON.parse(readFileSync(new URL(`node_modules/${pkg}/package.json`, import.meta.url), "utf8"));
  const out = new URL(`../../shared/src/web/${file}`, import.meta.url);
  const result = await build({
    stdin: { contents: source, resolveDir: process.cwd() },
    bundle: true,
    minify: true,
    format: "iife",
    legalComments: "inline",
    ...options,
    write: false,
  });
  const text =
    `// ${pkg} ${version} (${what}), bundled by\n` +
    `// tests/clients/vendor.mjs with esbuild: do not edit; \`make vendor\` rebuilds it.\n` +
    result.outputFiles[0].text;
  if (process.argv.includes("--check")) {
    if (readFileSync(out, "utf8") !== text) {
      console.error(`shared/src/web/${file} is not a fresh build of ${pkg} ${version}: run make vendor`);
      stale = true;
    } else {
      checks.push(`vendored ${pkg} ${version} is a fresh build`);
    }
  } else {
    writeFileSync(out, text);
    console.log(`wrote ${out.pathname} (${pkg} ${version}, ${text.length} bytes)`);
  }
}
if (process.argv.includes("--check")) {
  if (stale) process.exit(1);
  console.log(JSON.stringify({ checks }));
}
