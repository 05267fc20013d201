// The browser side of the test MCP Apps host (apps-host.mjs bundles it with
// esbuild): the official host bridge (AppBridge, PostMessageTransport from
// @modelcontextprotocol/ext-apps) talking to sluice's widget in a sandboxed
// iframe on another origin. It answers ui/message and ui/update-model-context
// as a host would (recording them for the test), saves a file a view asks
// it to as Claude does (ui/download-file: embedded content only), opens a
// link in a new tab (ui/open-link), gives the view the tool's
// input and result once it is initialized, and sizes the frame as the view
// asks. No MCP client: the view calls no server tool (the bridge would
// refuse one), and everything it posts is recorded in window.hostLog.

import { AppBridge, PostMessageTransport } from "@modelcontextprotocol/ext-apps/app-bridge";

const tool = window.TOOL; // { input, result, sandboxUrl }
window.hostLog = [];
window.posted = [];

const frame = document.createElement("iframe");
frame.id = "app";
frame.title = tool.title || "Upload a file";
frame.setAttribute("sandbox", "allow-scripts allow-same-origin allow-forms");
frame.src = tool.sandboxUrl;
document.getElementById("conversation").append(frame);

// Every message the view posts, as the host receives it.
window.addEventListener("message", (e) => {
  if (e.source === frame.contentWindow) window.posted.push(JSON.stringify(e.data));
});

const bridge = new AppBridge(
  null,
  { name: "sluice-test-host", version: "1.0.0" },
  { updateModelContext: { text: {} }, message: { text: {} }, openLinks: {}, downloadFile: {} },
);
bridge.oninitialized = () => {
  window.hostLog.push({ method: "ui/notifications/initialized" });
  bridge.sendToolInput({ arguments: tool.input });
  bridge.sendToolResult(tool.result);
};
bridge.onmessage = async (params) => {
  window.hostLog.push({ method: "ui/message", params });
  return {};
};
bridge.onupdatemodelcontext = async (params) => {
  window.hostLog.push({ method: "ui/update-model-context", params });
  return {};
};
// Saves as Claude does: embedded content only (a `resource` with its
// bytes in a base64 `blob`, saved under the last segment of its URI); a
// `resource_link` is refused. `tool.refuseSaves` saves refused first (a
// person cancelling the confirmation).
let refusals = tool.refuseSaves || 0;
bridge.ondownloadfile = async (params) => {
  window.hostLog.push({ method: "ui/download-file", params });
  if (refusals > 0) {
    refusals--;
    return { isError: true };
  }
  for (const item of params.contents) {
    if (item.type !== "resource" || typeof item.resource?.blob !== "string") return { isError: true };
    const data = Uint8Array.from(atob(item.resource.blob), (c) => c.charCodeAt(0));
    const a = document.createElement("a");
    a.href = URL.createObjectURL(new Blob([data], { type: item.resource.mimeType || "application/octet-stream" }));
    a.download = decodeURIComponent(item.resource.uri.split("/").pop() || "");
    document.body.append(a);
    a.click();
    a.remove();
  }
  return {};
};
// Opens a link in a new tab, as a host does for a trusted link.
bridge.onopenlink = async (params) => {
  window.hostLog.push({ method: "ui/open-link", params });
  window.open(params.url, "_blank", "noopener");
  return {};
};
bridge.onsizechange = ({ height }) => {
  if (height) frame.style.height = `${height}px`;
};
bridge.oncalltool = async (params) => {
  window.hostLog.push({ method: "tools/call", params });
  throw new Error("this host proxies no tool calls");
};
await bridge.connect(new PostMessageTransport(frame.contentWindow, frame.contentWindow));
window.bridgeConnected = true;
