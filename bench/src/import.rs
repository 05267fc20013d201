//! Imports (`import_file`): a file fetched by the server from a web server
//! on loopback, beside `curl -o` of the same URL in the same round, and the
//! server's memory while it imports.

use anyhow::{Context as _, bail};

use crate::Args;
use crate::harness::{self, median};
use crate::kit::{delete_file, make_file, memory_kib, post, start_refs, start_sluice_with};

pub(crate) fn run(args: &Args) -> anyhow::Result<String> {
    let size = args.size_mib << 20;
    let work = tempfile::tempdir()?;
    let file = work.path().join("payload.bin");
    eprintln!("writing a {} MiB payload…", args.size_mib);
    let sha = make_file(&file, size)?;
    // The `work` reference server serves the file from disk: the origin.
    let (mut refs_child, _discard, origin) = start_refs(&file, size)?;
    let port = origin.rsplit(':').next().context("origin port")?.to_owned();
    let url = format!("http://{origin}/object");
    let sluice = start_sluice_with(
        &work.path().join("sluice"),
        &[
            ("SLUICE_IMPORT_ALLOW_LOOPBACK", "true"),
            ("SLUICE_IMPORT_PORTS", port.as_str()),
            ("SLUICE_IMPORT_WAIT_SECS", "600"),
        ],
    )?;
    let pid = sluice.process.id();
    // Warm up the fetch and the store as the data plane's section does
    // with a small round trip: an import declared one byte long, refused
    // at its second byte. Then the resting RSS.
    let warm = post(
        &format!("{}/imports", sluice.base),
        &sluice.token,
        &serde_json::json!({"url": url, "size": 1, "sha256": sluice::Sha256::of(b"x")}),
    )?;
    if warm["state"] != "rejected" {
        bail!("the warm-up import was not refused: {warm}");
    }
    let (_, rss_before) = memory_kib(pid)?;
    let saved = work.path().join("curl-copy.bin");
    let saved_arg = saved.to_str().context("utf-8 path")?.to_owned();
    let runs = harness::rounds(args.runs, "import", |_| {
        let curl = saved_by_curl(&url, &saved_arg)?;
        std::fs::remove_file(&saved)?;
        // The same, made durable as sluice makes an object: its bytes and
        // its directory entry on disk before it counts.
        let durable = saved_by_curl(&url, &saved_arg)? + synced()?;
        std::fs::remove_file(&saved)?;
        std::process::Command::new("sync").status()?;
        let started = std::time::Instant::now();
        let ticket = post(
            &format!("{}/imports", sluice.base),
            &sluice.token,
            &serde_json::json!({"url": url, "size": size, "sha256": sha, "filename": "payload.bin"}),
        )?;
        let took = started.elapsed().as_secs_f64();
        if ticket["state"] != "ready" {
            bail!("the import did not end ready: {ticket}");
        }
        // The next round imports the file again: this one goes.
        delete_file(&sluice, ticket["file_id"].as_str().context("file_id")?)?;
        Ok((curl, durable, took))
    })?;
    let (peak, _) = memory_kib(pid)?;
    let _ = refs_child.kill();
    let _ = refs_child.wait();
    let mib = args.size_mib as f64;
    let curl = median(runs.iter().map(|r| r.0).collect());
    let durable = median(runs.iter().map(|r| r.1).collect());
    let import = median(runs.iter().map(|r| r.2).collect());
    let ratio = median(runs.iter().map(|r| r.0 / r.2).collect());
    let durable_ratio = median(runs.iter().map(|r| r.1 / r.2).collect());
    let growth = peak.saturating_sub(rss_before) as f64 / 1024.0;
    let verdict = |met: bool| if met { "met" } else { "**missed**" };
    Ok(format!(
        "## Import: a {mib} MiB file from a web server on loopback (local mode)\n\n\
         `target/fast/sluice-bench --only import --size-mib {size_mib} --runs {n}`: the bench's `hash+file` \
         reference server serves the file from disk; each round, `curl -o` saves it (the reference), then \
         `POST /imports` with its size and SHA-256 has sluice fetch it, hash it once on the way into the store and \
         mark it ready (timed to the answer, which comes when the file is ready); the file is deleted before the \
         next round. The resting RSS is read after a warm-up import (declared one byte long, refused at its second byte), as the data plane's section reads it after a small round trip. Medians of {n} rounds.\n\n\
         | path | MiB/s |\n|---|---|\n\
         | `curl -o` (reference) | {c:.0} |\n\
         | `curl -o`, then `sync` (durable, as sluice's objects are) | {d:.0} |\n\
         | sluice import | {i:.0} |\n\n\
         Import / curl: **{ratio:.2}** (target ≥ 0.9: {v1}); import / durable curl: **{durable_ratio:.2}**. \
         sluice's peak RSS grew **{growth:.1} MiB** over its resting RSS (target ≤ 32 MiB: {v2}).\n\n",
        size_mib = args.size_mib,
        n = args.runs,
        c = mib / curl,
        i = mib / import,
        d = mib / durable,
        v1 = verdict(ratio >= 0.9),
        v2 = verdict(growth <= 32.0),
    ))
}

/// `curl -o saved url` after a `sync` (no transfer pays for the previous
/// one's writeback), in seconds.
fn saved_by_curl(url: &str, saved: &str) -> anyhow::Result<f64> {
    std::process::Command::new("sync").status()?;
    let started = std::time::Instant::now();
    let out = std::process::Command::new("curl")
        .args(["-sS", "--fail-with-body", "-o", saved, url])
        .output()?;
    let secs = started.elapsed().as_secs_f64();
    if !out.status.success() {
        bail!("curl {url}: {}", String::from_utf8_lossy(&out.stderr));
    }
    Ok(secs)
}

/// `sync`, in seconds.
fn synced() -> anyhow::Result<f64> {
    let started = std::time::Instant::now();
    std::process::Command::new("sync").status()?;
    Ok(started.elapsed().as_secs_f64())
}
