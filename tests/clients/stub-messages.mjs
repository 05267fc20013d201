// A stand-in for the Messages API on loopback, so that Claude Code (`claude
// -p`) runs a real session against sluice with no model and no network: the
// "model" asks for request_upload with the file given on the command line,
// then runs the returned line with the Bash tool, then says it is done.
// Every request is appended to --log as one JSON line, for the test to read.
//
//   node stub-messages.mjs --filename F --size N --sha256 HEX --log FILE
//
// With --person the "model" asks the person for the file instead: it calls
// request_browser_upload with --filename, and answers with what the tool
// result says (the handle, once the person uploaded it).
import { appendFileSync } from "node:fs";
import { createServer } from "node:http";
import { parseArgs } from "node:util";

const { values: args } = parseArgs({
  options: {
    filename: { type: "string" },
    size: { type: "string" },
    sha256: { type: "string" },
    log: { type: "string" },
    person: { type: "boolean", default: false },
  },
});

const UPLOAD = "toolu_sluice_upload";
const PAGE = "toolu_sluice_page";
const BASH = "toolu_sluice_bash";

/** The text of every block of a tool result, however it is nested. */
function texts(content) {
  if (typeof content === "string") return [content];
  if (!Array.isArray(content)) return [];
  return content.flatMap((b) => (b.type === "text" ? [b.text] : texts(b.content)));
}

/** The tool result for `id` in the last user message, if there is one. */
function resultFor(messages, id) {
  const last = messages[messages.length - 1];
  if (!last || last.role !== "user" || !Array.isArray(last.content)) return null;
  return last.content.find((b) => b.type === "tool_result" && b.tool_use_id === id) ?? null;
}

/** What the "model" answers next: one content block. */
function next(body) {
  const tools = (body.tools ?? []).map((t) => t.name);
  if (args.person) {
    const page = tools.find((n) => n.endsWith("request_browser_upload"));
    if (!page) return { type: "text", text: "ok" };
    const answered = resultFor(body.messages, PAGE);
    if (answered) {
      const said = texts(answered.content).join(" ");
      const handle = /\$uploadedFile:[A-Za-z0-9_-]+/.exec(said);
      return { type: "text", text: handle ? `The person uploaded it: ${handle[0]}` : `No handle: ${said.slice(0, 300)}` };
    }
    return { type: "tool_use", id: PAGE, name: page, input: { filename: args.filename } };
  }
  const upload = tools.find((n) => n.endsWith("request_upload"));
  if (!upload) return { type: "text", text: "ok" };
  const uploaded = resultFor(body.messages, BASH);
  if (uploaded) return { type: "text", text: "The file is uploaded." };
  const ticket = resultFor(body.messages, UPLOAD);
  if (ticket) {
    for (const text of texts(ticket.content)) {
      try {
        const command = JSON.parse(text).command;
        if (command) {
          return { type: "tool_use", id: BASH, name: "Bash", input: { command, description: "Upload the file" } };
        }
      } catch {
        // The summary line, not the JSON.
      }
    }
    return { type: "text", text: `no curl line in the tool result: ${JSON.stringify(ticket).slice(0, 500)}` };
  }
  return {
    type: "tool_use",
    id: UPLOAD,
    name: upload,
    input: { filename: args.filename, size: Number(args.size), sha256: args.sha256 },
  };
}

function message(body, block) {
  return {
    id: `msg_${Date.now()}`,
    type: "message",
    role: "assistant",
    model: body.model ?? "stub",
    content: [block],
    stop_reason: block.type === "tool_use" ? "tool_use" : "end_turn",
    stop_sequence: null,
    usage: { input_tokens: 10, output_tokens: 10 },
  };
}

function stream(res, msg) {
  const send = (event, data) => res.write(`event: ${event}\ndata: ${JSON.stringify({ type: event, ...data })}\n\n`);
  res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
  const block = msg.content[0];
  send("message_start", { message: { ...msg, content: [], stop_reason: null, usage: { input_tokens: 10, output_tokens: 1 } } });
  if (block.type === "text") {
    send("content_block_start", { index: 0, content_block: { type: "text", text: "" } });
    send("content_block_delta", { index: 0, delta: { type: "text_delta", text: block.text } });
  } else {
    send("content_block_start", { index: 0, content_block: { type: "tool_use", id: block.id, name: block.name, input: {} } });
    send("content_block_delta", { index: 0, delta: { type: "input_json_delta", partial_json: JSON.stringify(block.input) } });
  }
  send("content_block_stop", { index: 0 });
  send("message_delta", { delta: { stop_reason: msg.stop_reason, stop_sequence: null }, usage: { output_tokens: 10 } });
  send("message_stop", {});
  res.end();
}

const server = createServer((req, res) => {
  let raw = "";
  req.on("data", (c) => (raw += c));
  req.on("end", () => {
    let body = {};
    try {
      body = JSON.parse(raw || "{}");
    } catch {
      // Not JSON: answered below like any other request.
    }
    if (args.log) appendFileSync(args.log, JSON.stringify({ method: req.method, url: req.url, body }) + "\n");
    const path = req.url.split("?")[0];
    if (req.method === "POST" && path === "/v1/messages/count_tokens") {
      res.writeHead(200, { "content-type": "application/json" });
      return res.end(JSON.stringify({ input_tokens: 10 }));
    }
    if (req.method !== "POST" || path !== "/v1/messages") {
      res.writeHead(404, { "content-type": "application/json" });
      return res.end(JSON.stringify({ type: "error", error: { type: "not_found_error", message: "stub" } }));
    }
    const msg = message(body, next(body));
    if (body.stream) return stream(res, msg);
    res.writeHead(200, { "content-type": "application/json" });
    res.end(JSON.stringify(msg));
  });
});

server.listen(0, "127.0.0.1", () => {
  console.log(`listening on http://127.0.0.1:${server.address().port}`);
});
