// The download view in a test MCP Apps host built on the official pieces
// (apps-common.mjs, apps-host-page.js: the TypeScript SDK client, AppBridge
// in Debian's Chromium, the view on a sandbox origin of its own under the
// policy its `_meta.ui.csp` declares). The model's get_download_url names
// the view; the person clicks "Save"; the host is asked (ui/download-file)
// to save a resource_link to the single-use link, and the browser downloads
// it. The script checks the saved bytes' SHA-256, that no byte went through
// MCP or the view, and that the link then works no more. Prints one JSON
// line {"checks": [...]}.
//
//   node apps-download-host.mjs --url MCP_URL --token T --handle H
//                               --sha256 HEX --shots DIR --sandbox-port N

import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";

import { getToolUiResourceUri } from "@modelcontextprotocol/ext-apps/app-bridge";
import { RESOURCE_MIME_TYPE } from "@modelcontextprotocol/ext-apps";

import { appsClient, hostArgs, policyOf, recordingFetch, serveHost } from "./apps-common.mjs";
import { check, launchChromium } from "./common.mjs";

const args = hostArgs({ handle: { type: "string" }, sha256: { type: "string" } });
const checks = [];
const traffic = [];
const client = await appsClient(args.url, args.token, recordingFetch(traffic));

const { tools } = await client.listTools();
const tool = tools.find((t) => t.name === "get_download_url");
const uri = getToolUiResourceUri(tool);
check(uri === "ui://sluice/download.html", `get_download_url names the download view: ${JSON.stringify(tool._meta)}`);
const input = { file: args.handle };
const result = await client.callTool({ name: "get_download_url", arguments: input });
check(!result.isError, `get_download_url answered: ${JSON.stringify(result)}`);
check(result.structuredContent.command, "hosts without MCP Apps still get the download line");
const read = await client.readResource({ uri });
const content = read.contents[0];
check(content.mimeType === RESOURCE_MIME_TYPE, `mimeType ${content.mimeType}`);
const ui = content._meta?.ui ?? {};
check((ui.csp?.connectDomains ?? []).length === 0, `the view connects nowhere: ${JSON.stringify(ui.csp)}`);
check(/^[0-9a-f]{32}\.claudemcpcontent\.com$/.test(ui.domain ?? ""), `claude.ai's domain: ${ui.domain}`);
checks.push("tools/list and resources/read: the download view, connecting nowhere");

const served = await serveHost({
  input,
  result,
  html: content.text,
  policy: policyOf(ui),
  sandboxPort: Number(args["sandbox-port"]),
  title: "Download a file",
  bubbles: [
    ["me", "Can I have the report?"],
    ["", "Here it is; save it from here."],
  ],
});

const browser = await launchChromium();
try {
  const context = await browser.newContext({ viewport: { width: 760, height: 560 }, acceptDownloads: true });
  const page = await context.newPage();
  const fromView = [];
  page.on("request", (r) => {
    if (r.frame() && r.frame().url().startsWith(served.sandboxOrigin) && !r.url().startsWith(served.sandboxOrigin)) fromView.push(r.url());
  });
  await page.goto(`${served.hostOrigin}/`);
  const view = page.frameLocator("#app");
  await view.locator("#save").waitFor({ state: "visible", timeout: 30000 });
  const what = await view.locator("#what").innerText();
  check(what.includes(result.structuredContent.filename), `the view names the file: ${what}`);
  await page.screenshot({ path: `${args.shots}/download-before.png`, fullPage: true });
  checks.push("the view rendered in the sandbox, naming the file");

  const [download] = await Promise.all([page.waitForEvent("download", { timeout: 30000 }), view.locator("#save").click()]);
  const path = await download.path();
  const got = createHash("sha256").update(readFileSync(path)).digest("hex");
  check(got === args.sha256, `the saved file is the file: ${got}`);
  check(download.suggestedFilename() === result.structuredContent.filename, `saved as ${download.suggestedFilename()}`);
  await view.locator("#said").filter({ hasText: /^Saved / }).waitFor({ timeout: 10000 });
  await page.screenshot({ path: `${args.shots}/download-after.png`, fullPage: true });
  const log = await page.evaluate(() => window.hostLog);
  const asked = log.find((m) => m.method === "ui/download-file");
  check(asked && asked.params.contents[0].type === "resource_link", "the host was asked to save a resource_link");
  check(asked.params.contents[0].uri === result.structuredContent.download.url, "to the single-use link");
  checks.push("Save: the host saved the file through ui/download-file, SHA-256 checked");

  // Nothing of the file passed through MCP or the view, which fetched
  // nothing itself; and the link was used once.
  const data = readFileSync(path);
  const marks = [data.subarray(0, 32).toString("latin1"), data.subarray(0, 48).toString("base64")];
  const posted = await page.evaluate(() => window.posted);
  for (const text of [...traffic, ...posted]) {
    check(!marks.some((m) => text.includes(m)), "no file bytes in any MCP message or anything the view posted");
  }
  check(fromView.length === 0, `the view itself fetched nothing: ${fromView}`);
  const again = await fetch(result.structuredContent.download.url, { redirect: "manual" });
  check(again.status >= 400, `the link works once: a second GET is ${again.status}`);
  checks.push("no file bytes through MCP or the view; the link is spent");
} finally {
  await browser.close();
  served.close();
  await client.close();
}
console.log(JSON.stringify({ checks }));
