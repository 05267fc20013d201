//! sluice beside a peer doing the same job: a 1 GiB upload through
//! `request_upload`'s own line (locally one resumable stream)
//! and through mcp-upload 1.1.2's documented path (a ticket, then
//! `curl -F file=@FILE`, streamed to its filesystem sink), both declaring
//! the file's size and SHA-256 and both writing and syncing it to disk;
//! rounds interleaved, and each server's peak RSS growth while moving it.

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Instant;

use anyhow::Context as _;

use crate::harness::{median, rate_ratio, rounds};
use crate::kit::{make_file, memory_kib, post, start_sluice_with, timed_sh};

/// The peer's venv, made by `make bench` (`bench/peer/requirements.txt`).
const PEER_PYTHON: &str = ".venv-peer/bin/python";

/// The peer server (`bench/peer/server.py`) on `port`, writing into `dir`.
fn start_peer(port: u16, dir: &Path) -> anyhow::Result<Child> {
    let root = sluice_testkit::root();
    let python = root.join(PEER_PYTHON);
    anyhow::ensure!(
        python.exists(),
        "{} is missing: `make bench` makes it",
        python.display()
    );
    let child = Command::new(python)
        .arg(root.join("bench/peer/server.py"))
        .arg(port.to_string())
        .arg(dir)
        .stdout(Stdio::null())
        .spawn()?;
    let deadline = Instant::now() + std::time::Duration::from_secs(30);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        anyhow::ensure!(Instant::now() < deadline, "the peer did not start");
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    Ok(child)
}

/// Resets a process's peak RSS, so that the next reading is this round's.
fn reset_peak(pid: u32) -> anyhow::Result<()> {
    std::fs::write(format!("/proc/{pid}/clear_refs"), "5").context("resetting VmHWM")
}

pub fn run(runs: usize) -> anyhow::Result<String> {
    let size: u64 = 1 << 30;
    let work = tempfile::tempdir()?;
    let up = work.path().join("up");
    std::fs::create_dir_all(&up)?;
    let file = up.join("payload.bin");
    eprintln!("peer: writing a 1 GiB file…");
    let sha = make_file(&file, size)?;
    let sluice = start_sluice_with(&work.path().join("sluice"), &[])?;
    let peer_dir = work.path().join("peer");
    std::fs::create_dir_all(&peer_dir)?;
    let port = std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port();
    let mut peer = start_peer(port, &peer_dir)?;
    // SEP-2631's digest: base64url without padding.
    let digest = sha.to_base64url();
    let growth = |pid: u32| -> anyhow::Result<f64> {
        let (peak, _) = memory_kib(pid)?;
        Ok(peak as f64 / 1024.0)
    };
    let mut ours_stored = crate::kit::LastStored::default();
    let results = rounds(runs, "peer: 1 GiB", |_| {
        // sluice: request_upload's line, where the file is.
        let (_, rest) = memory_kib(sluice.process.id())?;
        reset_peak(sluice.process.id())?;
        let ticket = post(
            &format!("{}/uploads", sluice.base),
            &sluice.token,
            &serde_json::json!({"filename": "payload.bin", "size": size, "sha256": sha}),
        )?;
        ours_stored.replace(&sluice, &ticket)?;
        let ours = timed_sh(ticket["command"].as_str().context("command")?, &up)?;
        let ours_rss = growth(sluice.process.id())? - rest as f64 / 1024.0;
        // The peer: a ticket, then its documented curl line.
        let (_, rest) = memory_kib(peer.id())?;
        reset_peak(peer.id())?;
        let issued: serde_json::Value = serde_json::from_slice(
            &Command::new("curl")
                .args([
                    "-sS",
                    "--fail",
                    "-H",
                    "Content-Type: application/json",
                    "-d",
                ])
                .arg(serde_json::json!({"size": size, "digest": digest}).to_string())
                .arg(format!("http://127.0.0.1:{port}/issue"))
                .output()?
                .stdout,
        )?;
        let url = issued["upload"]["url"].as_str().context("peer url")?;
        // The peer's last file goes too, as sluice's did.
        for entry in std::fs::read_dir(&peer_dir)? {
            let path = entry?.path();
            if path.is_dir() {
                std::fs::remove_dir_all(path)?;
            } else {
                std::fs::remove_file(path)?;
            }
        }
        let theirs = timed_sh(
            &format!("curl -sS --fail -o /dev/null -F file=@payload.bin '{url}'"),
            &up,
        )?;
        let theirs_rss = growth(peer.id())? - rest as f64 / 1024.0;
        eprintln!("  sluice {ours:.2} s, the peer {theirs:.2} s");
        Ok((ours, theirs, ours_rss, theirs_rss))
    })?;
    let _ = peer.kill();
    let _ = peer.wait();
    let mib = (size >> 20) as f64;
    let ours = median(results.iter().map(|r| r.0).collect());
    let theirs = median(results.iter().map(|r| r.1).collect());
    let ratio = median(results.iter().map(|r| rate_ratio(r.0, r.1)).collect());
    let ours_rss = median(results.iter().map(|r| r.2).collect());
    let theirs_rss = median(results.iter().map(|r| r.3).collect());
    let server = crate::kit::sluice_bin()?;
    let verdict = |ok: bool| if ok { "met" } else { "**missed**" };
    Ok(format!(
        "## Beside a peer: a 1 GiB upload, sluice and mcp-upload 1.1.2\n\n\
         `target/fast/sluice-bench --only peer --runs {runs}` (server: `{}`): the same 1 GiB file, declared \
         (size and SHA-256) and written and synced to disk by each, {runs} interleaved rounds, medians. \
         **sluice**: `POST /uploads` (what `request_upload` does), then its `command` line where the file is \
         (locally one resumable tus stream, so that a rerun resumes). **mcp-upload 1.1.2** \
         (`bench/peer/`, on uvicorn with httptools and uvloop): a ticket for its filesystem sink, then its \
         documented `curl -F file=@payload.bin <url>`. Each server's last file is deleted just before \
         its next upload (sluice's by `DELETE /files/{{id}}`), so that each writes into page cache just freed. Peak RSS growth is each server's `VmHWM` over its \
         resting RSS, reset before each upload.\n\n\
         | | MiB/s | peak RSS growth |\n|---|---|---|\n\
         | sluice, the returned line | {:.0} | {ours_rss:.1} MiB |\n\
         | mcp-upload 1.1.2, curl -F | {:.0} | {theirs_rss:.1} MiB |\n\n\
         sluice / peer: **{ratio:.2}×** (target ≥ 1.5×: {}); sluice's RSS growth {ours_rss:.1} MiB \
         (target ≤ 32 MiB: {}).\n\n",
        server.display(),
        mib / ours,
        mib / theirs,
        verdict(ratio >= 1.5),
        verdict(ours_rss <= 32.0),
    ))
}
