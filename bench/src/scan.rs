//! The malware gate: the time from a file's last byte stored to its
//! `ready`, with clamd (Debian's, on a socket, with the test signatures:
//! `sluice_testkit::clamd`), beside clamd scanning the same bytes alone in
//! the same round (the same `INSTREAM`, the same client crate, read from
//! the file): what sluice adds is reading the object back from its store,
//! the record's notes and marking it ready.

use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};
use sluice_testkit::clamd::Clamd;

use crate::harness::{self, median};
use crate::kit::{delete_file, make_file, post, start_sluice_with, timed_sh};

/// The size the gate is measured at (the figure).
const SIZE_MIB: u64 = 100;

pub(crate) fn run(runs: usize) -> anyhow::Result<String> {
    let size = SIZE_MIB << 20;
    let work = tempfile::tempdir()?;
    let file = work.path().join("payload.bin");
    let sha = make_file(&file, size)?;
    let clamd_dir = Clamd::dir_in(work.path());
    let clamd = Clamd::start(&clamd_dir);
    let address = clamd.address();
    let sluice = start_sluice_with(
        &work.path().join("sluice"),
        &[("SLUICE_SCAN", "clamd"), ("SLUICE_CLAMD", &address)],
    )?;
    let socket = Clamd::socket_in(&clamd_dir);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let rounds = harness::rounds(runs, "scan", |_| {
        // clamd alone, on the same bytes.
        let started = Instant::now();
        let reply = rt.block_on(clamav_client::tokio::scan_file(
            &file,
            clamav_client::tokio::Socket {
                socket_path: socket.as_path(),
            },
            Some(256 * 1024),
        ))?;
        let alone = started.elapsed().as_secs_f64();
        if !String::from_utf8_lossy(&reply).contains("OK") {
            bail!("clamd did not find the payload clean: {reply:?}");
        }
        // Through sluice: the upload's line, then its status until ready.
        let ticket = post(
            &format!("{}/uploads", sluice.base),
            &sluice.token,
            &serde_json::json!({"filename": "payload.bin", "size": size, "sha256": sha}),
        )?;
        let line = ticket["command"].as_str().context("an upload line")?;
        let upload = timed_sh(line, work.path())?;
        let last_byte = Instant::now();
        let handle = ticket["handle"].as_str().context("a handle")?;
        let ready = until_ready(&sluice.base, &sluice.token, handle, last_byte)?;
        delete_file(&sluice, ticket["file_id"].as_str().context("file_id")?)?;
        Ok((alone, upload, ready))
    })?;
    drop(clamd);
    let alone = median(rounds.iter().map(|r| r.0).collect());
    let upload = median(rounds.iter().map(|r| r.1).collect());
    let ready = median(rounds.iter().map(|r| r.2).collect());
    let ratio = median(rounds.iter().map(|r| r.2 / r.0).collect());
    Ok(format!(
        "## Malware scan: last byte to ready, {SIZE_MIB} MiB with clamd (local mode)\n\n\
         `target/fast/sluice-bench --only scan --runs {runs}`: Debian's clamd 1.4 on a Unix socket, loaded with \
         the test signatures alone (no real database is downloaded here: with the full databases clamd itself is \
         slower on every byte, the reference with it, so the ratio below is the one to read). Each round, clamd scans the payload alone (`INSTREAM` from the file, the `clamav-client` crate \
         sluice uses, the same 256 KiB frames): the reference. Then the payload goes up through `request_upload`'s \
         line, and `POST /resolve` is asked every 20 ms until it answers (409 while the file is scanning): the time \
         from the line's exit (its last byte stored) to that answer. The file is deleted before the next round. \
         Medians of {runs} rounds.\n\n\
         | step | seconds |\n|---|---|\n\
         | the upload (its line) | {upload:.2} |\n\
         | clamd alone on the same bytes (reference) | {alone:.2} |\n\
         | last byte to `ready` through sluice | {ready:.2} |\n\n\
         Last byte to ready / clamd alone: **{ratio:.2}** (what sluice adds: reading the object back from its \
         store into clamd's socket, its notes, and up to 20 ms of polling).\n\n"
    ))
}

/// Seconds from `since` until `POST /resolve` of `handle` answers 200.
fn until_ready(base: &str, token: &str, handle: &str, since: Instant) -> anyhow::Result<f64> {
    let deadline = since + Duration::from_secs(600);
    loop {
        let out = std::process::Command::new("curl")
            .args(["-sS", "-o", "/dev/null", "-w", "%{http_code}", "-H"])
            .arg(format!("Authorization: Bearer {token}"))
            .args(["-H", "Content-Type: application/json", "-d"])
            .arg(serde_json::json!({ "handle": handle }).to_string())
            .arg(format!("{base}/resolve"))
            .output()?;
        let code = String::from_utf8_lossy(&out.stdout).into_owned();
        match code.as_str() {
            "200" => return Ok(since.elapsed().as_secs_f64()),
            "409" => {}
            other => bail!("POST /resolve answered {other} while waiting for the scan"),
        }
        if Instant::now() > deadline {
            bail!("the file was not ready within 10 minutes");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}
