// The upload inside the conversation: an MCP App view around the shared
// upload form (upload.js), on the messages of apps.js: `ui/initialize`
// (then `ui/notifications/initialized`), the tool's result
// (`ui/notifications/tool-result`: the page whose start route the form
// uses), its size (`ui/notifications/size-changed`), and, once the file is
// stored, `ui/update-model-context` and `ui/message` (content: an array of
// blocks), so the model goes on with get_upload_status. No file byte is
// ever posted to the host: the form sends them straight to the store.
"use strict";

const $ = (id) => document.getElementById(id);
let upload = null; // the tool's structuredContent: upload_id, page_url, expires_at
let wanted = null; // the tool's argument `filename`, if the model named one

// What to pick, and, once the upload is known, until when.
function describe() {
  const several = upload && upload.files > 1;
  let text = several
    ? `Choose up to ${upload.files} files from your device.`
    : wanted
      ? `Choose ${wanted} from your device.`
      : "Choose the file from your device.";
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
  form.takeMaxFiles();
  ready();
}

sluiceApp.on.toolInput = (params) => {
  wanted = (params && params.arguments && params.arguments.filename) || wanted;
  if (wanted || upload) describe();
};
sluiceApp.on.toolResult = onToolResult;
sluiceApp.on.toolCancelled = () => {
  $("wanted").textContent = "The assistant cancelled this upload.";
  $("zone").hidden = true;
};

// The model is told in words it can act on, with the id get_upload_status
// takes. Never the file's name: it is whatever the person's disk calls the
// file, and in a user-role message a crafted name would speak as the
// person. get_upload_status gives the name back, as data.
async function tell(results) {
  const bytes = results.reduce((sum, r) => sum + r.file.size, 0);
  const facts =
    results.length === 1
      ? { upload_id: upload.upload_id, size: bytes, sha256: results[0].sha256 }
      : { upload_id: upload.upload_id, files: results.map((r) => ({ size: r.file.size, sha256: r.sha256 })) };
  const words =
    results.length === 1
      ? `I uploaded a file (${bytes} bytes, sha256 ${results[0].sha256}) in the upload form. ` +
        `Call get_upload_status with upload_id ${upload.upload_id} for its name and handle.`
      : `I uploaded ${results.length} files (${bytes} bytes in all) in the upload form. ` +
        `Call get_upload_status with upload_id ${upload.upload_id} for their names and handles.`;
  const caps = sluiceApp.capabilities;
  let told = false;
  if (caps.updateModelContext) {
    await sluiceApp.request("ui/update-model-context", { content: [{ type: "text", text: words }], structuredContent: facts })
      .then(() => { told = true; })
      .catch(() => {});
  }
  if (caps.message) {
    await sluiceApp.request("ui/message", { role: "user", content: [{ type: "text", text: words }] })
      .then((r) => { told = told || !(r && r.isError); })
      .catch(() => {});
  }
  return told ? "The assistant has been told." : "Tell the assistant it is done.";
}

$("file").disabled = true;
$("zone").classList.add("busy");
const form = sluiceForm({
  startUrl: (n) => (upload ? `${upload.page_url}/start?file=${n}` : null),
  maxSize: () => null,
  maxFiles: () => (upload && upload.files) || 1,
  done: tell,
});

sluiceApp.start("sluice-upload", () => {
  $("wanted").textContent = "This host did not start the upload form: ask the assistant for an upload link instead.";
});
