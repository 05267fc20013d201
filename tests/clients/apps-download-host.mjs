// The download view in a test MCP Apps host built on the official pieces
// (apps-common.mjs, apps-host-page.js: the TypeScript SDK client, AppBridge
// in Debian's Chromium, the view on a sandbox origin of its own under the
// policy its `_meta.ui.csp` declares). The host saves as Claude does:
// embedded content only, after the person's click. The model's
// get_download_url names the view; the person clicks "Save":
//   --mode embed    the view fetches the file from sluice, checks it, and
//                   hands it to the host embedded; the browser saves it.
//   --mode refused  the same, the host refusing the first save (a person
//                   cancelling): the view says so, keeps the bytes, and the
//                   second click saves them without fetching again.
//   --mode link     a file over the view's embedding size: the view asks
//                   the host to open the person's link (ui/open-link, its
//                   origin in linkTrustedDomains); the page there names the
//                   file, and its button saves it.
// Each mode checks the saved bytes' SHA-256, that no byte went through MCP,
// and that the link then works no more. Prints {"checks": [...]}.
//
//   node apps-download-host.mjs --url MCP_URL --token T --handle H
//        --sha256 HEX --shots DIR --sandbox-port N --mode embed|refused|link

import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";

import { getToolUiResourceUri } from "@modelcontextprotocol/ext-apps/app-bridge";
import { RESOURCE_MIME_TYPE } from "@modelcontextprotocol/ext-apps";

import { appsClient, hostArgs, policyOf, recordingFetch, serveHost } from "./apps-common.mjs";
import { check, launchChromium } from "./common.mjs";

const args = hostArgs({ handle: { type: "string" }, sha256: { type: "string" }, mode: { type: "string" } });
const mode = args.mode;
check(["embed", "refused", "link"].includes(mode), `a mode: ${mode}`);
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
const answer = result.structuredContent;
check(answer.command, "hosts without MCP Apps still get the download line");
check(answer.file_ref?.download_url === answer.download.url && answer.file_ref.file_id === answer.file_id, `a file reference: ${JSON.stringify(answer.file_ref)}`);
const read = await client.readResource({ uri });
const content = read.contents[0];
check(content.mimeType === RESOURCE_MIME_TYPE, `mimeType ${content.mimeType}`);
const ui = content._meta?.ui ?? {};
const linkOrigin = new URL(answer.download.url).origin;
check((ui.csp?.connectDomains ?? []).includes(linkOrigin), `the view connects to sluice's links: ${JSON.stringify(ui.csp)}`);
check((ui.linkTrustedDomains ?? []).includes(linkOrigin), `and opens them as trusted: ${JSON.stringify(ui)}`);
check(/^[0-9a-f]{32}\.claudemcpcontent\.com$/.test(ui.domain ?? ""), `claude.ai's domain: ${ui.domain}`);
checks.push("tools/list and resources/read: the download view, connecting to sluice's links only");

const served = await serveHost({
  input,
  result,
  html: content.text,
  policy: policyOf(ui),
  sandboxPort: Number(args["sandbox-port"]),
  title: "Download a file",
  refuseSaves: mode === "refused" ? 1 : 0,
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
  check(what.includes(answer.filename), `the view names the file: ${what}`);
  await page.screenshot({ path: `${args.shots}/download-${mode}-before.png`, fullPage: true });
  checks.push("the view rendered in the sandbox, naming the file");

  let download;
  if (mode === "link") {
    const [opened] = await Promise.all([context.waitForEvent("page", { timeout: 30000 }), view.locator("#save").click()]);
    await opened.waitForLoadState();
    check(opened.url() === answer.download.url, `the person's link opened: ${opened.url()}`);
    const shown = await opened.locator("main").innerText();
    check(shown.includes(answer.filename) && shown.includes(args.sha256), `the page names the file and its SHA-256: ${shown}`);
    await opened.screenshot({ path: `${args.shots}/download-page.png`, fullPage: true });
    checks.push("a file over the embedding size: the host opened the person's page, which spent nothing");
    [download] = await Promise.all([opened.waitForEvent("download", { timeout: 30000 }), opened.locator("#save").click()]);
    check(fromView.length === 0, `the view itself fetched nothing: ${fromView}`);
  } else {
    if (mode === "refused") {
      await view.locator("#save").click();
      await view.locator("#said").filter({ hasText: /still here/ }).waitFor({ timeout: 30000 });
      const said = await view.locator("#said").innerText();
      check(!/used up|already used/.test(said), `a refused save never says the link is used up: ${said}`);
      checks.push("a refused save keeps the checked bytes and asks again");
    }
    [download] = await Promise.all([page.waitForEvent("download", { timeout: 30000 }), view.locator("#save").click()]);
    check(fromView.length === 1 && fromView[0].startsWith(answer.download.url), `the view fetched the link once: ${fromView}`);
  }
  const path = await download.path();
  const data = readFileSync(path);
  const got = createHash("sha256").update(data).digest("hex");
  check(got === args.sha256, `the saved file is the file: ${got}`);
  check(download.suggestedFilename() === answer.filename, `saved as ${download.suggestedFilename()}`);
  const log = await page.evaluate(() => window.hostLog);
  if (mode === "link") {
    check(log.some((m) => m.method === "ui/open-link" && m.params.url === answer.download.url), "the host was asked to open the link");
    check(!log.some((m) => m.method === "ui/download-file"), "and to save nothing itself");
  } else {
    await view.locator("#said").filter({ hasText: /^Saved / }).waitFor({ timeout: 10000 });
    const asked = log.filter((m) => m.method === "ui/download-file");
    check(asked.length === (mode === "refused" ? 2 : 1), `asked to save ${asked.length} time(s)`);
    check(asked.every((a) => a.params.contents[0].type === "resource" && a.params.contents[0].resource.blob), "embedded content, as Claude saves it");
  }
  await page.screenshot({ path: `${args.shots}/download-${mode}-after.png`, fullPage: true });
  checks.push("Save: the browser saved the file, SHA-256 checked");

  // Nothing of the file passed through MCP, and the link was used once.
  const marks = [data.subarray(0, 32).toString("latin1"), data.subarray(0, 48).toString("base64")];
  for (const text of traffic) {
    check(!marks.some((m) => text.includes(m)), "no file bytes in any MCP message");
  }
  const again = await fetch(answer.download.url, { redirect: "manual" });
  check(again.status === 404, `the link works once: a second GET is ${again.status}`);
  checks.push("no file bytes through MCP; the link is spent");
} finally {
  await browser.close();
  served.close();
  await client.close();
}
console.log(JSON.stringify({ checks }));
