// Checks the browser's incremental SHA-256s against Node's, on many
// lengths and chunkings: shared/src/web/noble-sha256.js (the vendored
// @noble/hashes, which the widget uses above 512 MiB) and
// shared/src/web/hash-wasm-sha256.js (the vendored hash-wasm, WebAssembly,
// which the page uses there); and that the vendored files are fresh builds
// of the pinned releases. Prints a JSON summary line.
import { execFileSync } from "node:child_process";
import { createHash, randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";

import { check } from "./common.mjs";

const source = readFileSync(new URL("../../shared/src/web/noble-sha256.js", import.meta.url), "utf8");
const scope = {};
new Function("globalThis", source)(scope);
const Sha256 = class {
  constructor() { this.h = scope.nobleSha256.create(); }
  update(bytes) { this.h.update(bytes); }
  hex() { return Buffer.from(this.h.digest()).toString("hex"); }
};
const fresh = JSON.parse(execFileSync("node", [new URL("vendor.mjs", import.meta.url).pathname, "--check"]).toString());

let cases = 0;
for (let len = 0; len <= 300; len++) {
  const data = randomBytes(len);
  for (const chunk of [1, 7, 63, 64, 65, 1000]) {
    const sha = new Sha256();
    for (let at = 0; at < len; at += chunk) sha.update(data.subarray(at, at + chunk));
    if (len === 0) sha.update(new Uint8Array(0));
    const want = createHash("sha256").update(data).digest("hex");
    check(sha.hex() === want, `length ${len} in chunks of ${chunk}`);
    cases++;
  }
}
const big = randomBytes(3 * 1024 * 1024 + 17);
const sha = new Sha256();
for (let at = 0; at < big.length; at += 1024 * 1024) sha.update(big.subarray(at, at + 1024 * 1024));
check(sha.hex() === createHash("sha256").update(big).digest("hex"), "3 MiB in 1 MiB chunks");

const wasmSource = readFileSync(new URL("../../shared/src/web/hash-wasm-sha256.js", import.meta.url), "utf8");
const wasmScope = {};
new Function("globalThis", wasmSource)(wasmScope);
let wasmCases = 0;
for (const len of [0, 1, 55, 56, 63, 64, 65, 1000, 3 * 1024 * 1024 + 17]) {
  const data = randomBytes(len);
  for (const chunk of [1, 64, 1000, 1024 * 1024]) {
    if (len > 100000 && chunk < 1000) continue;
    const h = await wasmScope.hashWasmSha256();
    h.init();
    for (let at = 0; at < len; at += chunk) h.update(data.subarray(at, at + chunk));
    const got = Buffer.from(h.digest("binary")).toString("hex");
    check(got === createHash("sha256").update(data).digest("hex"), `hash-wasm: length ${len} in chunks of ${chunk}`);
    wasmCases++;
  }
}
console.log(JSON.stringify({
  checks: [`${cases + 1} digests equal to node:crypto`, `${wasmCases} hash-wasm digests equal to node:crypto`, ...fresh.checks],
}));
