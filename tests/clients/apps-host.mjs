// A test MCP Apps host, built on the official pieces: the TypeScript SDK
// client talks to sluice (announcing the io.modelcontextprotocol/ui
// extension), calls request_browser_upload, reads the widget it names with
// resources/read, and renders it in Debian's Chromium (playwright-core) the
// way a host does: in a sandboxed iframe on an origin of its own (like
// claude.ai's <hash>.claudemcpcontent.com), under a Content-Security-Policy
// built from the widget's declared `_meta.ui.csp` alone, connected through
// the official AppBridge (apps-host-page.js). A person picks a file in it;
// the script checks what the host was told, that no file byte went through
// MCP or the host, and that the policy is exact (a request to an undeclared
// origin is blocked by the browser). Run by tests/tests/widget.rs; prints
// one JSON line {"checks": [...], "upload_id": ..., "timings": {hashMs, uploadMs}}
// (the widget's own timings, which `make bench` reads).
//
//   node apps-host.mjs --url MCP_URL --token T --file PATH --shots DIR
//                      --sandbox-port N [--prefix NAME] [--width PX] [--keyboard]
//
// With --keyboard the file is chosen without a mouse: Tab into the widget,
// Space on its picker. With --interrupt (a file in parts) the PUT of part 2
// fails as a dropped connection would: the widget says so in words, and
// "Try again" sends only the parts not stored yet. With --reload (a file in
// parts) every part after the first fails until the host page is reloaded
// (the widget rendered again, given the same tool result); the same file
// picked again sends only the parts not stored yet.

import { readFileSync } from "node:fs";

import { getToolUiResourceUri } from "@modelcontextprotocol/ext-apps/app-bridge";
import { RESOURCE_MIME_TYPE } from "@modelcontextprotocol/ext-apps";

import { appsClient, hostArgs, policyOf, recordingFetch, serveHost } from "./apps-common.mjs";
import { check, chooseByKeyboard, finished, launchChromium, tabToPicker } from "./common.mjs";

const args = hostArgs({
  file: { type: "string" },
  prefix: { type: "string", default: "" },
  width: { type: "string", default: "760" },
  keyboard: { type: "boolean", default: false },
  interrupt: { type: "boolean", default: false },
  reload: { type: "boolean", default: false },
  files: { type: "string", default: "1" },
});
// With --files N (N > 1) the page takes N files and --file lists them,
// comma-separated: all picked at once, each with its own bar, and the host
// told once.
const many = Number(args.files) > 1;
const paths = many ? args.file.split(",") : [args.file];
const checks = [];

// Every MCP request and response body, as sent and received.
const traffic = [];

const client = await appsClient(args.url, args.token, recordingFetch(traffic));
const extensions = client.getServerCapabilities()?.extensions ?? {};
check("io.modelcontextprotocol/ui" in extensions, `the server answers the extension: ${JSON.stringify(extensions)}`);
checks.push("initialize: the extension announced and answered");

// The tool names its widget under both keys.
const { tools } = await client.listTools();
const tool = tools.find((t) => t.name === "request_browser_upload");
const uri = getToolUiResourceUri(tool);
check(uri && uri.startsWith("ui://"), `the tool names a ui:// resource: ${JSON.stringify(tool._meta)}`);
check(tool._meta["ui/resourceUri"] === uri, "the flat ui/resourceUri key names the same resource");
checks.push("tools/list: _meta.ui.resourceUri and ui/resourceUri");

const input = many ? { files: Number(args.files) } : { filename: "notes.bin" };
const result = await client.callTool({ name: "request_browser_upload", arguments: input });
check(!result.isError, `request_browser_upload answered: ${JSON.stringify(result)}`);
check(result.content.some((c) => c.type === "text" && c.text.includes(result.structuredContent.page_url)), "the text still gives the page URL");

const read = await client.readResource({ uri });
const content = read.contents[0];
check(content.mimeType === RESOURCE_MIME_TYPE, `mimeType ${content.mimeType}`);
const ui = content._meta?.ui ?? {};
const connect = ui.csp?.connectDomains ?? [];
check(connect.length > 0 && connect.every((o) => /^https?:\/\/[^/]+$/.test(o)), `connectDomains are origins: ${connect}`);
check(/^[0-9a-f]{32}\.claudemcpcontent\.com$/.test(ui.domain ?? ""), `claude.ai's domain: ${ui.domain}`);
checks.push("resources/read: text/html;profile=mcp-app, CSP origins, domain");
const issuerOrigin = new URL(result.structuredContent.page_url).origin;
check(connect.includes(issuerOrigin), `the issuer's origin is declared: ${connect}`);

const probes = [];
const served = await serveHost({
  input,
  result,
  html: content.text,
  policy: policyOf(ui),
  sandboxPort: Number(args["sandbox-port"]),
  bubbles: [
    ["me", "Here is the file I mentioned; put it in the report."],
    ["", "Please upload it here; it goes straight to storage."],
  ],
  onRequest: (url) => {
    if (url === "/probe") probes.push(url);
  },
});
const { hostOrigin, sandboxOrigin } = served;

const browser = await launchChromium();
const shot = (page, name) => page.screenshot({ path: `${args.shots}/${args.prefix}${name}.png`, fullPage: true });
let uploadId;
let timings;
try {
  const page = await (await browser.newContext({ viewport: { width: Number(args.width), height: 560 } })).newPage();
  const requests = [];
  page.on("request", (r) => requests.push(new URL(r.url()).origin));
  const errors = [];
  page.on("console", (m) => {
    if (m.type() === "error") errors.push(m.text());
  });
  await page.goto(`${hostOrigin}/`);
  const view = page.frameLocator("#app");
  const finish = () => finished(view, () => shot(page, "widget-error-unexpected"));
  await view.locator("#wanted").filter({ hasText: many ? /^Choose up to \d+ files/ : /^Choose notes\.bin/ }).waitFor({ timeout: 30000 });
  let frame = page.frames().find((f) => f.url().startsWith(sandboxOrigin));
  check(frame, "the widget runs on the sandbox origin");
  const scrollWidth = await frame.evaluate(() => document.documentElement.scrollWidth);
  const frameWidth = await frame.evaluate(() => window.innerWidth);
  check(scrollWidth <= frameWidth, `no horizontal scroll in the frame (${scrollWidth} > ${frameWidth})`);
  await shot(page, "widget-before");
  checks.push("widget rendered in the sandbox, ready");

  // PUTs of parts, by part number, as the browser sends them.
  const partPuts = [];
  const partOf = (url) => {
    const m = /[?&]partNumber=(\d+)/.exec(url) || /\/parts\/(\d+)$/.exec(new URL(url).pathname);
    return m ? Number(m[1]) : null;
  };
  page.on("request", (r) => {
    if (r.method() === "PUT" && partOf(r.url()) !== null) partPuts.push(partOf(r.url()));
  });
  // PATCHes of a resumable (tus) upload, by the offset each sends from.
  const patches = [];
  const offsetOf = (request) => (request.method() === "PATCH" ? Number(request.headers()["upload-offset"]) : null);
  page.on("request", (r) => {
    if (offsetOf(r) !== null) patches.push(offsetOf(r));
  });
  if (args.interrupt) {
    let dropped = false;
    await page.route(
      (url) => partOf(url.href) === 2,
      (route) => {
        if (!dropped && route.request().method() === "PUT") {
          dropped = true;
          return route.abort("connectionreset");
        }
        return route.continue();
      },
    );
  }
  if (args.reload) {
    // Every request after the first is dropped (a PATCH from beyond byte
    // 0; a part past the first, where the store takes parts), so the page
    // shows an error with the first request's bytes stored; reloaded and
    // given the file again, it sends only what the server does not have.
    await page.route(
      (url) => true,
      (route) => {
        const r = route.request();
        const later = (offsetOf(r) ?? 0) > 0 || (r.method() === "PUT" && (partOf(r.url()) ?? 1) > 1);
        return later ? route.abort("connectionreset") : route.continue();
      },
    );
    await view.locator("#file").setInputFiles(args.file);
    await view.locator("#error").waitFor({ state: "visible", timeout: 60000 });
    await page.unrouteAll();
    await page.reload();
    await view.locator("#wanted").filter({ hasText: many ? /^Choose up to \d+ files/ : /^Choose notes\.bin/ }).waitFor({ timeout: 30000 });
    frame = page.frames().find((f) => f.url().startsWith(sandboxOrigin));
    const [putsBefore, patchesBefore] = [partPuts.length, patches.length];
    await view.locator("#file").setInputFiles(args.file);
    await finish();
    const puts = [...new Set(partPuts.slice(putsBefore))].sort();
    const from = patches.slice(patchesBefore);
    if (from.length > 0) {
      check(!from.includes(0), `after a reload only the bytes not stored are sent: from ${from}`);
      checks.push(`reloaded mid-upload, resumed: sent again only from byte ${Math.min(...from)}`);
    } else {
      check(puts.length > 0 && !puts.includes(1), `after a reload only the parts not stored are sent: ${puts}`);
      checks.push(`reloaded mid-upload, resumed: sent again only parts ${puts.join(", ")}`);
    }
  } else if (args.keyboard) {
    const focusedId = () =>
      frame.evaluate(() => document.hasFocus() && document.activeElement && document.activeElement.id);
    const focused = await tabToPicker(page, focusedId);
    check(focused === "file", `Tab reaches the widget's file picker (focused: ${focused})`);
    const outline = await frame.evaluate(() => getComputedStyle(document.getElementById("zone")).outlineStyle);
    check(outline !== "none", "the focused drop zone shows a visible outline");
    await shot(page, "widget-keyboard-focus");
    const chooser = await chooseByKeyboard(page, focusedId);
    await chooser.setFiles(args.file);
    checks.push("keyboard: Tab into the widget, Space, choose");
  } else {
    await view.locator("#file").setInputFiles(paths);
  }
  if (args.interrupt) {
    await view.locator("#error").waitFor({ state: "visible", timeout: 60000 });
    const said = await view.locator("#error").innerText();
    check(/interrupted|connection/i.test(said), `a dropped connection is explained: ${said}`);
    await shot(page, "widget-error");
    const before = partPuts.length;
    await view.locator("#retry").click();
    await finish();
    const again = partPuts.slice(before);
    check(!again.includes(1) && again.includes(2), `Try again sends only the parts not stored: ${again}`);
    checks.push(`interrupted, explained, resumed: sent again only part ${[...new Set(again)].sort().join(", ")}`);
  }
  await finish();
  const done = await view.locator("#done").innerText();
  check(/has been told/i.test(done), `the widget says the assistant was told: ${done}`);
  await page.waitForFunction(() => window.hostLog.some((m) => m.method === "ui/message"), null, { timeout: 10000 });
  await shot(page, "widget-after");
  const focusedDone = await frame.evaluate(() => document.activeElement && document.activeElement.id);
  check(focusedDone === "done", "focus moves to the result");
  checks.push("widget upload done");
  timings = await frame.evaluate(() => window.sluiceTimings);
  // For the benchmarks: the widget's own hasher on the file alone, nothing sent.
  timings.hashAloneMs = await frame.evaluate(async () => {
    const file = document.getElementById("file").files[0];
    if (!file) return null;
    const started = performance.now();
    await sha256Read(file, () => {});
    return performance.now() - started;
  });

  const log = await page.evaluate(() => window.hostLog);
  const message = log.find((m) => m.method === "ui/message");
  check(Array.isArray(message.params.content) && message.params.content[0].type === "text", "ui/message content is an array of blocks");
  const context = log.find((m) => m.method === "ui/update-model-context");
  check(context && context.params.structuredContent.upload_id === result.structuredContent.upload_id, "ui/update-model-context carries the upload_id");
  check(message.params.content[0].text.includes(result.structuredContent.upload_id), "ui/message names the upload_id");
  // The file's name is the person's disk's, not the person's words: it
  // never enters a user-role message or the model's context.
  for (const path of paths) {
    const picked = path.split("/").pop();
    check(!JSON.stringify(message.params).includes(picked) && !JSON.stringify(context.params).includes(picked), `the file's name (${picked}) is not in ui/message or the model context`);
  }
  if (many) {
    check(log.filter((m) => m.method === "ui/message").length === 1, "one ui/message for every file");
    check(message.params.content[0].text.includes(`${paths.length} files`), `ui/message says how many: ${message.params.content[0].text}`);
    const states = await view.locator("#files li .state").allInnerTexts();
    check(states.length === paths.length && states.every((t) => t === "done"), `each file has its own row, done: ${states}`);
    checks.push(`${paths.length} files, each with its own bar, the host told once`);
  }
  check(!log.some((m) => m.method === "tools/call"), "the widget called no tool through the host");
  checks.push("the host was told: ui/update-model-context and ui/message");
  uploadId = context.params.structuredContent.upload_id;

  // No byte of the file in anything MCP carried or the view posted.
  const data = readFileSync(paths[0]);
  const marks = [data.subarray(0, 32).toString("latin1"), data.subarray(0, 48).toString("base64"), data.subarray(1, 49).toString("base64"), data.subarray(2, 50).toString("base64")];
  const posted = await page.evaluate(() => window.posted);
  for (const text of [...traffic, ...posted]) {
    check(!marks.some((m) => text.includes(m)), "no file bytes in any MCP message or anything the view posted");
  }
  checks.push("no file bytes through MCP or the host");

  // The policy is exact: a request to an undeclared origin (the host's own)
  // is blocked by the browser before it is sent.
  const blocked = await frame.evaluate(async (url) => {
    const seen = new Promise((resolve) => document.addEventListener("securitypolicyviolation", (e) => resolve(e.blockedURI), { once: true }));
    try {
      await fetch(url);
      return { fetched: true };
    } catch (e) {
      return { fetched: false, blockedURI: await seen };
    }
  }, `${hostOrigin}/probe`);
  check(!blocked.fetched && blocked.blockedURI.startsWith(hostOrigin), `an undeclared origin is blocked: ${JSON.stringify(blocked)}`);
  check(probes.length === 0, "the blocked request never reached its server");
  const outside = requests.filter((o) => o !== hostOrigin && o !== sandboxOrigin && !connect.includes(o));
  check(outside.length === 0, `no request outside the host, the sandbox and the declared origins: ${outside}`);
  check(!errors.some((e) => /Content Security Policy/i.test(e) && !e.includes("/probe")), `no other CSP violation: ${errors}`);
  checks.push("CSP exact: an undeclared origin is blocked");
} finally {
  await browser.close();
  served.close();
  await client.close();
}
console.log(JSON.stringify({ checks, upload_id: uploadId, timings }));
