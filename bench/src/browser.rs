//! The browser upload page in headless Chromium, each figure beside its
//! reference measured in the same run: the page's hashing rate beside
//! `sha256sum`'s on the same file, its upload rate beside curl's PUT of the
//! same file to sluice, and the browser's peak memory while it uploads a
//! file hashed whole (WebCrypto, up to 512 MiB) and one hashed incrementally
//! (above that).

use std::path::Path;
use std::process::Command;
use std::time::Instant;

use anyhow::{Context as _, bail};
use serde_json::{Value, json};

use crate::{Sluice, make_file, post, start_sluice_with, timed_curl};

fn page_url(sluice: &Sluice) -> anyhow::Result<String> {
    let (result, _) = crate::actions::call_tool(
        &sluice.base,
        &sluice.token,
        "request_browser_upload",
        json!({}),
    )?;
    result["structuredContent"]["page_url"]
        .as_str()
        .map(str::to_owned)
        .with_context(|| format!("no page_url in {result}"))
}

/// One upload through the page: its timings and the browser's memory.
fn through_page(sluice: &Sluice, file: &Path) -> anyhow::Result<Value> {
    let root = sluice_testkit::root();
    let out = Command::new("node")
        .arg(root.join("tests/clients/bench-browser.mjs"))
        .arg("--page")
        .arg(page_url(sluice)?)
        .arg("--file")
        .arg(file)
        .current_dir(root.join("tests/clients"))
        .output()?;
    if !out.status.success() {
        bail!(
            "bench-browser.mjs: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    Ok(serde_json::from_slice(&out.stdout)?)
}

fn seconds(v: &Value, key: &str) -> anyhow::Result<f64> {
    Ok(v[key].as_f64().with_context(|| format!("{key} in {v}"))? / 1000.0)
}

pub fn run() -> anyhow::Result<String> {
    let work = tempfile::tempdir()?;
    let sluice = start_sluice_with(work.path(), &[])?;
    let mib = 1u64 << 20;
    let size = 256 * mib;
    let file = work.path().join("page-256.bin");
    eprintln!("browser: writing a 256 MiB file…");
    let sha = make_file(&file, size)?;

    // References: sha256sum, and curl's PUT to an upload link.
    Command::new("sync").status()?;
    let start = Instant::now();
    let out = Command::new("sha256sum").arg(&file).output()?;
    let sum_secs = start.elapsed().as_secs_f64();
    anyhow::ensure!(
        String::from_utf8_lossy(&out.stdout).starts_with(&sha.to_hex()),
        "sha256sum agrees"
    );
    let ticket = post(
        &format!("{}/uploads", sluice.base),
        &sluice.token,
        &json!({"filename": "curl.bin", "size": size, "sha256": sha}),
    )?;
    let curl_secs = timed_curl(&[
        "-T",
        file.to_str().context("path")?,
        ticket["upload"]["url"].as_str().context("url")?,
    ])?;

    eprintln!("browser: the page, 256 MiB…");
    let page = through_page(&sluice, &file)?;
    let (hash_secs, up_secs) = (seconds(&page, "hashMs")?, seconds(&page, "uploadMs")?);
    let growth = |v: &Value| -> f64 {
        (v["rssPeakKib"].as_f64().unwrap_or(0.0) - v["rssBeforeKib"].as_f64().unwrap_or(0.0))
            / 1024.0
    };
    let whole_growth = growth(&page);

    eprintln!("browser: the page, 2 GiB (hashed incrementally)…");
    let big = work.path().join("page-2g.bin");
    make_file(&big, 2048 * mib)?;
    let big_page = through_page(&sluice, &big)?;
    let big_growth = growth(&big_page);
    let big_hash_rate = 2048.0 / seconds(&big_page, "hashMs")?;
    drop(sluice);

    let rate = |secs: f64| 256.0 / secs;
    let mut out = String::from("\n## Browser upload page (headless Chromium, local mode)\n\n");
    out.push_str(
        "`target/fast/sluice-bench --only browser`: Debian's Chromium driven by playwright-core \
         (`tests/clients/bench-browser.mjs`); the page reports its own hashing and upload times. \
         References run in the same script on the same file.\n\n",
    );
    out.push_str("| figure | page | reference | ratio | target |\n|---|---|---|---|---|\n");
    out.push_str(&format!(
        "| SHA-256 of 256 MiB (WebCrypto, whole file) vs `sha256sum` | {:.0} MiB/s | {:.0} MiB/s | {:.2} | ≥ 0.5 |\n",
        rate(hash_secs),
        rate(sum_secs),
        sum_secs / hash_secs
    ));
    out.push_str(&format!(
        "| upload of 256 MiB (XHR PUT) vs curl's PUT to sluice | {:.0} MiB/s | {:.0} MiB/s | {:.2} | ≥ 0.8 |\n",
        rate(up_secs),
        rate(curl_secs),
        curl_secs / up_secs
    ));
    out.push_str(&format!(
        "\nPeak browser memory (all its processes' RSS, sampled every 100 ms) over its memory before \
         the file was picked: {whole_growth:.0} MiB for the 256 MiB file (hashed whole: the file is \
         read into memory once), {big_growth:.0} MiB for a 2 GiB file (hashed incrementally in \
         8 MiB slices, at {big_hash_rate:.0} MiB/s in plain JavaScript, since WebCrypto cannot \
         stream), so memory stays bounded whatever the file's size.\n"
    ));
    Ok(out)
}
