// For `make bench`: uploads one file through the page in headless Chromium
// and reports the page's own timings (hashing, upload) and the browser's
// peak memory (the sum of its processes' RSS, sampled every 100 ms) over
// its memory before the file was picked. With `--sink URL` (a server that
// reads and discards a PUT body), the same browser then PUTs the same file
// there by a bare XHR: what this browser can upload at all on this machine,
// whatever the server does (or, given sluice's own upload link, what it
// takes to PUT into a server that hashes and writes as the page's upload
// does). Then the page's own hasher on the file alone (`hashAloneMs`).
// Prints one JSON line.
//
//   node bench-browser.mjs --page URL --file PATH [--sink URL]

import { readFileSync, readdirSync } from "node:fs";
import { parseArgs } from "node:util";

import { launchChromium } from "./common.mjs";


const { values: args } = parseArgs({ options: { page: { type: "string" }, file: { type: "string" }, sink: { type: "string" } } });

function browserRssKib(rootPid) {
  // Every process under this one (the browser and its helpers), not this one.
  const parent = new Map();
  const rss = new Map();
  for (const pid of readdirSync("/proc").filter((p) => /^\d+$/.test(p))) {
    try {
      const status = readFileSync(`/proc/${pid}/status`, "utf8");
      parent.set(Number(pid), Number(/PPid:\s+(\d+)/.exec(status)[1]));
      const m = /VmRSS:\s+(\d+)/.exec(status);
      rss.set(Number(pid), m ? Number(m[1]) : 0);
    } catch (_) {
      // gone
    }
  }
  let total = 0;
  for (const [pid, kib] of rss) {
    if (pid === rootPid) continue;
    for (let p = pid; p; p = parent.get(p)) {
      if (p === rootPid) {
        total += kib;
        break;
      }
    }
  }
  return total;
}

const launch = launchChromium;

// In a page of sluice's (page or widget): the picked file hashed by the
// form's own `sha256Read`, nothing sent; the milliseconds it took.
async function hashAlone() {
  const file = document.getElementById("file").files[0];
  const started = performance.now();
  await sha256Read(file, () => {});
  return performance.now() - started;
}

// One XHR PUT of the picked file to `url`, in a browser of its own (each
// upload in this script is its browser's first) and from a blank page of
// that origin (so no CORS preflight): the milliseconds it took.
async function bareUpload(url, file) {
  const browser = await launch();
  try {
    const page = await (await browser.newContext()).newPage();
    // A page of that origin: its root, or (sluice, whose root answers no
    // page) one of the form's assets.
    await page.goto(new URL(new URL(url).pathname.startsWith("/u/") ? "/browser/assets/upload.css" : "/", url).href);
    await page.setContent('<input type="file" id="file">');
    await page.setInputFiles("#file", file);
    return await page.evaluate((url) => new Promise((resolve, reject) => {
      const xhr = new XMLHttpRequest();
      xhr.open("PUT", url);
      const started = performance.now();
      xhr.onload = () => (xhr.status >= 200 && xhr.status < 300 ? resolve(performance.now() - started) : reject(new Error(`${xhr.status}`)));
      xhr.onerror = () => reject(new Error("network"));
      xhr.send(document.getElementById("file").files[0]);
    }), url);
  } finally {
    await browser.close();
  }
}

const browser = await launch();
let result;
try {
  const root = process.pid;
  const page = await (await browser.newContext()).newPage();
  await page.goto(args.page);
  const before = browserRssKib(root);
  let peak = before;
  const sampler = setInterval(() => { peak = Math.max(peak, browserRssKib(root)); }, 100);
  await page.setInputFiles("#file", args.file);
  await page.locator("#done").waitFor({ state: "visible", timeout: 600000 });
  clearInterval(sampler);
  result = { ...(await page.evaluate(() => window.sluiceTimings)), rssBeforeKib: before, rssPeakKib: peak };
  // Hashing alone, after: the page's own hasher on the same file, nothing sent.
  result.hashAloneMs = await page.evaluate(hashAlone);
} finally {
  await browser.close();
}
if (args.sink) result.sinkMs = await bareUpload(args.sink, args.file);
console.log(JSON.stringify(result));
