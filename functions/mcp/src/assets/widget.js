// The upload inside the conversation: an MCP App view (SEP-1865, the stable
// 2026-01-26 version) around the shared upload form (upload.js). It speaks
// the few View messages it needs as JSON-RPC over postMessage with the host:
// `ui/initialize` (then `ui/notifications/initialized`), the tool's result
// (`ui/notifications/tool-result`: the page whose start route the form
// uses), its size (`ui/notifications/size-changed`), and, once the file is
// stored, `ui/update-model-context` and `ui/message` (content: an array of
// blocks), so the model goes on with get_upload_status. No file byte is
// ever posted to the host: the form sends them straight to the store.
"use strict";

const PROTOCOL = "2026-01-26";
const $ = (id) => document.getElementById(id);
let nextId = 1;
const waiting = new Map();
let host = { capabilities: {} };
let upload = null; // the tool's structuredContent: upload_id, page_url, expires_at
let wanted = null; // the tool's argument `filename`, if the model named one

function post(message) {
  window.parent.postMessage({ jsonrpc: "2.0", ...message }, "*");
}

function request(method, params) {
  const id = nextId++;
  post({ id, method, params });
  return new Promise((resolve, reject) => waiting.set(id, { resolve, reject }));
}

const notify = (method, params) => post({ method, params });

// What to pick, and, once the upload is known, until when.
function describe() {
  let text = wanted ? `Choose ${wanted} from your device.` : "Choose the file from your device.";
  if (upload && upload.expires_at) {
    const at = new Date(upload.expires_at);
    text += ` This works once, until ${at.toLocaleTimeString([], { hour: "2-digit", minute: "2-digit" })}.`;
  }
  $("wanted").textContent = text;
}

function ready() {
  $("zone").classList.remove("busy");
  $("file").disabled = false;
  describe();
}

function onToolResult(result) {
  const data = result && result.structuredContent;
  if (result && result.isError) {
    $("wanted").textContent = "The assistant's request for a file failed: ask it to try again.";
    return;
  }
  if (!data || !data.page_url || !data.upload_id) return;
  upload = data;
  ready();
}

// What the host sends: answers to our requests, notifications, and the
// few requests a view answers.
window.addEventListener("message", (event) => {
  if (event.source !== window.parent) return;
  const m = event.data;
  if (!m || m.jsonrpc !== "2.0") return;
  if (m.id !== undefined && !m.method) {
    const w = waiting.get(m.id);
    if (!w) return;
    waiting.delete(m.id);
    if (m.error) w.reject(new Error(m.error.message || "refused"));
    else w.resolve(m.result);
    return;
  }
  switch (m.method) {
    case "ui/notifications/tool-input":
      wanted = (m.params && m.params.arguments && m.params.arguments.filename) || wanted;
      if (wanted || upload) describe();
      break;
    case "ui/notifications/tool-result":
      onToolResult(m.params);
      break;
    case "ui/notifications/tool-cancelled":
      $("wanted").textContent = "The assistant cancelled this upload.";
      $("zone").hidden = true;
      break;
    case "ui/resource-teardown":
    case "ping":
      post({ id: m.id, result: {} });
      break;
    default:
      if (m.id !== undefined) post({ id: m.id, error: { code: -32601, message: `${m.method} is not handled here` } });
  }
});

// The host sizes the frame to the content.
let lastHeight = 0;
new ResizeObserver(() => {
  const height = Math.ceil(document.documentElement.getBoundingClientRect().height);
  if (height !== lastHeight) {
    lastHeight = height;
    notify("ui/notifications/size-changed", { height });
  }
}).observe(document.documentElement);

// The model is told in words it can act on, with the id get_upload_status
// takes. Never the file's name: it is whatever the person's disk calls the
// file, and in a user-role message a crafted name would speak as the
// person. get_upload_status gives the name back, as data.
async function tell(file, sha256) {
  const facts = { upload_id: upload.upload_id, size: file.size, sha256 };
  const words =
    `I uploaded a file (${file.size} bytes, sha256 ${sha256}) in the upload form. ` +
    `Call get_upload_status with upload_id ${upload.upload_id} for its name and handle.`;
  const caps = host.capabilities || {};
  let told = false;
  if (caps.updateModelContext) {
    await request("ui/update-model-context", { content: [{ type: "text", text: words }], structuredContent: facts })
      .then(() => { told = true; })
      .catch(() => {});
  }
  if (caps.message) {
    await request("ui/message", { role: "user", content: [{ type: "text", text: words }] })
      .then((r) => { told = told || !(r && r.isError); })
      .catch(() => {});
  }
  return told ? "The assistant has been told." : "Tell the assistant it is done.";
}

$("file").disabled = true;
$("zone").classList.add("busy");
sluiceForm({
  startUrl: () => (upload ? `${upload.page_url}/start` : null),
  maxSize: () => null,
  done: tell,
});

request("ui/initialize", {
  appInfo: { name: "sluice-upload", version: document.documentElement.dataset.version || "0" },
  appCapabilities: {},
  protocolVersion: PROTOCOL,
})
  .then((result) => {
    host = { capabilities: (result && result.hostCapabilities) || {} };
    notify("ui/notifications/initialized", {});
  })
  .catch(() => {
    $("wanted").textContent = "This host did not start the upload form: ask the assistant for an upload link instead.";
  });
