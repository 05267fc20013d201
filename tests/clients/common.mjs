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

// Presses Tab (at most six times) until the file picker has focus;
// `focusedId` says which element has it. Returns the last one focused.
export async function tabToPicker(page, focusedId) {
  let focused = await focusedId();
  for (let i = 0; i < 6 && focused !== "file"; i++) {
    await page.keyboard.press("Tab");
    focused = await focusedId();
  }
  return focused;
}

// Opens the file chooser from the keyboard: Tab until the picker has focus
// (`focusedId` says which element has it), then Space. On a loaded machine
// Space on the focused picker was seen to open nothing (about one run in
// five with other browser tests at once, in the page and in the widget), so
// the keyboard path is tried again, Tab and Space, twice more.
export async function chooseByKeyboard(page, focusedId) {
  let chooser = null;
  for (let attempt = 0; attempt < 3 && !chooser; attempt++) {
    check((await tabToPicker(page, focusedId)) === "file", "Tab reaches the picker");
    [chooser] = await Promise.all([
      page.waitForEvent("filechooser", { timeout: 10000 }).catch(() => null),
      page.keyboard.press("Space"),
    ]);
  }
  check(chooser, "Space on the focused picker opens the file chooser");
  return chooser;
}

// Waits for the upload page or widget under `root` (a page or a frame
// locator) to say it is done; if it says something went wrong instead,
// calls `onError` (a screenshot) and fails with its own words, not a bare
// timeout.
export async function finished(root, onError) {
  const done = root.locator("#done");
  const error = root.locator("#error");
  await Promise.race([
    done.waitFor({ state: "visible", timeout: 120000 }),
    error.waitFor({ state: "visible", timeout: 120000 }),
  ]);
  if (!(await done.isVisible())) {
    await onError();
    const status = await root.locator("#phase").innerText().catch(() => "");
    throw new Error(`an error shows instead of done: ${await error.innerText()} (phase: ${status})`);
  }
}
