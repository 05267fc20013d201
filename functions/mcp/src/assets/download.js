// The download inside the conversation: an MCP App view for
// get_download_url's result, on the messages of apps.js. Its one button asks
// the host to save the file (`ui/download-file`, a `resource_link` to the
// single-use link: the host fetches it, no byte passes through the view or
// the conversation); a host that cannot save files but opens links is asked
// to open the link (`ui/open-link`), and the browser downloads it. The link
// works once: after a save, the view says so.
"use strict";

const $ = (id) => document.getElementById(id);
let file = null; // the tool's structuredContent: filename, size, sha256, download {url}

function bytes(n) {
  const units = ["bytes", "KB", "MB", "GB", "TB"];
  let i = 0;
  while (n >= 1000 && i < units.length - 1) {
    n /= 1000;
    i++;
  }
  return i === 0 ? `${n} bytes` : `${n.toFixed(1)} ${units[i]}`;
}

function say(text) {
  $("said").textContent = text;
}

sluiceApp.on.toolResult = (result) => {
  if (result && result.isError) {
    $("what").textContent = "The assistant could not get this file: ask it to try again.";
    return;
  }
  const data = result && result.structuredContent;
  if (!data || !data.download || !data.download.url) return;
  file = data;
  $("what").textContent = `${data.filename}, ${bytes(data.size)}.`;
  $("save").hidden = false;
};
sluiceApp.on.toolCancelled = () => {
  $("what").textContent = "The assistant cancelled this download.";
  $("save").hidden = true;
};

$("save").addEventListener("click", async () => {
  if (!file) return;
  const caps = sluiceApp.capabilities;
  const link = file.download.url;
  $("save").disabled = true;
  try {
    if (caps.downloadFile) {
      say("Saving…");
      const answer = await sluiceApp.request("ui/download-file", {
        contents: [{ type: "resource_link", uri: link, name: file.filename, mimeType: file.content_type, size: file.size }],
      });
      if (answer && answer.isError) {
        say("The file was not saved. The link may be used up: ask the assistant for a new one.");
        $("save").disabled = false;
        return;
      }
    } else if (caps.openLinks) {
      await sluiceApp.request("ui/open-link", { url: link });
    } else {
      say("This app cannot save files here: ask the assistant for the link.");
      return;
    }
    $("save").hidden = true;
    say(`Saved ${file.filename}. The link worked once; ask the assistant for a new one to save it again.`);
  } catch (e) {
    say(`The file was not saved (${e.message}). Ask the assistant for a new link.`);
    $("save").disabled = false;
  }
});

sluiceApp.start("sluice-download", () => {
  $("what").textContent = "This app did not start the download view: ask the assistant for the link instead.";
});
