//! Many files in one call and one line (`request_uploads`,
//! `get_download_urls`) beside the same files one call and one line each
//! (`request_upload`, `get_download_url`), as a model moves a folder: 1,000
//! small files, and 20 large ones (in parts), up and down, on one server,
//! the two ways interleaved per set. Each way is a user of its own, so no
//! file is found stored already: both send every byte.

use std::path::Path;
use std::process::Command;
use std::time::Instant;

use anyhow::{Context as _, bail};

use crate::actions::call_tool;
use crate::kit::start_sluice_with;

/// Runs `line` in `dir`; fails if it fails.
fn run_line(line: &str, dir: &Path) -> anyhow::Result<()> {
    let out = Command::new("sh")
        .args(["-c", line])
        .current_dir(dir)
        .output()?;
    if !out.status.success() {
        bail!("{line}: {}", String::from_utf8_lossy(&out.stderr));
    }
    Ok(())
}

/// The text of a tool result: what the model reads of it.
fn text_len(result: &serde_json::Value) -> usize {
    result["content"].as_array().map_or(0, |c| {
        c.iter()
            .filter_map(|b| b["text"].as_str())
            .map(str::len)
            .sum()
    })
}

/// One way of moving a set: seconds up, seconds down, tool calls, and the
/// bytes of answer text the model read.
struct Moved {
    up: f64,
    down: f64,
    calls: usize,
    read: usize,
}

/// `files` (name, size, sha256) in `src`, up and back down into `dst`, one
/// call and one line each.
fn one_each(
    base: &str,
    token: &str,
    files: &[(String, u64, String)],
    src: &Path,
    dst: &Path,
) -> anyhow::Result<Moved> {
    let (mut read, mut handles) = (0, Vec::new());
    let start = Instant::now();
    for (name, size, sha) in files {
        let (result, _) = call_tool(
            base,
            token,
            "request_upload",
            serde_json::json!({"filename": name, "size": size, "sha256": sha}),
        )?;
        read += text_len(&result);
        let ticket = &result["structuredContent"];
        run_line(ticket["command"].as_str().context("command")?, src)?;
        handles.push(ticket["handle"].as_str().context("handle")?.to_owned());
    }
    let up = start.elapsed().as_secs_f64();
    let start = Instant::now();
    for handle in &handles {
        let (result, _) = call_tool(
            base,
            token,
            "get_download_url",
            serde_json::json!({"file": handle}),
        )?;
        read += text_len(&result);
        run_line(
            result["structuredContent"]["command"]
                .as_str()
                .context("command")?,
            dst,
        )?;
    }
    Ok(Moved {
        up,
        down: start.elapsed().as_secs_f64(),
        calls: 2 * files.len(),
        read,
    })
}

/// The same with one call and one line each way.
fn batched(
    base: &str,
    token: &str,
    files: &[(String, u64, String)],
    src: &Path,
    dst: &Path,
) -> anyhow::Result<Moved> {
    let entries: Vec<serde_json::Value> = files
        .iter()
        .map(|(name, size, sha)| serde_json::json!({"path": name, "size": size, "sha256": sha}))
        .collect();
    let start = Instant::now();
    let (result, _) = call_tool(
        base,
        token,
        "request_uploads",
        serde_json::json!({"files": entries}),
    )?;
    let mut read = text_len(&result);
    let batch = &result["structuredContent"];
    run_line(batch["command"].as_str().context("command")?, src)?;
    let up = start.elapsed().as_secs_f64();
    let start = Instant::now();
    let (result, _) = call_tool(
        base,
        token,
        "get_download_urls",
        serde_json::json!({"files": [batch["handle"]]}),
    )?;
    read += text_len(&result);
    run_line(
        result["structuredContent"]["command"]
            .as_str()
            .context("command")?,
        dst,
    )?;
    Ok(Moved {
        up,
        down: start.elapsed().as_secs_f64(),
        calls: 2,
        read,
    })
}

/// Writes `n` files of `size(i)` bytes into `dir`: (name, size, sha256).
fn write_set(
    dir: &Path,
    n: usize,
    size: impl Fn(usize) -> usize,
    seed: u64,
) -> anyhow::Result<Vec<(String, u64, String)>> {
    std::fs::create_dir_all(dir)?;
    (0..n)
        .map(|i| {
            let name = format!("f{i:04}.bin");
            let data = sluice_testkit::bytes(size(i), seed + i as u64);
            std::fs::write(dir.join(&name), &data)?;
            Ok((name, data.len() as u64, sluice::Sha256::of(&data).to_hex()))
        })
        .collect()
}

pub fn run() -> anyhow::Result<String> {
    let work = tempfile::tempdir()?;
    let sluice = start_sluice_with(&work.path().join("data"), &[])?;
    let mut rows = String::new();
    for (label, n, size) in [
        ("1,000 small files (1–16 KiB)", 1000, 1usize << 10),
        ("20 large files (70 MiB each, in parts)", 20, 70 << 20),
    ] {
        eprintln!("batch: {label}…");
        let src = work.path().join("src");
        let files = write_set(
            &src,
            n,
            |i| {
                if n > 20 {
                    size + (i * 977) % (15 << 10)
                } else {
                    size
                }
            },
            7,
        )?;
        let mut results = Vec::new();
        for (way, user) in [("batched", "batch-user"), ("one each", "single-user")] {
            let token = sluice.token_for(user)?;
            let dst = work.path().join(format!("dst-{user}"));
            std::fs::create_dir_all(&dst)?;
            let moved = match way {
                "batched" => batched(&sluice.base, &token, &files, &src, &dst)?,
                _ => one_each(&sluice.base, &token, &files, &src, &dst)?,
            };
            // Every file came back whole.
            for (name, _, sha) in &files {
                let back = std::fs::read(dst.join(name)).with_context(|| name.clone())?;
                anyhow::ensure!(sluice::Sha256::of(&back).to_hex() == *sha, "{name} differs");
            }
            std::fs::remove_dir_all(&dst)?;
            results.push(moved);
        }
        std::fs::remove_dir_all(&src)?;
        let (b, o) = (&results[0], &results[1]);
        rows.push_str(&format!(
            "| {label} | {} calls, {:.1} s up, {:.1} s down, {} B read | {} calls, {:.1} s up, {:.1} s down, {} B read | {:.1}× | {:.1}× | {:.0}× less |\n",
            o.calls, o.up, o.down, o.read, b.calls, b.up, b.down, b.read,
            o.up / b.up, o.down / b.down, o.read as f64 / b.read.max(1) as f64,
        ));
    }
    let server = crate::kit::sluice_bin()?;
    Ok(format!(
        "## Many files: one call and one line beside one each\n\n\
         `target/fast/sluice-bench --only batch` (server: `{}`, local mode): the same files up and back down, \
         byte for byte, by a user calling `request_uploads` and `get_download_urls` once each and running each \
         returned line once, beside another user calling `request_upload` and `get_download_url` for each file \
         and running each line (as a model without the batch tools does); tool calls through MCP from `curl`, \
         lines run by `sh`, one after another. \"Read\" is the bytes of answer text the model reads.\n\n\
         | set | one call each | one call and one line | faster up | faster down | text read |\n\
         |---|---|---|---|---|---|\n{rows}\n",
        server.display(),
    ))
}
