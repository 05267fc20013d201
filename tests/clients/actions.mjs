// Actions with File and FileList fields, driven by the official MCP
// TypeScript SDK client against a real sluice and the independent Python
// upstream (upstream.py). Run by tests/tests/actions.rs; exits non-zero,
// naming the failed check, on any failure.

import { randomBytes } from "node:crypto";
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { parseArgs } from "node:util";

import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

import { check, sh, sha256, text } from "./common.mjs";

const { values: args } = parseArgs({
  options: {
    url: { type: "string" },
    token: { type: "string" },
    "other-token": { type: "string" },
    "files-only-token": { type: "string" },
    upstream: { type: "string" },
    workdir: { type: "string" },
  },
});


const transport = new StreamableHTTPClientTransport(new URL(args.url), {
  requestInit: { headers: { Authorization: `Bearer ${args.token}` } },
});
const client = new Client({ name: "sluice-ts-actions", version: "1.0.0" });
await client.connect(transport);
const checks = [];

async function upload(name, data) {
  writeFileSync(join(args.workdir, name), data);
  const result = await client.callTool({
    name: "request_upload",
    arguments: { filename: name, size: data.length, sha256: sha256(data) },
  });
  check(!result.isError, text(result));
  sh(result.structuredContent.command, args.workdir);
  return result.structuredContent.handle;
}

const { tools } = await client.listTools();
const echo = tools.find((t) => t.name === "action_echo");
check(echo && echo.inputSchema.properties.document["x-mcp-file"], "action_echo with an x-mcp-file field");

const name = "it's a report (v2) été.pdf";
const doc = randomBytes(250_000);
const extra = randomBytes(5_000);
const handle = await upload(name, doc);
const extraHandle = await upload("extra.bin", extra);
let result = await client.callTool({
  name: "action_echo",
  arguments: { note: handle, document: handle, extras: [extraHandle] },
});
check(!result.isError, text(result));
const fields = result.structuredContent.fields;
check(fields.document.file.name === name, `name intact: ${JSON.stringify(fields.document)}`);
check(fields.document.file.sha256 === sha256(doc), "document bytes");
check(fields.extras[0].file.sha256 === sha256(extra), "extras bytes");
checks.push("action_echo: File and FileList delivered, name intact");
check(fields.note.value === handle, `a handle in a String field is text: ${JSON.stringify(fields.note)}`);
checks.push("handle in a String field delivered as plain text");

result = await client.callTool({ name: "action_echo", arguments: { document: "report.pdf" } });
check(result.isError && text(result).includes('Field "document"'), text(result));
checks.push("bare string refused naming the field");

result = await client.callTool({ name: "execute_action", arguments: { action: "export", fields: { size: 300_000 } } });
check(!result.isError, text(result));
const report = result.structuredContent.report;
check(typeof report === "object" && report.size === 300_000, JSON.stringify(report).slice(0, 300));
const down = join(args.workdir, "down");
mkdirSync(down);
sh(report.command, down);
const saved = readdirSync(down);
check(saved.length === 1, `one file saved: ${saved}`);
check(sha256(readFileSync(join(down, saved[0]))) === result.structuredContent.report_sha256, "exported bytes");
checks.push("export: link download byte-identical");

await client.close();
console.log(JSON.stringify({ checks }));
process.exit(0);
