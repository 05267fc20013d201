// The tools Codex CLI sees on the MCP servers it is configured with (by
// `codex mcp add`, in CODEX_HOME): asks its app server (JSON-RPC over
// stdio) for `mcpServerStatus/list`, which connects to each server and
// lists its tools. Prints {"servers": {name: {tools: [...], error}}}.
//
//   node codex-tools.mjs <codex binary>
import { spawn } from "node:child_process";
import { createInterface } from "node:readline";

const child = spawn(process.argv[2], ["app-server"], { stdio: ["pipe", "pipe", "inherit"] });
const answers = new Map();
createInterface({ input: child.stdout }).on("line", (line) => {
  let message;
  try {
    message = JSON.parse(line);
  } catch {
    return;
  }
  answers.get(message.id)?.(message);
});
let next = 0;
function call(method, params) {
  const id = ++next;
  return new Promise((resolve) => {
    answers.set(id, resolve);
    child.stdin.write(JSON.stringify({ jsonrpc: "2.0", id, method, params }) + "\n");
  });
}
const timer = setTimeout(() => {
  console.error("FAILED: codex app-server did not answer within 60 s");
  child.kill();
  process.exit(1);
}, 60_000);
const opened = await call("initialize", { clientInfo: { name: "sluice-tests", version: "1" } });
if (opened.error) {
  console.error(`FAILED: initialize: ${JSON.stringify(opened.error)}`);
  process.exit(1);
}
child.stdin.write(JSON.stringify({ jsonrpc: "2.0", method: "initialized" }) + "\n");
const status = await call("mcpServerStatus/list", {});
clearTimeout(timer);
child.kill();
if (status.error) {
  console.error(`FAILED: mcpServerStatus/list: ${JSON.stringify(status.error)}`);
  process.exit(1);
}
const servers = {};
for (const server of status.result.data) {
  servers[server.name] = { tools: Object.keys(server.tools || {}).sort(), error: server.toolsError };
}
console.log(JSON.stringify({ servers }));
