// The upload form, shared by the browser page (page.js) and the in-chat
// widget (widget.js): hash the picked file (SHA-256), ask sluice for a PUT
// signed for exactly that size and digest, send the file straight to the
// store with a progress bar (in parts above the single-PUT size; where
// sluice receives the bytes, as one resumable tus upload, by the vendored
// tus-js-client), and say plainly when it is done or why not. Each caller runs `sluiceForm(how)`
// with where its start goes and what to do once the file is stored.
"use strict";

// Files up to this size are hashed by WebCrypto in one call (native speed,
// the file held in memory once); larger ones incrementally, 8 MiB at a time,
// by hash-wasm where WebAssembly may run (the page), else by @noble/hashes
// (the widget), so a multi-GiB file never has to fit in memory. WebCrypto
// cannot hash a stream.
const WHOLE_HASH_MAX = 512 * 1024 * 1024;
const CHUNK = 8 * 1024 * 1024;
// What of a file sent while it is hashed waits for its hash: the last bytes,
// whose request declares the digest.
const TAIL = 1024 * 1024;
// Parts of a large file sent at once (BENCHMARKS.md, "Browser upload page":
// four beat three once the parts are hashed one after another).
const PARTS_IN_FLIGHT = 4;

// What the server or the storage answers "not now" (as the upload line's
// `curl --retry` takes it: 408, 429, 500, 502, 503, 504) is asked again after
// its Retry-After (else 1, 2, 4, 8 s), at most RETRIES times within
// RETRY_WITHIN_MS, before the page shows the answer. A part or a file
// refused for a moment (one user's share of transfers taken, the store
// slowing down) is then sent without the person doing anything.
const NOT_NOW = new Set([408, 429, 500, 502, 503, 504]);
const RETRIES = 4;
const RETRY_WITHIN_MS = 60 * 1000;

// `attempt()`: a promise of a fetch Response or a finished XMLHttpRequest,
// made again while it answers "not now" (`onWait(seconds)` before each
// wait, `onWait(0)` once it is over); the last answer.
async function patiently(attempt, onWait) {
  const until = performance.now() + RETRY_WITHIN_MS;
  for (let tries = 0; ; tries++) {
    const answer = await attempt();
    if (!NOT_NOW.has(answer.status) || tries === RETRIES) return answer;
    const said = (answer.headers ? answer.headers.get("Retry-After") : answer.getResponseHeader("Retry-After")) || "";
    const wait = Math.min((/^\d+$/.test(said.trim()) ? Number(said) : 2 ** tries) * 1000, until - performance.now());
    if (wait < 0) return answer;
    onWait(Math.ceil(wait / 1000));
    await new Promise((resolve) => setTimeout(resolve, wait));
    onWait(0);
  }
}

const hex = (bytes) => Array.from(new Uint8Array(bytes), (b) => b.toString(16).padStart(2, "0")).join("");
const base64OfHex = (digits) => btoa(String.fromCharCode(...digits.match(/../g).map((pair) => parseInt(pair, 16))));

// `blob`'s SHA-256 (hex), and its bytes where they were read whole for it
// (`bytes`: null for a file hashed in slices), so that its parts can be
// hashed from memory instead of read again.
async function sha256Read(blob, onProgress) {
  if (blob.size <= WHOLE_HASH_MAX && globalThis.crypto && crypto.subtle) {
    const bytes = await blob.arrayBuffer();
    const digest = await crypto.subtle.digest("SHA-256", bytes);
    onProgress(blob.size);
    return { sha256: hex(digest), bytes };
  }
  const sha = await incrementalSha256();
  for (let at = 0; at < blob.size; at += CHUNK) {
    sha.update(new Uint8Array(await blob.slice(at, at + CHUNK).arrayBuffer()));
    onProgress(Math.min(at + CHUNK, blob.size));
  }
  return { sha256: hex(sha.digest()), bytes: null };
}

// An incremental SHA-256 (`update(bytes)`, then `digest()` as bytes):
// hash-wasm's (WebAssembly, vendored: hash-wasm-sha256.js) where the page
// has it and its policy lets it compile (the page's does; an MCP Apps
// host's, for the widget, does not), else @noble/hashes'.
async function incrementalSha256() {
  if (globalThis.hashWasmSha256 && globalThis.WebAssembly) {
    try {
      const sha = await hashWasmSha256();
      sha.init();
      return { update: (bytes) => sha.update(bytes), digest: () => sha.digest("binary") };
    } catch (_) {
      // WebAssembly refused here: the JavaScript hasher below.
    }
  }
  return nobleSha256.create();
}

// The SHA-256 (hex) of each of the parts numbered `numbers` (`slice(n)`:
// part n of the file), one after another in the order given: `digest(n)`, a
// promise of part n's. Each is hashed from `bytes` where the file was read
// whole for its own hash (WebCrypto), else read from the file when its turn
// comes (`sha256Read`).
// Hashing holds the page's thread (WebCrypto: about 90 ms for a part of
// 64 MiB in headless Chromium), and the answers that start the parts' PUTs
// are handled on that thread: so a part is hashed only once the part before
// it is on its way (`sent(n)`, said by whoever sends part n, also when it
// gives up), and hashing the next part never holds up the one before; and
// a file not in memory has one part read at a time. Once every part is
// hashed, nothing here holds the bytes.
function partHasher(slice, bytes, partSize, numbers) {
  const digests = new Map();
  const sent = new Map();
  let before = Promise.resolve();
  for (const n of numbers) {
    const part = slice(n);
    const digest = before.then(() =>
      bytes
        ? crypto.subtle.digest("SHA-256", new Uint8Array(bytes, (n - 1) * partSize, part.size)).then(hex)
        : sha256Read(part, () => {}).then((read) => read.sha256),
    );
    const gone = new Promise((resolve) => sent.set(n, resolve));
    digests.set(n, digest);
    before = Promise.all([digest.catch(() => {}), gone]);
  }
  return { digest: (n) => digests.get(n), sent: (n) => sent.get(n)() };
}

function size(n) {
  const units = ["bytes", "KB", "MB", "GB", "TB"];
  let v = n;
  let u = 0;
  while (v >= 1000 && u < units.length - 1) { v /= 1000; u++; }
  return u === 0 ? `${n} bytes` : `${v.toFixed(1)} ${units[u]}`;
}

function duration(seconds) {
  if (!isFinite(seconds)) return "";
  if (seconds < 60) return `${Math.max(1, Math.round(seconds))} s`;
  const m = Math.floor(seconds / 60);
  return m < 60 ? `${m} min ${Math.round(seconds % 60)} s` : `${Math.floor(m / 60)} h ${m % 60} min`;
}

async function messageOf(response) {
  try {
    const body = await response.json();
    if (body && body.message) return body.message;
  } catch (_) {
    // not JSON
  }
  return `The server refused the upload (${response.status}).`;
}

// A part's target as the server answers it, checked as every client checks
// it (the grammar is in docs/ARCHITECTURE.md, "The part target"; the line's
// scripts run sh/target.sh, and one test holds all three to it): the URL on
// the first line, under `origin`; then headers, "Name: value", each named
// at most once, each one a presigned PUT signs; at most 4096 bytes of
// printable ASCII and line feeds. Refused (a `Refused`) otherwise.
const TARGET_VALUES = {
  "content-type": (v) => v !== "",
  "if-none-match": (v) => v === "*",
  "x-amz-checksum-sha256": (v) => /^[A-Za-z0-9+/=]+$/.test(v),
  "x-amz-sdk-checksum-algorithm": (v) => /^[A-Za-z0-9]+$/.test(v),
};
function partTarget(answer, origin) {
  const no = (why) => new Refused(`The part's target ${why}: refused.`);
  if (answer.length > 4096) throw no("is longer than 4096 bytes");
  if (/[^\n\x20-\x7e]/.test(answer)) throw no("has a byte that is not printable ASCII");
  const [url, ...lines] = answer.split("\n");
  if (!url.startsWith(`${origin}/`)) throw no(`is not under ${origin}`);
  if (url.includes(" ")) throw no("has a space in its URL");
  const target = { url, headers: {} };
  for (const line of lines) {
    if (line === "") continue;
    const at = line.indexOf(": ");
    if (at < 0) throw no("has a line that is not a header");
    const name = line.slice(0, at);
    const value = line.slice(at + 2);
    const check = TARGET_VALUES[name.toLowerCase()];
    if (!check) throw no(`asks for the header ${name}`);
    if (Object.keys(target.headers).some((n) => n.toLowerCase() === name.toLowerCase())) {
      throw no(`names ${name} twice`);
    }
    if (!check(value)) throw no(`gives ${name} an unexpected value`);
    target.headers[name] = value;
  }
  return target;
}

class Refused extends Error {}

// A failure with what the person may do next (`how`: may the same file go
// again, may another be picked).
class Stop extends Error {
  constructor(message, how) {
    super(message);
    this.how = how;
  }
}

// The form in the document (ids: page, file, zone, progress-box, phase, bar,
// figures, done, error, retry, live; and the list of files it adds). `how`:
//   startUrl(n): where the start of the page's file n goes (null: not yet known);
//   maxSize(): the largest file accepted, or null (the start says);
//   maxFiles(): how many files the page takes;
//   done(results): [{file, sha256}] of every file stored so far: a promise
//   of the words shown after "Done.".
function sluiceForm(how) {
  const $ = (id) => document.getElementById(id);
  const input = $("file");
  const zone = $("zone");
  let busy = false;
  // The files of this pick (each with its number on the page, and its
  // sha256 once stored), the numbers given so far, the files stored.
  let queue = [];
  let taken = 0;
  const results = [];
  let oneAtATime = false;

  // What the page is doing (`steady`: the last of it said, shown again
  // after a wait; `say`: for the wait itself).
  let steady = "";
  function say(text) {
    $("progress-box").hidden = false;
    $("phase").textContent = text;
    $("live").textContent = text;
  }
  function phase(text) {
    steady = text;
    say(text);
  }

  function progress(done, total, started) {
    const percent = total === 0 ? 100 : Math.floor((done / total) * 100);
    $("bar").value = percent;
    const seconds = (performance.now() - started) / 1000;
    const rate = seconds > 0 ? done / seconds : 0;
    const left = rate > 0 ? (total - done) / rate : Infinity;
    $("figures").textContent =
      `${size(done)} of ${size(total)} · ${percent}%` +
      (rate > 0 ? ` · ${size(rate)}/s` : "") +
      (done < total && isFinite(left) ? ` · about ${duration(left)} left` : "");
  }

  // `retry`: the same file may go again (a dropped connection); `pick`:
  // another file may be chosen. A used or expired link allows neither.
  function fail(message, { retry = true, pick = true } = {}) {
    busy = false;
    $("progress-box").hidden = true;
    $("error").textContent = message;
    $("error").hidden = false;
    $("retry").hidden = !retry;
    zone.hidden = !pick;
    zone.classList.remove("busy");
    input.disabled = !pick;
    if (retry) $("retry").focus();
    else $("error").setAttribute("tabindex", "-1"), $("error").focus();
  }

  // Said while a "not now" is waited out (`patiently`); once the request
  // goes again, what the page was doing.
  const waiting = (file) => (seconds) =>
    say(seconds > 0 ? `Busy right now: trying ${file.name} again in ${seconds} s…` : steady);

  function finished(files, words) {
    // A page for several keeps its list of files in view.
    $("progress-box").hidden = how.maxFiles() < 2;
    const box = $("done");
    box.textContent = "";
    const strong = document.createElement("strong");
    strong.textContent = "Done.";
    const what =
      files.length === 1
        ? `${files[0].name} (${size(files[0].size)}) was uploaded.`
        : `${files.length} files (${size(files.reduce((sum, f) => sum + f.size, 0))}) were uploaded.`;
    box.append(strong, ` ${what} ${words}`);
    if (files.length > 1) phase("All files uploaded.");
    box.hidden = false;
    zone.hidden = true;
    $("live").textContent = "Upload complete.";
    box.setAttribute("tabindex", "-1");
    box.focus();
  }

  // One XHR PUT of `blob` (XHR, for upload progress: fetch has none).
  function put(target, blob, onProgress) {
    return new Promise((resolve, reject) => {
      const xhr = new XMLHttpRequest();
      xhr.open("PUT", target.url);
      for (const [name, value] of Object.entries(target.headers || {})) {
        // The browser sets Content-Length itself, from the file.
        if (name.toLowerCase() !== "content-length") xhr.setRequestHeader(name, value);
      }
      xhr.upload.onprogress = (e) => onProgress(e.loaded);
      xhr.onload = () => {
        // A refused body was not stored: none of it counts as sent.
        if (xhr.status < 200 || xhr.status >= 300) onProgress(0);
        resolve(xhr);
      };
      xhr.onerror = () => reject(new Error("network"));
      xhr.onabort = () => reject(new Error("network"));
      xhr.send(blob);
    });
  }

  // Where sluice receives the bytes: the file as one resumable tus upload
  // to the upload link (its URL: the upload exists already), by the
  // vendored tus-js-client, in requests of `chunk_size` bytes. It asks
  // where the upload stands (HEAD) and sends the rest from there; a
  // dropped connection or a writer still finishing (409, 423) is taken up
  // again from where the server stands, a few times, and a reload of the
  // page goes on from there too. A "not now" (503 and its kin) is waited
  // out after its Retry-After, as every request of this form is
  // (`patiently`), and the upload then goes on from where it stood. Any
  // other refusal (the bytes not the file) is final.
  async function putStream(stream, file, started, showProgress, hashing) {
    // With the file's digest to come (`hashing`, the hash under way beside
    // the upload), tus-js-client reads the file through `source`: each
    // request's bytes are the file's own slice (Chromium streams a slice;
    // a body from memory is copied whole and goes slower), and the one
    // that sends the last bytes waits for the hash, whose digest goes with
    // it (`Repr-Digest`, RFC 9530), for the server to check what arrived.
    // A request that would end the file while the hash goes on sends all
    // but its last TAIL bytes, so what waits for the hash is one small
    // request, not a whole chunk.
    let digest = null;
    let hashed = null;
    if (hashing) hashing.then((read) => { hashed = read; }, () => {});
    const source = {
      size: file.size,
      slice: async (start, end) => {
        end = Math.min(end, file.size);
        if (hashing && end === file.size) {
          if (!hashed && start < file.size - TAIL) end = file.size - TAIL;
          else digest = (await hashing).sha256;
        }
        return { value: file.slice(start, end), done: false };
      },
      close: () => {},
    };
    const reading = hashing ? { fileReader: { openFile: async () => source } } : {};
    const attempt = () => new Promise((resolve, reject) => {
      const upload = new tus.Upload(file, {
        ...reading,
        uploadUrl: stream.link,
        chunkSize: stream.chunk_size,
        retryDelays: [0, 1000, 3000, 5000],
        storeFingerprintForResuming: false,
        onBeforeRequest: (req) => {
          if (digest && req.getMethod() === "PATCH") req.setHeader("Repr-Digest", `sha-256=:${base64OfHex(digest)}:`);
        },
        onShouldRetry: (err) => {
          const status = err.originalResponse ? err.originalResponse.getStatus() : 0;
          return status === 0 || status === 409 || status === 423;
        },
        onProgress: (sent) => showProgress(sent, started),
        onSuccess: () => resolve({ status: 204 }),
        onError: (err) => {
          const answer = err.originalResponse;
          if (!answer) {
            reject(new Stop("The upload was interrupted. Try again: what was sent is kept.", { retry: true }));
          } else if (NOT_NOW.has(answer.getStatus())) {
            // For `patiently`: the answer, and when to ask again.
            resolve({ status: answer.getStatus(), getResponseHeader: (name) => answer.getHeader(name) });
          } else {
            let message = `The server refused the file (${answer.getStatus()}).`;
            try {
              const body = JSON.parse(answer.getBody());
              if (body.message) message = body.message;
            } catch (_) {
              // not a JSON answer: its status says it
            }
            reject(new Stop(message, { retry: answer.getStatus() !== 400 }));
          }
        },
      });
      upload.start();
    });
    const done = await patiently(attempt, waiting(file));
    if (done.status !== 204) {
      throw new Stop(`The server is busy (${done.status}). Try again in a moment: what was sent is kept.`, { retry: true });
    }
  }

  // A file in parts: the parts not stored yet (a start again, e.g. after a
  // reload, sends only those), PARTS_IN_FLIGHT at a time, each hashed
  // (`partHasher`), its URL asked for and PUT with progress (one request alone
  // does not reach the browser's ceiling: it sends a body 16 KiB at a time);
  // then the completion, asked again while the server proves the file (202).
  // With the file's bytes in memory (`read.bytes`: read whole for its own
  // hash; taken from `read`, and let go once the parts are hashed), each
  // part is hashed from them instead of read again from the file.
  async function putParts(parts, file, read, started, showProgress) {
    const wait = waiting(file);
    const listed = await patiently(() => fetch(`${parts.link}/parts`), wait);
    if (!listed.ok) throw new Refused(await messageOf(listed));
    const stored = new Set((await listed.text()).split("\n").filter(Boolean).map(Number));
    const missing = [];
    let kept = 0;
    const slice = (n) => file.slice((n - 1) * parts.part_size, Math.min(n * parts.part_size, file.size));
    for (let n = 1; n <= parts.count; n++) {
      if (stored.has(n)) kept += slice(n).size;
      else missing.push(n);
    }
    // Each missing part's digest, one after another in the order the parts go.
    const hasher = partHasher(slice, read.bytes, parts.part_size, missing);
    read.bytes = null;
    const sending = new Map();
    const show = () => {
      let sent = kept;
      for (const bytes of sending.values()) sent += bytes;
      showProgress(sent, started);
    };
    let partsSent = parts.count - missing.length;
    phase(`Uploading ${file.name}: ${partsSent} of ${parts.count} parts sent…`);
    show();
    // On a failure no other part is started, and the ones on their way
    // finish (stored, a try again will not send them) before it is told.
    let next = 0;
    let failure = null;
    const worker = async () => {
      while (next < missing.length && !failure) {
        const n = missing[next++];
        const blob = slice(n);
        let putting;
        try {
          const sha = await hasher.digest(n);
          const asked = await patiently(() => fetch(`${parts.link}/parts/${n}?sha256=${sha}`, { method: "POST" }), wait);
          if (!asked.ok) throw new Refused(await messageOf(asked));
          const target = partTarget(await asked.text(), parts.origin);
          const sendPart = () =>
            put(target, blob, (bytes) => {
              sending.set(n, bytes);
              show();
            });
          putting = patiently(sendPart, wait);
        } finally {
          // On its way (`put` has sent it), or given up: the next part may be hashed.
          hasher.sent(n);
        }
        const xhr = await putting;
        if (xhr.status < 200 || xhr.status >= 300) {
          throw new Refused(`Part ${n} was refused (${xhr.status}).`);
        }
        sending.set(n, blob.size);
        partsSent += 1;
        phase(`Uploading ${file.name}: ${partsSent} of ${parts.count} parts sent…`);
        show();
      }
    };
    const guarded = () => worker().catch((e) => { failure = failure || e; });
    await Promise.all(Array.from({ length: Math.min(PARTS_IN_FLIGHT, missing.length) }, guarded));
    if (failure) throw failure;
    for (;;) {
      const done = await patiently(() => fetch(`${parts.link}/complete`, { method: "POST" }), wait);
      if (done.status === 202) {
        phase(`Verifying ${file.name}…`);
        continue;
      }
      if (!done.ok) throw new Refused(await messageOf(done));
      return;
    }
  }

  // One file of the pick (`item`: the file and its number on the page):
  // started, sent, hashed; its sha256, or a thrown failure (`Stop` when the
  // link allows no retry). The hash starts at once, beside the start and
  // the upload: where the link takes the digest with the last bytes (sluice
  // receives them as one stream), nothing waits for it but those bytes;
  // elsewhere (parts, or one PUT straight to a store, whose checksum is
  // signed first) the server says so (428), and the file starts again once
  // hashed. After a reload the file is hashed whole again, beside sending
  // what is left: one more read of the file, no more bytes sent.
  async function send(item, showProgress) {
    const { file, n } = item;
    const max = how.maxSize();
    if (max !== null && file.size > max) {
      throw new Stop(`${file.name} is ${size(file.size)}, larger than this link accepts (${size(max)}).`, { retry: false });
    }
    const startUrl = how.startUrl(n);
    if (!startUrl) throw new Stop("The upload is not ready yet: wait a moment, then try again.", {});
    phase(`Starting ${file.name}…`);
    const picked = performance.now();
    let started = picked;
    let checking = false;
    // Timings, for the benchmarks (nothing leaves the page).
    window.sluiceTimings = {};
    const hashing = sha256Read(file, (done) => {
      if (checking) showProgress(done, started);
    }).then((read) => {
      window.sluiceTimings.hashMs = performance.now() - picked;
      return read;
    });
    // Told where it is awaited (a file that cannot be read).
    hashing.catch(() => {});
    const begin = (sha256) => patiently(() => fetch(startUrl, {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ filename: file.name, size: file.size, sha256, content_type: file.type || undefined }),
    }), waiting(file));
    let start = await begin(undefined);
    let read = null;
    if (start.status === 428) {
      phase(`Checking ${file.name}…`);
      checking = true;
      read = await hashing;
      checking = false;
      start = await begin(read.sha256);
    }
    if (!start.ok) {
      // 403: the link expired or is not valid; 409: it was used; 413: too
      // large (another file may do).
      const final = start.status === 403 || start.status === 409;
      throw new Stop(await messageOf(start), { retry: false, pick: !final });
    }
    const target = await start.json();
    phase(`Uploading ${file.name}…`);
    started = performance.now();
    showProgress(0, started);
    if (target.stream) {
      // The file's bytes, where they were read whole for its hash, are
      // not needed for a stream: let go once hashed.
      if (read) read.bytes = null;
      else hashing.then((r) => { r.bytes = null; }, () => {});
      await putStream(target.stream, file, started, showProgress, read ? null : hashing);
    } else if (target.parts) {
      await putParts(target.parts, file, read || (await hashing), started, showProgress);
    } else {
      if (read) read.bytes = null;
      const sendFile = () => put(target.upload, file, (bytes) => showProgress(bytes, started));
      const xhr = await patiently(sendFile, waiting(file));
      if (xhr.status < 200 || xhr.status >= 300) {
        let message = `The storage refused the file (${xhr.status}).`;
        try {
          const body = JSON.parse(xhr.responseText);
          if (body.message) message = body.message;
        } catch (_) {
          // S3 answers XML
        }
        throw new Stop(`${message} Try again, or ask for a new link.`, {});
      }
    }
    window.sluiceTimings.uploadMs = performance.now() - started;
    window.sluiceTimings.totalMs = performance.now() - picked;
    return (read || (await hashing)).sha256;
  }

  // A row of the list of files (a page for several): its name, its own
  // bar, and where it stands.
  function row(file) {
    let list = $("files");
    if (!list) {
      list = document.createElement("ol");
      list.id = "files";
      list.className = "files";
      $("progress-box").append(list);
    }
    const li = document.createElement("li");
    const name = document.createElement("span");
    name.textContent = `${file.name} (${size(file.size)})`;
    const bar = document.createElement("progress");
    bar.max = 100;
    bar.value = 0;
    bar.setAttribute("aria-label", file.name);
    const state = document.createElement("span");
    state.className = "state";
    state.textContent = "waiting";
    li.append(name, bar, state);
    list.append(li);
    return { bar, state };
  }

  // The files picked, one after another: each with its own bar (a page for
  // several) and the total on the main bar; the words of `how.done` once
  // all are stored. A failure stops the rest; "Try again" goes on from
  // the file that failed (each keeps its number, so its start finds it).
  async function upload(picked) {
    if (busy || picked.length === 0) return;
    const left = how.maxFiles() - taken;
    if (picked.length > left) {
      fail(
        left > 0
          ? `This link takes ${how.maxFiles()} files: choose at most ${left} more.`
          : "This link takes no more files. Go back to the conversation and ask for a new link for more.",
        { retry: false, pick: left > 0 },
      );
      return;
    }
    queue = picked.map((file, i) => ({ file, n: taken + i }));
    taken += picked.length;
    await sendQueue();
  }

  async function sendQueue() {
    busy = true;
    $("error").hidden = true;
    $("retry").hidden = true;
    zone.classList.add("busy");
    input.disabled = true;
    const several = how.maxFiles() > 1;
    const total = queue.reduce((sum, item) => sum + item.file.size, 0);
    for (const item of queue) if (several && !item.row) item.row = row(item.file);
    try {
      for (const item of queue) {
        if (item.sha256) continue;
        const before = queue.filter((q) => q.sha256).reduce((sum, q) => sum + q.file.size, 0);
        if (item.row) item.row.state.textContent = "uploading";
        const showProgress = (done, started) => {
          if (item.row) item.row.bar.value = item.file.size === 0 ? 100 : Math.floor((done / item.file.size) * 100);
          if (several) progress(before + done, total, started);
          else progress(done, item.file.size, started);
        };
        item.sha256 = await send(item, showProgress);
        if (item.row) {
          item.row.bar.value = 100;
          item.row.state.textContent = "done";
        }
        results.push({ file: item.file, sha256: item.sha256 });
      }
      busy = false;
      finished(queue.map((q) => q.file), await how.done(results));
      if (several && taken < how.maxFiles() && oneAtATime) {
        zone.hidden = false;
        zone.classList.remove("busy");
        input.disabled = false;
        zone.querySelector(".zone-title").textContent = `Add another file (${taken} of ${how.maxFiles()} sent)`;
      }
    } catch (e) {
      const failed = queue.find((q) => !q.sha256);
      if (failed && failed.row) failed.row.state.textContent = "not sent";
      if (e instanceof Stop && !e.how.retry && e.how.pick !== false && failed) {
        // Another file may be picked instead: the numbers from the failed
        // one on were never started, and are free again.
        taken = failed.n;
        queue = [];
      }
      if (e instanceof Stop) {
        fail(e.message, e.how);
        return;
      }
      if (e instanceof Refused) {
        fail(`${e.message} Try again: the parts already sent are kept.`);
        return;
      }
      fail(
        e && e.message === "network"
          ? "The upload was interrupted: the connection was lost. Check your connection, then try again."
          : `Something went wrong: ${e && e.message ? e.message : e}. Try again.`,
      );
    }
  }

  // What was picked: several files where the page takes several. A host
  // whose picker gives nothing for a multiple picker (reported for the
  // Claude mobile app) gets one file at a time.
  function picked(list) {
    const files = Array.from(list || []);
    if (files.length === 0 && input.multiple) {
      input.multiple = false;
      oneAtATime = true;
      zone.querySelector(".zone-title").textContent = "Choose one file at a time";
      return;
    }
    upload(files);
  }

  // A page for several files takes several at once (the widget learns how
  // many from the tool's result, after the form is made: it calls this again).
  function takeMaxFiles() {
    if (how.maxFiles() > 1 && !oneAtATime) {
      input.multiple = true;
      zone.querySelector(".zone-title").textContent = "Drop the files here";
      zone.querySelector(".button").textContent = "Choose files…";
    }
  }
  takeMaxFiles();
  input.addEventListener("change", () => picked(input.files));
  for (const name of ["dragenter", "dragover"]) {
    zone.addEventListener(name, (e) => {
      e.preventDefault();
      if (!busy) zone.classList.add("over");
    });
  }
  zone.addEventListener("dragleave", () => zone.classList.remove("over"));
  zone.addEventListener("drop", (e) => {
    e.preventDefault();
    zone.classList.remove("over");
    const files = e.dataTransfer ? Array.from(e.dataTransfer.files) : [];
    upload(how.maxFiles() > 1 ? files : files.slice(0, 1));
  });
  $("retry").addEventListener("click", () => {
    $("retry").hidden = true;
    $("error").hidden = true;
    if (queue.length > 0) sendQueue();
    else input.click();
  });
  return { takeMaxFiles };
}
