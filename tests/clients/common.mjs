// Helpers shared by the TypeScript SDK client scripts.

import { execSync } from "node:child_process";
import { createHash } from "node:crypto";

export function check(cond, message) {
  if (!cond) throw new Error(`check failed: ${message}`);
}

export const sha256 = (buf) => createHash("sha256").update(buf).digest("hex");
export const text = (result) => result.content.map((c) => c.text ?? "").join(" ");
export const sh = (line, cwd) => execSync(line, { cwd, stdio: ["ignore", "pipe", "pipe"], shell: "/bin/sh" });

// Debian's Chromium, headless, as the browser tests and benches drive it
// (playwright-core cannot download its own here; without the background
// networking flags it tries hosts this machine cannot reach).
export async function launchChromium() {
  const { chromium } = await import("playwright-core");
  return chromium.launch({
    executablePath: "/usr/bin/chromium",
    args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
      "--disable-background-networking", "--disable-component-update", "--disable-sync"],
  });
}
