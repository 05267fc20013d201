// The reference for the MCP benchmark: a minimal server on the official
// TypeScript SDK, stateless Streamable HTTP with JSON responses and one
// no-op tool. Prints its URL, then serves until killed.
import { createServer } from "node:http";

import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";

function build() {
  const server = new McpServer({ name: "noop", version: "1.0.0" });
  server.registerTool("noop", { description: "Does nothing." }, async () => ({
    content: [{ type: "text", text: "ok" }],
  }));
  return server;
}

const http = createServer(async (req, res) => {
  if (req.method !== "POST" || req.url !== "/mcp") {
    res.writeHead(405).end();
    return;
  }
  const chunks = [];
  for await (const chunk of req) chunks.push(chunk);
  const body = JSON.parse(Buffer.concat(chunks).toString("utf8"));
  // Stateless, as the SDK documents it: a fresh server and transport per request.
  const server = build();
  const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
  res.on("close", () => {
    transport.close();
    server.close();
  });
  await server.connect(transport);
  await transport.handleRequest(req, res, body);
});

http.listen(0, "127.0.0.1", () => {
  console.log(`http://127.0.0.1:${http.address().port}/mcp`);
});
