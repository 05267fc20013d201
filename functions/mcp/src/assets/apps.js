// What every sluice view (an MCP App, SEP-1865, the stable 2026-01-26
// version) shares: the View messages as JSON-RPC over postMessage with the
// host. `sluiceApp.request` and `notify` send; the host's answers settle
// requests; its notifications go to the handlers a view sets in
// `sluiceApp.on` (toolInput, toolResult, toolCancelled); the frame's size
// follows the content; `sluiceApp.start(name, failed)` sends
// `ui/initialize` and keeps the host's capabilities.
"use strict";

const sluiceApp = (() => {
  const PROTOCOL = "2026-01-26";
  let nextId = 1;
  const waiting = new Map();
  const app = { capabilities: {}, on: {} };

  const post = (message) => window.parent.postMessage({ jsonrpc: "2.0", ...message }, "*");

  app.request = (method, params) => {
    const id = nextId++;
    post({ id, method, params });
    return new Promise((resolve, reject) => waiting.set(id, { resolve, reject }));
  };

  app.notify = (method, params) => post({ method, params });

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
    const handler = {
      "ui/notifications/tool-input": app.on.toolInput,
      "ui/notifications/tool-result": app.on.toolResult,
      "ui/notifications/tool-cancelled": app.on.toolCancelled,
    }[m.method];
    if (handler) {
      handler(m.params);
      return;
    }
    if (m.method === "ui/resource-teardown" || m.method === "ping") {
      post({ id: m.id, result: {} });
    } else if (m.id !== undefined) {
      post({ id: m.id, error: { code: -32601, message: `${m.method} is not handled here` } });
    }
  });

  // The host sizes the frame to the content.
  let lastHeight = 0;
  new ResizeObserver(() => {
    const height = Math.ceil(document.documentElement.getBoundingClientRect().height);
    if (height !== lastHeight) {
      lastHeight = height;
      app.notify("ui/notifications/size-changed", { height });
    }
  }).observe(document.documentElement);

  app.start = (name, failed) =>
    app
      .request("ui/initialize", {
        appInfo: { name, version: document.documentElement.dataset.version || "0" },
        appCapabilities: {},
        protocolVersion: PROTOCOL,
      })
      .then((result) => {
        app.capabilities = (result && result.hostCapabilities) || {};
        app.notify("ui/notifications/initialized", {});
      })
      .catch(failed);

  return app;
})();
