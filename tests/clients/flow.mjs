// The whole sluice flow driven by the official MCP TypeScript SDK client.
// Run by the Rust end-to-end tests (tests/tests/mcp_clients.rs) against a real
// sluice process. Exits non-zero, naming the failed check, on any failure.

import { randomBytes } from "node:crypto";
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { parseArgs } from "node:util";

import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

import { check, sh, sha256, text } from "./common.mjs";

const TOOLS = [
  "request_upload",
  "get_download_url",
  "list_files",
  "upload_small_file",
  "read_small_file",
  "request_browser_upload",
  "get_upload_status",
];

const { values: args } = parseArgs({
  options: {
    url: { type: "string" },
    token: { type: "string" },
    "readonly-token": { type: "string" },
    "other-token": { type: "string" },
    workdir: { type: "string" },
  },
});


// Records the status of every response and the size of every POST body.
function recordingFetch(log) {
  return async (url, init) => {
    const response = await fetch(url, init);
    const body = init?.method === "POST" ? await response.clone().arrayBuffer() : null;
    log.push({
      status: response.status,
      request: init?.method === "POST" ? Buffer.byteLength(String(init.body ?? "")) : 0,
      response: body ? body.byteLength : 0,
    });
    return response;
  };
}

async function connect(token, log = []) {
  const headers = token ? { Authorization: `Bearer ${token}` } : {};
  const transport = new StreamableHTTPClientTransport(new URL(args.url), {
    requestInit: { headers },
    fetch: recordingFetch(log),
  });
  const client = new Client({ name: "sluice-ts-test", version: "1.0.0" });
  await client.connect(transport);
  return client;
}

async function expectRefused(token, status) {
  const log = [];
  try {
    const client = await connect(token, log);
    await client.callTool({ name: "request_upload", arguments: { filename: "a", size: 1, sha256: "0".repeat(64) } });
  } catch (e) {
    check(log.some((r) => r.status === status), `expected HTTP ${status}, saw ${JSON.stringify(log)}: ${e}`);
    return;
  }
  throw new Error(`check failed: expected HTTP ${status}, the call succeeded`);
}

const checks = [];
const upDir = join(args.workdir, "up");
const downDir = join(args.workdir, "down");
mkdirSync(upDir);
mkdirSync(downDir);
const data = randomBytes(1 << 20);
const name = "it's a report (v2).bin";
writeFileSync(join(upDir, name), data);

const log = [];
const client = await connect(args.token, log);
const { tools } = await client.listTools();
for (const t of TOOLS) check(tools.some((x) => x.name === t && x.outputSchema), `tool ${t} with an outputSchema`);
checks.push("list tools");
log.length = 0; // the flow of the file starts here

let result = await client.callTool({
  name: "request_upload",
  arguments: { filename: name, size: data.length, sha256: sha256(data) },
});
check(!result.isError, text(result));
const ticket = result.structuredContent;
check(ticket.handle.startsWith("$uploadedFile:"), "handle prefix");
sh(ticket.command, upDir);
checks.push("request_upload + curl");

result = await client.callTool({ name: "get_download_url", arguments: { file: ticket.handle } });
check(!result.isError, text(result));
const download = result.structuredContent;
check(download.sha256 === sha256(data) && download.size === data.length, "pinned size and digest");
sh(download.command, downDir);
const saved = readdirSync(downDir);
check(saved.length === 1, `one file saved: ${saved}`);
check(readFileSync(join(downDir, saved[0])).equals(data), "downloaded bytes identical");
checks.push("get_download_url + curl, bytes identical");
const flow = log.filter((r) => r.request || r.response);
const largest = Math.max(...flow.map((r) => Math.max(r.request, r.response)));
check(largest <= 4096, `largest MCP message of the file flow is ${largest} bytes`);
checks.push(`${flow.length} MCP exchanges of the 1 MiB flow, largest ${largest} bytes`);

result = await client.callTool({ name: "list_files", arguments: {} });
check(result.structuredContent.files.some((f) => f.file_id === ticket.file_id && f.state === "ready"), "list_files");
checks.push("list_files");

// Pages: seven more files, read back three at a time through the cursor,
// newest first, each once; a made-up cursor is refused.
const issued = [];
for (let i = 0; i < 7; i++) {
  result = await client.callTool({ name: "request_upload", arguments: { filename: `page${i}.txt`, size: 1, sha256: sha256(Buffer.from("p")) } });
  check(!result.isError, text(result));
  issued.push(result.structuredContent.file_id);
}
const seen = [];
let cursor;
let pages = 0;
do {
  const page = (await client.callTool({ name: "list_files", arguments: { limit: 3, ...(cursor ? { cursor } : {}) } })).structuredContent;
  check(page.files.length <= 3, `a page of ${page.files.length}`);
  seen.push(...page.files.map((f) => f.file_id));
  pages += 1;
  cursor = page.next_cursor;
} while (cursor);
check(seen.length === 8 && new Set(seen).size === 8 && pages === 3, `pages: ${JSON.stringify(seen)} in ${pages}`);
check(JSON.stringify(seen.slice(0, 7)) === JSON.stringify([...issued].reverse()), "newest first");
const bad = await client.callTool({ name: "list_files", arguments: { cursor: "bm90LWEtY3Vyc29y" } });
check(bad.isError && text(bad).includes("cursor"), text(bad));
checks.push("list_files pages");

for (const size of [0, 1, 16 * 1024]) {
  const small = randomBytes(size);
  result = await client.callTool({
    name: "upload_small_file",
    arguments: { filename: `small-${size}.bin`, data_base64: small.toString("base64"), sha256: sha256(small) },
  });
  check(!result.isError, text(result));
  result = await client.callTool({ name: "read_small_file", arguments: { file: result.structuredContent.file_id } });
  check(!result.isError, text(result));
  check(Buffer.from(result.structuredContent.data_base64, "base64").equals(small), `small file of ${size} B`);
}
const big = randomBytes(16 * 1024 + 1);
result = await client.callTool({
  name: "upload_small_file",
  arguments: { filename: "big.bin", data_base64: big.toString("base64"), sha256: sha256(big) },
});
check(result.isError && text(result).includes("request_upload"), text(result));
checks.push("small files 0 B, 1 B, 16 KiB; 16 KiB + 1 refused");
await client.close();

const other = await connect(args["other-token"]);
result = await other.callTool({ name: "get_download_url", arguments: { file: ticket.handle } });
check(result.isError && text(result).includes("another user"), text(result));
result = await other.callTool({ name: "list_files", arguments: {} });
check(result.structuredContent.files.length === 0, "another user's files are not listed");
await other.close();
checks.push("other user refused");

await expectRefused("not-a-token", 401);
await expectRefused(undefined, 401);
await expectRefused(args["readonly-token"], 403);
checks.push("401 and 403");

console.log(JSON.stringify({ checks }));
process.exit(0);
