// The download inside the conversation: an MCP App view for
// get_download_url's result, on the messages of apps.js. Its one button
// saves the file the way the host takes it:
// - a file up to data-embed-max, where the host saves files
//   (ui/download-file): fetched from sluice's origin, its SHA-256 checked,
//   and handed to the host as embedded content (a `resource` with a base64
//   `blob`: what Claude saves; it refuses a `resource_link`). The fetch
//   delivers the link's last byte, which spends it, so the view keeps the
//   checked bytes: a save the person cancels or the host refuses is asked
//   again from them, never from the link.
// - a larger file, or a host that saves nothing, or a fetch that cannot
//   reach sluice: the person's link opened (ui/open-link, its origin in
//   the view's linkTrustedDomains). It shows the person a page with the
//   file's name, size and SHA-256 and a button that saves; opening it
//   spends nothing.
"use strict";

const $ = (id) => document.getElementById(id);
const embedMax = Number(document.querySelector("main").dataset.embedMax || 0);
let file = null; // the tool's structuredContent: filename, size, sha256, download {url}
let kept = null; // the file's bytes, fetched and checked, as base64

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

function hex(buffer) {
  return Array.from(new Uint8Array(buffer), (b) => b.toString(16).padStart(2, "0")).join("");
}

function base64(buffer) {
  const all = new Uint8Array(buffer);
  let text = "";
  for (let i = 0; i < all.length; i += 0x8000) text += String.fromCharCode.apply(null, all.subarray(i, i + 0x8000));
  return btoa(text);
}

// The file's bytes from its link, checked against its size and SHA-256.
// Throws "unreachable" when sluice cannot be reached from here (nothing was
// delivered, so the link still works), "spent" when the link answers that
// it is used up or expired, "mismatch" when the bytes are not the file.
async function fetched(link) {
  const url = new URL(link);
  url.searchParams.set("save", "");
  let answer;
  try {
    answer = await fetch(url, { cache: "no-store", credentials: "omit", referrerPolicy: "no-referrer" });
  } catch {
    throw new Error("unreachable");
  }
  if (answer.status === 404 || answer.status === 410) throw new Error("spent");
  if (!answer.ok) throw new Error("unreachable");
  const body = await answer.arrayBuffer();
  const digest = hex(await crypto.subtle.digest("SHA-256", body));
  if (body.byteLength !== file.size || digest !== file.sha256) throw new Error("mismatch");
  return base64(body);
}

function saved() {
  $("save").hidden = true;
  say(`Saved ${file.filename}.`);
}

async function openLink(why) {
  await sluiceApp.request("ui/open-link", { url: file.download.url });
  $("save").hidden = true;
  say(`${why}Opened the file's page in your browser: save it from there.`);
}

async function save() {
  const caps = sluiceApp.capabilities;
  const link = (file.file_ref && file.file_ref.download_url) || file.download.url;
  if (caps.downloadFile && (kept || file.size <= embedMax)) {
    if (!kept) {
      say("Getting the file…");
      try {
        kept = await fetched(link);
      } catch (e) {
        if (e.message === "unreachable" && caps.openLinks) return openLink("");
        if (e.message === "mismatch") return say("The bytes that arrived are not this file: nothing was saved. Ask the assistant for a new link.");
        if (e.message === "spent") return say("This link was already used or has expired: ask the assistant for a new one.");
        return say("The file could not be fetched here: ask the assistant for the link.");
      }
    }
    say("Saving…");
    const answer = await sluiceApp.request("ui/download-file", {
      contents: [{ type: "resource", resource: { uri: `file:///${encodeURIComponent(file.filename)}`, mimeType: file.content_type, blob: kept } }],
    });
    if (answer && answer.isError) {
      $("save").textContent = "Save again";
      return say("The file was not saved. It is still here: click Save again to save it.");
    }
    return saved();
  }
  if (caps.openLinks) return openLink(file.size > embedMax ? "" : "This app saves no files itself. ");
  say("This app cannot save files here: ask the assistant for the link.");
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
  $("save").disabled = true;
  try {
    await save();
  } catch (e) {
    say(`The file was not saved (${e.message}). Click Save to try again.`);
  } finally {
    $("save").disabled = false;
  }
});

sluiceApp.start("sluice-download", () => {
  $("what").textContent = "This app did not start the download view: ask the assistant for the link instead.";
});
