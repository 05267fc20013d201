// Drives the browser upload page in a real browser: Debian's Chromium through
// playwright-core (whose own browser download cannot work here). Run by
// tests/tests/browser.rs; prints one JSON line {"checks": [...]} and exits
// non-zero naming the failed check.
//
//   node browser.mjs --page URL --file PATH --shots DIR --mode MODE [--prefix NAME]
//
// Modes: upload (pick, upload, done), used (a page already used refuses a
// second file), expired (the page says so), network (the PUT fails, the page
// says so, "Try again" then succeeds), keyboard (the same upload without a mouse),
// several (--file is a comma-separated list: all picked at once, each with
// its own bar), one-at-a-time (the same on a picker that gives nothing for a
// multiple pick, as on the Claude mobile app: one file, then the next),
// busy (the server refuses the first transfer "not now": the page says it
// waits, writes its words to SHOTS/PREFIX"busy.signal" so the test can free
// the server, and goes on by itself), reload (the page is reloaded while
// its upload's second request is held, the file picked again: the upload
// goes on from where the server stands, and the request that sends the
// last bytes declares the file's digest in Repr-Digest).

import { writeFileSync } from "node:fs";
import { parseArgs } from "node:util";


import { check, chooseByKeyboard, finished, launchChromium } from "./common.mjs";

const { values: args } = parseArgs({
  options: {
    page: { type: "string" },
    file: { type: "string" },
    shots: { type: "string" },
    mode: { type: "string" },
    prefix: { type: "string", default: "" },
    width: { type: "string", default: "900" },
  },
});

const checks = [];
const browser = await launchChromium();
const shot = (page, name) => page.screenshot({ path: `${args.shots}/${args.prefix}${name}.png`, fullPage: true });

try {
  const context = await browser.newContext({ viewport: { width: Number(args.width), height: 700 } });
  const page = await context.newPage();
  const finish = () => finished(page, () => shot(page, "error-unexpected"));
  const external = [];
  page.on("request", (r) => {
    const url = new URL(r.url());
    if (url.origin !== new URL(args.page).origin) external.push(r.url());
  });
  const violations = [];
  page.on("console", (m) => {
    if (m.type() === "error") violations.push(m.text());
  });

  const response = await page.goto(args.page);

  if (args.mode === "expired") {
    check(response.status() === 410, `an expired page answers 410, got ${response.status()}`);
    const text = await page.locator("#error").innerText();
    check(/expired/i.test(text) && /ask for a new one/i.test(text), `the page says it expired: ${text}`);
    await shot(page, "error-expired");
    checks.push("expired page explained");
  } else {
    check(response.status() === 200, `the page answers 200, got ${response.status()}`);
    await shot(page, "empty");
    const scrollWidth = await page.evaluate(() => document.documentElement.scrollWidth);
    check(scrollWidth <= Number(args.width), `no horizontal scroll at ${args.width} px (${scrollWidth})`);

    if (args.mode === "network") {
      // The PUT fails as a dropped connection would.
      await page.route(/\/u\//, (route) => route.abort("connectionreset"));
    }
    // Every PATCH of the upload link: where it started, and what it declared.
    const patches = [];
    page.on("request", (r) => {
      if (r.method() === "PATCH") {
        patches.push({ offset: Number(r.headers()["upload-offset"]), digest: r.headers()["repr-digest"] || null });
      }
    });
    if (args.mode === "reload") {
      // The first request goes; the second is held until the page is reloaded.
      let sent = 0;
      const held = new Promise((resolve) => {
        page.route(/\/u\//, (route) => {
          if (route.request().method() !== "PATCH") return route.continue();
          sent += 1;
          if (sent === 1) return route.continue();
          resolve();
          return undefined;
        });
      });
      await page.setInputFiles("#file", args.file);
      await held;
      await page.unroute(/\/u\//);
      const before = patches.length;
      await page.reload();
      await page.setInputFiles("#file", args.file);
      await finish();
      const after = patches.slice(before);
      check(after.length > 0 && after[0].offset > 0, `after the reload the upload goes on from where it stood: ${JSON.stringify(after)}`);
      check(after.filter((p) => p.digest).length === 1 && after[after.length - 1].digest, `only the last request declares the digest: ${JSON.stringify(after)}`);
      checks.push("a reload goes on from where the upload stood");
    }

    if (args.mode === "keyboard") {
      await page.keyboard.press("Tab");
      const focused = await page.evaluate(() => document.activeElement && document.activeElement.id);
      check(focused === "file", `Tab reaches the file picker first (focused: ${focused})`);
      const outline = await page.evaluate(() => getComputedStyle(document.getElementById("zone")).outlineStyle);
      check(outline !== "none", "the focused drop zone shows a visible outline");
      await shot(page, "keyboard-focus");
      const chooser = await chooseByKeyboard(page, () => page.evaluate(() => document.activeElement && document.activeElement.id));
      await chooser.setFiles(args.file);
      checks.push("keyboard: Tab, Space, choose");
    } else if (args.mode === "several") {
      await page.setInputFiles("#file", args.file.split(","));
    } else if (args.mode === "one-at-a-time") {
      // The picker gives nothing for a multiple pick: the form takes one file at a time.
      await page.setInputFiles("#file", []);
      const title = await page.locator(".zone-title").innerText();
      check(/one file at a time/i.test(title), `the form asks for one file at a time: ${title}`);
      check(!(await page.evaluate(() => document.getElementById("file").multiple)), "the picker is no longer multiple");
      const files = args.file.split(",");
      for (const [i, file] of files.entries()) {
        await page.setInputFiles("#file", file);
        await page.waitForFunction((n) => document.querySelectorAll("#files li .state").length === n
          && [...document.querySelectorAll("#files li .state")].every((s) => s.textContent === "done"), i + 1, { timeout: 60000 });
        if (i + 1 < files.length) {
          const again = await page.locator(".zone-title").innerText();
          check(new RegExp(`${i + 1} of`).test(again), `the form offers another file: ${again}`);
        }
      }
      checks.push("one file at a time");
    } else if (args.mode !== "reload") {
      await page.setInputFiles("#file", args.file);
    }

    if (args.mode === "reload") {
      // done above
    } else if (args.mode === "used") {
      await page.locator("#error").waitFor({ state: "visible", timeout: 60000 });
      const text = await page.locator("#error").innerText();
      check(/already uploaded/i.test(text) && /new link/i.test(text), `a used page refuses: ${text}`);
      check(!(await page.locator("#retry").isVisible()), "no Try again on a used link");
      await shot(page, "error-used");
      checks.push("second upload refused in words");
    } else if (args.mode === "network") {
      await page.locator("#error").waitFor({ state: "visible", timeout: 60000 });
      const text = await page.locator("#error").innerText();
      check(/interrupted|connection/i.test(text), `a network failure is explained: ${text}`);
      check(await page.locator("#retry").isVisible(), "Try again is offered");
      await shot(page, "error-network");
      await page.unroute(/\/u\//);
      await page.locator("#retry").click();
      await finish();
      checks.push("network failure explained, then Try again uploads");
    } else {
      if (args.mode === "busy") {
        await page.waitForFunction(
          () => /again in \d+ s/.test(document.getElementById("phase").textContent) || !document.getElementById("error").hidden,
          null,
          { timeout: 60000, polling: 20 },
        );
        const said = await page.locator(await page.locator("#error").isVisible() ? "#error" : "#phase").innerText();
        check(/busy/i.test(said), `the page says it waits: ${said}`);
        await shot(page, "busy");
        writeFileSync(`${args.shots}/${args.prefix}busy.signal`, said);
        checks.push("a busy server waited out");
      }
      // Progress: the upload phase shows bytes, percent and rate. An error
      // ends the wait too, and finish() then fails with the page's words.
      await page.waitForFunction(
        () =>
          document.getElementById("phase").textContent.startsWith("Uploading") ||
          !document.getElementById("done").hidden ||
          !document.getElementById("error").hidden,
        null,
        { timeout: 60000, polling: 20 },
      );
      const figures = await page.locator("#figures").innerText().catch(() => "");
      if (await page.locator("#progress-box").isVisible()) {
        await shot(page, "in-progress");
        check(/of .* · \d+%/.test(figures), `progress shows bytes and percent: ${figures}`);
        checks.push("progress shown");
      }
      await finish();
    }

    if (args.mode === "several" || args.mode === "one-at-a-time") {
      const n = args.file.split(",").length;
      await finish();
      const states = await page.locator("#files li .state").allInnerTexts();
      check(states.length === n && states.every((t) => t === "done"), `each file has its own row, done: ${states}`);
      const bars = await page.locator("#files li progress").evaluateAll((b) => b.map((x) => x.value));
      check(bars.every((v) => v === 100), `each file's bar is full: ${bars}`);
      if (args.mode === "several") {
        const text = await page.locator("#done").innerText();
        check(new RegExp(`${n} files`).test(text), `the page says how many: ${text}`);
        checks.push(`${n} files uploaded, each with its own bar`);
      }
    }
    if (args.mode !== "used") {
      const text = await page.locator("#done").innerText();
      check(/go back to the conversation/i.test(text), `the page says what to do next: ${text}`);
      const focused = await page.evaluate(() => document.activeElement && document.activeElement.id);
      check(focused === "done", "focus moves to the result, for screen readers and keyboards");
      await shot(page, "done");
      checks.push("upload done");
    }
    if (patches.length > 0) {
      const last = patches[patches.length - 1].digest || "";
      check(/^sha-256=:[A-Za-z0-9+/]{43}=:$/.test(last), `the request with the last bytes declares the digest: ${last}`);
      checks.push("the last bytes declare the digest");
    }
  }
  const thirdParty = external.filter((u) => !u.includes("127.0.0.1"));
  check(thirdParty.length === 0, `no third-party requests: ${thirdParty}`);
  check(!violations.some((v) => /Content Security Policy/i.test(v)), `no CSP violation: ${violations}`);
  checks.push("no third-party requests, no CSP violation");
  console.log(JSON.stringify({ checks }));
} finally {
  await browser.close();
}
