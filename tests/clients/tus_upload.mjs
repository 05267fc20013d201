// Uploads a file to a sluice upload link with tus-js-client (npm, pinned in
// package-lock.json; the library the page and the widget send files with),
// here in Node: the link is the upload's URL (request_upload created the
// upload), so the client resumes it from the offset the server's HEAD
// gives, in PATCH requests of CHUNK bytes.
//
//   node tus_upload.mjs LINK FILE CHUNK [STOP_AT]
//
// Stops (aborts) once at least STOP_AT bytes are on the server: an upload
// cut short; else goes to the end. Prints, as JSON, the offset it started
// from (the first PATCH's) and where it ended.

import { readFileSync } from "node:fs";

import * as tus from "tus-js-client";

const [link, path, chunk, stopAt] = process.argv.slice(2);
const data = readFileSync(path);
let started = null;
let offset = 0;
const done = await new Promise((resolve, reject) => {
  const upload = new tus.Upload(data, {
    uploadUrl: link,
    chunkSize: Number(chunk),
    retryDelays: [],
    storeFingerprintForResuming: false,
    onBeforeRequest: (req) => {
      if (req.getMethod() === "PATCH" && started === null) started = Number(req.getHeader("Upload-Offset"));
    },
    onChunkComplete: (_size, accepted) => {
      offset = accepted;
      if (stopAt !== undefined && accepted >= Number(stopAt)) {
        upload.abort().then(() => resolve("stopped"));
      }
    },
    onSuccess: () => resolve("finished"),
    onError: reject,
  });
  upload.start();
});
console.log(JSON.stringify({ started, offset, done }));
