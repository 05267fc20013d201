// Builds shared/src/web/noble-sha256.js, the browser's incremental SHA-256,
// from the pinned @noble/hashes release (package-lock.json) with the pinned
// esbuild: one minified script that defines `nobleSha256`. `make vendor`
// writes it; with --check, exits non-zero if the committed file differs
// from a fresh build (run by the tests).
//
//   node vendor.mjs [--check]

import { readFileSync, writeFileSync } from "node:fs";

import { build } from "esbuild";

const { version } = JSON.parse(readFileSync(new URL("node_modules/@noble/hashes/package.json", import.meta.url), "utf8"));
const out = new URL("../../shared/src/web/noble-sha256.js", import.meta.url);

const result = await build({
  stdin: { contents: 'import { sha256 } from "@noble/hashes/sha2.js";\nglobalThis.nobleSha256 = sha256;\n', resolveDir: process.cwd() },
  bundle: true,
  minify: true,
  format: "iife",
  legalComments: "inline",
  write: false,
});
const text =
  `// @noble/hashes ${version} (sha256 only; MIT, see noble-hashes.LICENSE), bundled by\n` +
  `// tests/clients/vendor.mjs with esbuild: do not edit; \`make vendor\` rebuilds it.\n` +
  result.outputFiles[0].text;

if (process.argv.includes("--check")) {
  const committed = readFileSync(out, "utf8");
  if (committed !== text) {
    console.error(`shared/src/web/noble-sha256.js is not a fresh build of @noble/hashes ${version}: run make vendor`);
    process.exit(1);
  }
  console.log(JSON.stringify({ checks: [`vendored @noble/hashes ${version} is a fresh build`] }));
} else {
  writeFileSync(out, text);
  console.log(`wrote ${out.pathname} (@noble/hashes ${version}, ${text.length} bytes)`);
}
