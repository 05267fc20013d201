// For `make bench`: the browser's SHA-256 of one file, picked in a page of
// Debian's Chromium, by each hasher the page and the widget could use:
// WebCrypto (one call, the whole file in memory: what they use up to
// 512 MiB), @noble/hashes incrementally in 8 MiB slices (the vendored
// shared/src/web/noble-sha256.js: above 512 MiB), and, with --old PATH, the
// hand-written incremental SHA-256 it replaced (a `Sha256` class), the same
// way. Each hasher's milliseconds, in interleaved rounds; prints one JSON
// line. All digests must agree.
//
//   node bench-hash.mjs --file PATH [--old PATH] [--rounds N]

import { readFileSync } from "node:fs";
import { createServer } from "node:http";
import { parseArgs } from "node:util";

import { launchChromium } from "./common.mjs";


const { values: args } = parseArgs({
  options: { file: { type: "string" }, old: { type: "string" }, rounds: { type: "string", default: "3" } },
});

const noble = readFileSync(new URL("../../shared/src/web/noble-sha256.js", import.meta.url), "utf8");
const old = args.old ? `${readFileSync(args.old, "utf8")}\nwindow.OldSha256 = Sha256;` : "";
const page = `<!doctype html><meta charset="utf-8"><input type="file" id="file">
<script>${noble}</script><script>${old}</script>`;
const server = createServer((_, res) => res.writeHead(200, { "content-type": "text/html" }).end(page));
await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));

const browser = await launchChromium();
const out = { webcrypto: [], noble: [], old: [] };
try {
  const tab = await (await browser.newContext()).newPage();
  await tab.goto(`http://127.0.0.1:${server.address().port}/`);
  await tab.setInputFiles("#file", args.file);
  for (let round = 0; round < Number(args.rounds); round++) {
    const r = await tab.evaluate(async () => {
      const file = document.getElementById("file").files[0];
      const CHUNK = 8 * 1024 * 1024;
      const hex = (b) => Array.from(new Uint8Array(b), (x) => x.toString(16).padStart(2, "0")).join("");
      const timed = async (f) => { const t = performance.now(); const h = await f(); return [performance.now() - t, h]; };
      const sliced = async (update) => {
        for (let at = 0; at < file.size; at += CHUNK) update(new Uint8Array(await file.slice(at, at + CHUNK).arrayBuffer()));
      };
      const res = {};
      res.webcrypto = await timed(async () => hex(await crypto.subtle.digest("SHA-256", await file.arrayBuffer())));
      res.noble = await timed(async () => { const s = nobleSha256.create(); await sliced((b) => s.update(b)); return hex(s.digest()); });
      if (window.OldSha256) res.old = await timed(async () => { const s = new OldSha256(); await sliced((b) => s.update(b)); return s.hex(); });
      return res;
    });
    const digests = new Set(Object.values(r).map(([, h]) => h));
    if (digests.size !== 1) throw new Error(`the hashers disagree: ${JSON.stringify(r)}`);
    for (const [k, [ms]] of Object.entries(r)) out[k].push(ms);
    out.sha256 = [...digests][0];
  }
} finally {
  await browser.close();
  server.close();
}
console.log(JSON.stringify(out));
