// What the test MCP Apps hosts share (apps-host.mjs for the upload widget,
// apps-download-host.mjs for the download view): the official TypeScript
// SDK client announcing the io.modelcontextprotocol/ui extension, the
// Content-Security-Policy a host builds from a view's declared
// `_meta.ui.csp`, and the two origins a host serves (its conversation page,
// with the official AppBridge bundled by esbuild from apps-host-page.js,
// and the sandbox origin the view runs on, under that policy).

import { createServer } from "node:http";
import { parseArgs } from "node:util";

import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { build } from "esbuild";

// A test host's arguments: the MCP URL, the token, where screenshots go
// and the sandbox's port, and `own` options of its own.
export function hostArgs(own) {
  const string = { type: "string" };
  return parseArgs({ options: { url: string, token: string, shots: string, "sandbox-port": string, ...own } }).values;
}

// A client that renders MCP Apps; `fetch` may record the traffic.
export async function appsClient(url, token, fetch = globalThis.fetch) {
  const client = new Client(
    { name: "sluice-apps-host", version: "1.0.0" },
    { capabilities: { extensions: { "io.modelcontextprotocol/ui": { mimeTypes: ["text/html;profile=mcp-app"] } } } },
  );
  await client.connect(
    new StreamableHTTPClientTransport(new URL(url), {
      requestInit: { headers: { Authorization: `Bearer ${token}` } },
      fetch,
    }),
  );
  return client;
}

// A fetch that records every MCP request and response body in `traffic`.
export function recordingFetch(traffic) {
  return async (url, init) => {
    const response = await fetch(url, init);
    traffic.push(String(init?.body ?? ""), await response.clone().text());
    return response;
  };
}

// The policy a host builds from a view's `_meta.ui` (the spec's defaults,
// plus the declared origins).
export function policyOf(ui) {
  const resources = (ui.csp?.resourceDomains ?? []).join(" ");
  const connect = (ui.csp?.connectDomains ?? []).join(" ");
  return [
    "default-src 'none'",
    `script-src 'self' 'unsafe-inline' ${resources}`,
    `style-src 'self' 'unsafe-inline' ${resources}`,
    `img-src 'self' data: ${resources}`,
    `font-src 'self' ${resources}`,
    `media-src 'self' data: ${resources}`,
    `connect-src ${connect || "'none'"}`,
    "frame-src 'none'",
    "object-src 'none'",
    "base-uri 'self'",
  ].join("; ");
}

const listen = (server, port, host) => new Promise((resolve) => server.listen(port, host, () => resolve(server.address().port)));

// Serves the conversation (`bubbles`: [[from "me" or "", text]...], the
// tool's input and result given to the bridge, the frame's `title`) and
// the view's `html` on
// the sandbox port under `policy`. `onRequest(url)` sees every request to
// the host. Gives { hostOrigin, sandboxOrigin, close }.
export async function serveHost({ input, result, html, policy, sandboxPort, bubbles, title, refuseSaves = 0, onRequest = () => {} }) {
  const hostBundle = (
    await build({ entryPoints: [new URL("apps-host-page.js", import.meta.url).pathname], bundle: true, format: "esm", write: false })
  ).outputFiles[0].text;
  const sandboxOrigin = `http://localhost:${sandboxPort}`;
  const said = bubbles.map(([who, text]) => `<p class="bubble ${who}">${text}</p>`).join("\n");
  const host = createServer((req, res) => {
    onRequest(req.url);
    if (req.url === "/host.js") {
      res.writeHead(200, { "content-type": "text/javascript" }).end(hostBundle);
      return;
    }
    const page = `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Conversation</title>
<style>body{font:15px/1.5 system-ui,sans-serif;margin:0;background:#f4f4f1;color:#1b1f24}#conversation{max-width:44rem;margin:0 auto;padding:1.5rem 1rem}
.bubble{background:#fff;border-radius:12px;padding:.75rem 1rem;margin:0 0 .75rem}.me{background:#e8e4da;margin-left:4rem}
iframe{width:100%;height:260px;border:1px solid #d0d0c8;border-radius:12px;background:#fff}</style>
<script>window.TOOL = ${JSON.stringify({ input, result, title, refuseSaves, sandboxUrl: `${sandboxOrigin}/view.html` })};</script>
<script type="module" src="/host.js"></script></head><body><div id="conversation">
${said}</div></body></html>`;
    res.writeHead(200, { "content-type": "text/html" }).end(page);
  });
  const hostPort = await listen(host, 0, "127.0.0.1");
  const sandbox = createServer((req, res) => {
    res.writeHead(200, { "content-type": "text/html; charset=utf-8", "content-security-policy": policy }).end(html);
  });
  await listen(sandbox, sandboxPort, "127.0.0.1");
  return {
    hostOrigin: `http://127.0.0.1:${hostPort}`,
    sandboxOrigin,
    close: () => {
      host.close();
      sandbox.close();
    },
  };
}
