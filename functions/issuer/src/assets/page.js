// The browser upload page: hash the picked file (SHA-256), ask sluice for a
// PUT signed for exactly that size and digest, send the file straight to the
// store with a progress bar, and say plainly when it is done or why not.
"use strict";

// Files up to this size are hashed by WebCrypto in one call (native speed,
// the file held in memory once); larger ones incrementally, 8 MiB at a time,
// so a multi-GiB file never has to fit in memory.
const WHOLE_HASH_MAX = 512 * 1024 * 1024;
const CHUNK = 8 * 1024 * 1024;

// ---- SHA-256, incremental (FIPS 180-4), for files WebCrypto cannot stream.
const K = new Uint32Array([
  0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
  0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
  0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
  0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
  0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
  0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
  0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
  0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
]);

class Sha256 {
  constructor() {
    this.h = new Uint32Array([0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19]);
    this.w = new Uint32Array(64);
    this.tail = new Uint8Array(64);
    this.tailLength = 0;
    this.length = 0;
  }

  blocks(bytes, offset, end) {
    const w = this.w;
    const h = this.h;
    for (; offset + 64 <= end; offset += 64) {
      for (let i = 0; i < 16; i++) {
        const j = offset + i * 4;
        w[i] = (bytes[j] << 24) | (bytes[j + 1] << 16) | (bytes[j + 2] << 8) | bytes[j + 3];
      }
      for (let i = 16; i < 64; i++) {
        const a = w[i - 15];
        const b = w[i - 2];
        const s0 = ((a >>> 7) | (a << 25)) ^ ((a >>> 18) | (a << 14)) ^ (a >>> 3);
        const s1 = ((b >>> 17) | (b << 15)) ^ ((b >>> 19) | (b << 13)) ^ (b >>> 10);
        w[i] = (w[i - 16] + s0 + w[i - 7] + s1) | 0;
      }
      let a = h[0], b = h[1], c = h[2], d = h[3], e = h[4], f = h[5], g = h[6], k = h[7];
      for (let i = 0; i < 64; i++) {
        const S1 = ((e >>> 6) | (e << 26)) ^ ((e >>> 11) | (e << 21)) ^ ((e >>> 25) | (e << 7));
        const t1 = (k + S1 + ((e & f) ^ (~e & g)) + K[i] + w[i]) | 0;
        const S0 = ((a >>> 2) | (a << 30)) ^ ((a >>> 13) | (a << 19)) ^ ((a >>> 22) | (a << 10));
        const t2 = (S0 + ((a & b) ^ (a & c) ^ (b & c))) | 0;
        k = g; g = f; f = e; e = (d + t1) | 0; d = c; c = b; b = a; a = (t1 + t2) | 0;
      }
      h[0] += a; h[1] += b; h[2] += c; h[3] += d; h[4] += e; h[5] += f; h[6] += g; h[7] += k;
    }
    return offset;
  }

  update(bytes) {
    this.length += bytes.length;
    let offset = 0;
    if (this.tailLength > 0) {
      const take = Math.min(64 - this.tailLength, bytes.length);
      this.tail.set(bytes.subarray(0, take), this.tailLength);
      this.tailLength += take;
      offset = take;
      if (this.tailLength < 64) return;
      this.blocks(this.tail, 0, 64);
      this.tailLength = 0;
    }
    offset = this.blocks(bytes, offset, bytes.length);
    this.tail.set(bytes.subarray(offset), 0);
    this.tailLength = bytes.length - offset;
  }

  hex() {
    const bits = this.length * 8;
    const pad = new Uint8Array(((this.tailLength + 8) >> 6 << 6) + 64 - this.tailLength);
    pad[0] = 0x80;
    const view = new DataView(pad.buffer);
    view.setUint32(pad.length - 8, Math.floor(bits / 0x100000000));
    view.setUint32(pad.length - 4, bits >>> 0);
    const length = this.length;
    this.update(pad);
    this.length = length;
    return Array.from(this.h, (x) => (x >>> 0).toString(16).padStart(8, "0")).join("");
  }
}

async function sha256Hex(file, onProgress) {
  if (file.size <= WHOLE_HASH_MAX && globalThis.crypto && crypto.subtle) {
    const digest = await crypto.subtle.digest("SHA-256", await file.arrayBuffer());
    onProgress(file.size);
    return Array.from(new Uint8Array(digest), (b) => b.toString(16).padStart(2, "0")).join("");
  }
  const sha = new Sha256();
  for (let at = 0; at < file.size; at += CHUNK) {
    sha.update(new Uint8Array(await file.slice(at, at + CHUNK).arrayBuffer()));
    onProgress(Math.min(at + CHUNK, file.size));
  }
  return sha.hex();
}

// ---- The page.
const $ = (id) => document.getElementById(id);
const main = $("page");
const input = $("file");
const zone = $("zone");
let busy = false;

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

function phase(text) {
  $("progress-box").hidden = false;
  $("phase").textContent = text;
  $("live").textContent = text;
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

function done(file) {
  $("progress-box").hidden = true;
  const box = $("done");
  box.textContent = "";
  const strong = document.createElement("strong");
  strong.textContent = "Done.";
  box.append(strong, ` ${file.name} (${size(file.size)}) was uploaded. You can go back to the conversation and say it is done.`);
  box.hidden = false;
  zone.hidden = true;
  $("live").textContent = "Upload complete.";
  box.setAttribute("tabindex", "-1");
  box.focus();
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

function put(target, file, started, before = 0, total = file.size) {
  return new Promise((resolve, reject) => {
    const xhr = new XMLHttpRequest();
    xhr.open("PUT", target.url);
    for (const [name, value] of Object.entries(target.headers || {})) {
      // The browser sets Content-Length itself, from the file.
      if (name.toLowerCase() !== "content-length") xhr.setRequestHeader(name, value);
    }
    xhr.upload.onprogress = (e) => progress(before + e.loaded, total, started);
    xhr.onload = () => resolve(xhr);
    xhr.onerror = () => reject(new Error("network"));
    xhr.onabort = () => reject(new Error("network"));
    xhr.send(file);
  });
}

// A part's target as the server answers it, in curl's config format:
// `url = "…"` and `header = "Name: value"` lines.
function partTarget(config) {
  const target = { url: "", headers: {} };
  for (const line of config.split("\n")) {
    const m = line.match(/^(url|header) = "((?:[^"\\]|\\.)*)"$/);
    if (!m) continue;
    const value = m[2].replace(/\\(.)/g, "$1");
    if (m[1] === "url") target.url = value;
    else {
      const at = value.indexOf(": ");
      target.headers[value.slice(0, at)] = value.slice(at + 2);
    }
  }
  return target;
}

class Refused extends Error {}

// A file in parts: the parts not stored yet (a reload sends only those),
// each hashed, its URL asked for and PUT with progress; then the
// completion, asked again while the server proves the whole file (202).
async function putParts(parts, file, started) {
  const listed = await fetch(`${parts.link}/parts`);
  if (!listed.ok) throw new Refused(await messageOf(listed));
  const stored = new Set((await listed.text()).split("\n").filter(Boolean).map(Number));
  let sent = 0;
  for (let n = 1; n <= parts.count; n++) {
    const from = (n - 1) * parts.part_size;
    const blob = file.slice(from, Math.min(from + parts.part_size, file.size));
    if (!stored.has(n)) {
      phase(`Uploading ${file.name}: part ${n} of ${parts.count}…`);
      const hex = await sha256Hex(blob, () => {});
      const asked = await fetch(`${parts.link}/parts/${n}?sha256=${hex}`, { method: "POST" });
      if (!asked.ok) throw new Refused(await messageOf(asked));
      const xhr = await put(partTarget(await asked.text()), blob, started, sent, file.size);
      if (xhr.status < 200 || xhr.status >= 300) {
        throw new Refused(`Part ${n} was refused (${xhr.status}).`);
      }
    }
    sent += blob.size;
    progress(sent, file.size, started);
  }
  for (;;) {
    const done = await fetch(`${parts.link}/complete`, { method: "POST" });
    if (done.status === 202) {
      phase(`Verifying ${file.name}…`);
      continue;
    }
    if (!done.ok) throw new Refused(await messageOf(done));
    return;
  }
}

async function upload(file) {
  if (busy) return;
  busy = true;
  $("error").hidden = true;
  $("retry").hidden = true;
  zone.classList.add("busy");
  input.disabled = true;
  const max = Number(main.dataset.maxSize);
  if (file.size > max) {
    fail(`${file.name} is ${size(file.size)}, larger than this link accepts (${size(max)}).`, { retry: false });
    return;
  }
  try {
    phase(`Checking ${file.name}…`);
    let started = performance.now();
    const sha256 = await sha256Hex(file, (done) => progress(done, file.size, started));
    // Timings, for the benchmarks (nothing leaves the page).
    window.sluiceTimings = { hashMs: performance.now() - started };
    const start = await fetch(`${location.pathname}/start`, {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ filename: file.name, size: file.size, sha256, content_type: file.type || undefined }),
    });
    if (!start.ok) {
      // 403: the link expired or is not valid; 409: it was used; 413: too
      // large (another file may do).
      const final = start.status === 403 || start.status === 409;
      fail(await messageOf(start), { retry: false, pick: !final });
      return;
    }
    const target = await start.json();
    phase(`Uploading ${file.name}…`);
    started = performance.now();
    progress(0, file.size, started);
    if (target.parts) {
      await putParts(target.parts, file, started);
      window.sluiceTimings.uploadMs = performance.now() - started;
      done(file);
      return;
    }
    const xhr = await put(target.upload, file, started);
    window.sluiceTimings.uploadMs = performance.now() - started;
    if (xhr.status >= 200 && xhr.status < 300) {
      done(file);
      return;
    }
    let message = `The storage refused the file (${xhr.status}).`;
    try {
      const body = JSON.parse(xhr.responseText);
      if (body.message) message = body.message;
    } catch (_) {
      // S3 answers XML
    }
    fail(`${message} Try again, or go back to the conversation and ask for a new link.`);
  } catch (e) {
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

// The expiry in the person's own time and words.
const expiry = document.querySelector("time");
if (expiry && main && main.dataset.expiresAt) {
  const at = new Date(Number(main.dataset.expiresAt) * 1000);
  const minutes = Math.round((at - Date.now()) / 60000);
  const clock = at.toLocaleTimeString([], { hour: "2-digit", minute: "2-digit" });
  const left = minutes >= 60 ? `${Math.floor(minutes / 60)} h ${minutes % 60} min` : `${minutes} min`;
  expiry.textContent = minutes > 0 ? `${clock} (in ${left})` : clock;
}

if (main && input) {
  input.addEventListener("change", () => {
    if (input.files && input.files[0]) upload(input.files[0]);
  });
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
    const file = e.dataTransfer && e.dataTransfer.files[0];
    if (file) upload(file);
  });
  $("retry").addEventListener("click", () => {
    $("retry").hidden = true;
    $("error").hidden = true;
    if (input.files && input.files[0]) upload(input.files[0]);
    else input.click();
  });
}
