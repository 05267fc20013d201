// The 2025-03-26 revision through the official TypeScript SDK of that era
// (1.11.5, installed under the alias mcp-sdk-2025-03-26): agreed in
// initialize, tools listed with annotations and no output schema, and every
// answer carried by the text alone, the whole file flow run from it. Prints
// a JSON summary of the checks; exits non-zero naming a failed one.
import { execSync } from "node:child_process";
import { createHash, randomBytes } from "node:crypto";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { parseArgs } from "node:util";

import { Client } from "mcp-sdk-2025-03-26/client/index.js";
import { StreamableHTTPClientTransport } from "mcp-sdk-2025-03-26/client/streamableHttp.js";
import { LATEST_PROTOCOL_VERSION } from "mcp-sdk-2025-03-26/types.js";

const { values: args } = parseArgs({
  options: { url: { type: "string" }, token: { type: "string" }, workdir: { type: "string" } },
});

function check(ok, what) {
  if (!ok) {
    console.error(`FAILED: ${what}`);
    process.exit(1);
  }
}

function answer(result) {
  check(!result.isError, `a tool error: ${JSON.stringify(result)}`);
  check(result.structuredContent === undefined, "structuredContent sent to a 2025-03-26 client");
  const texts = result.content.filter((c) => c.type === "text");
  return JSON.parse(texts[texts.length - 1].text);
}

check(LATEST_PROTOCOL_VERSION === "2025-03-26", `this SDK speaks ${LATEST_PROTOCOL_VERSION}`);
const sent = [];
const transport = new StreamableHTTPClientTransport(new URL(args.url), {
  requestInit: { headers: { Authorization: `Bearer ${args.token}` } },
});
const original = globalThis.fetch;
globalThis.fetch = (input, init) => {
  sent.push(new Headers(init?.headers).get("mcp-protocol-version"));
  return original(input, init);
};
const client = new Client({ name: "legacy-ts", version: "1.11.5" });
await client.connect(transport);
const checks = [];
check(client.getServerVersion()?.name === "sluice", "connected to sluice");
checks.push("initialize: 2025-03-26 agreed");

const { tools } = await client.listTools();
for (const tool of tools) {
  check(tool.outputSchema === undefined, `${tool.name} lists an output schema`);
  for (const hint of ["title", "readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint"]) {
    check(tool.annotations && hint in tool.annotations, `${tool.name}: no ${hint}`);
  }
}
checks.push(`tools/list: ${tools.length} tools, annotated, no output schema`);

const up = join(args.workdir, "up");
const down = join(args.workdir, "down");
mkdirSync(up, { recursive: true });
mkdirSync(down, { recursive: true });
const data = randomBytes(90_000);
writeFileSync(join(up, "old.bin"), data);
const sha256 = createHash("sha256").update(data).digest("hex");
const ticket = answer(
  await client.callTool({ name: "request_upload", arguments: { filename: "old.bin", size: data.length, sha256 } }),
);
execSync(ticket.command, { cwd: up, shell: "/bin/sh", stdio: "pipe" });
const link = answer(await client.callTool({ name: "get_download_url", arguments: { file: ticket.handle } }));
execSync(link.command, { cwd: down, shell: "/bin/sh", stdio: "pipe" });
check(readFileSync(join(down, "old.bin")).equals(data), "downloaded bytes differ");
checks.push("upload and download through the text alone");
check(sent.every((v) => v === null), `a 2025-03-26 client sent a protocol header: ${sent}`);
await client.close();
console.log(JSON.stringify({ checks }));
