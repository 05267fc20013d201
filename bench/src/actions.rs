//! Memory and speed of an action with `data-uri` delivery: one large file,
//! streamed from the store into the upstream's request as a base64 data URI,
//! beside the same file sent as a plain download link (a reference that only
//! moves the bytes: read, hash, send), in the same sluice process.
//!
//! Peak RSS is read from `/proc/<pid>/status` (`VmHWM`) and reset between
//! the two by writing `5` to `/proc/<pid>/clear_refs`, so each growth is
//! measured from the same resting point.

use std::path::Path;
use std::process::Command;
use std::time::Instant;

use anyhow::{Context as _, bail};

use crate::Args;
use crate::kit::{make_file, memory_kib, post, start_refs, start_sluice_with, timed_curl};

/// One run: the reference download, then the action, each with the growth
/// of peak RSS over the resting RSS before it.
struct Run {
    download_secs: f64,
    download_growth_kib: u64,
    action_secs: f64,
    action_growth_kib: u64,
}

/// Resets the peak RSS of `pid` to its current RSS.
fn reset_peak(pid: u32) -> anyhow::Result<()> {
    std::fs::write(format!("/proc/{pid}/clear_refs"), "5")
        .context("resetting VmHWM through /proc/<pid>/clear_refs")
}

/// Calls `tool` with `arguments` over MCP; returns its result and the
/// seconds it took. A tool error is an error.
pub(crate) fn call_tool(
    base: &str,
    token: &str,
    tool: &str,
    arguments: serde_json::Value,
) -> anyhow::Result<(serde_json::Value, f64)> {
    let body = serde_json::json!({
        "jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": tool, "arguments": arguments},
    });
    let start = Instant::now();
    let out = Command::new("curl")
        .args([
            "-sS",
            "--fail-with-body",
            "-H",
            "Content-Type: application/json",
        ])
        .args(["-H", "Accept: application/json, text/event-stream"])
        .args(["-H", "MCP-Protocol-Version: 2025-11-25"])
        .arg("-H")
        .arg(format!("Authorization: Bearer {token}"))
        .arg("-d")
        .arg(body.to_string())
        .arg(format!("{base}/mcp"))
        .output()?;
    let secs = start.elapsed().as_secs_f64();
    let reply: serde_json::Value = serde_json::from_slice(&out.stdout)
        .with_context(|| format!("{tool}: {}", String::from_utf8_lossy(&out.stdout)))?;
    if reply["result"]["isError"] != false {
        bail!("{tool} failed: {reply}");
    }
    Ok((reply["result"].clone(), secs))
}

/// Calls `tool` with `arguments` over MCP; returns the seconds it took.
fn timed_tool(
    base: &str,
    token: &str,
    tool: &str,
    arguments: serde_json::Value,
) -> anyhow::Result<f64> {
    Ok(call_tool(base, token, tool, arguments)?.1)
}

pub fn run(args: &Args) -> anyhow::Result<String> {
    let size = args.action_size_mib << 20;
    let work = tempfile::tempdir()?;
    let file = work.path().join("payload.bin");
    eprintln!("actions: writing a {} MiB payload…", args.action_size_mib);
    let sha = make_file(&file, size)?;
    let (mut refs, discard, _) = start_refs(&file, size)?;
    let catalog = work.path().join("actions.toml");
    std::fs::write(
        &catalog,
        format!(
            "[[actions]]\nname = \"sink\"\ndescription = \"Takes a file.\"\n\
             url = \"http://{discard}/sink\"\ntimeout_secs = 600\n\
             [[actions.fields]]\nname = \"document\"\ntype = \"File\"\nrequired = true\n"
        ),
    )?;
    let max_bytes = (size + (1 << 20)).to_string();
    let sluice = start_sluice_with(
        &work.path().join("sluice"),
        &[
            (
                "SLUICE_ACTIONS_FILE",
                catalog.to_str().context("utf-8 path")?,
            ),
            ("SLUICE_ACTION_MAX_BYTES", &max_bytes),
        ],
    )?;
    let pid = sluice.process.id();
    let upload = |path: &Path, size: u64, sha: sluice::Sha256| -> anyhow::Result<String> {
        let ticket = post(
            &format!("{}/uploads", sluice.base),
            &sluice.token,
            &serde_json::json!({"filename": "payload.bin", "size": size, "sha256": sha}),
        )?;
        timed_curl(&[
            "-T",
            path.to_str().unwrap(),
            ticket["upload"]["url"].as_str().unwrap(),
        ])?;
        Ok(ticket["handle"].as_str().context("handle")?.to_owned())
    };
    let link = |handle: &str| -> anyhow::Result<String> {
        let ticket = post(
            &format!("{}/resolve", sluice.base),
            &sluice.token,
            &serde_json::json!({"handle": handle}),
        )?;
        Ok(ticket["download"]["url"]
            .as_str()
            .context("url")?
            .to_owned())
    };

    // Warm up both paths on a small file.
    let small = work.path().join("small.bin");
    let small_sha = make_file(&small, 64 * 1024)?;
    let small_handle = upload(&small, 64 * 1024, small_sha)?;
    timed_curl(&[&link(&small_handle)?])?;
    timed_tool(
        &sluice.base,
        &sluice.token,
        "action_sink",
        serde_json::json!({"document": small_handle}),
    )?;
    let handle = upload(&file, size, sha)?;

    let mut rows = Vec::new();
    for run in 0..args.runs {
        eprintln!("actions: run {} of {}…", run + 1, args.runs);
        reset_peak(pid)?;
        let (_, rest) = memory_kib(pid)?;
        let download = timed_curl(&[&link(&handle)?])?;
        let (peak_download, _) = memory_kib(pid)?;
        reset_peak(pid)?;
        let (_, rest_action) = memory_kib(pid)?;
        let action = timed_tool(
            &sluice.base,
            &sluice.token,
            "action_sink",
            serde_json::json!({"document": handle}),
        )?;
        let (peak_action, _) = memory_kib(pid)?;
        rows.push(Run {
            download_secs: download,
            download_growth_kib: peak_download.saturating_sub(rest),
            action_secs: action,
            action_growth_kib: peak_action.saturating_sub(rest_action),
        });
    }
    let _ = refs.kill();
    let _ = refs.wait();

    let mib = args.action_size_mib as f64;
    let median = |f: fn(&Run) -> f64| crate::harness::median(rows.iter().map(f).collect());
    let down_rate = mib / median(|r| r.download_secs);
    let action_rate = mib / median(|r| r.action_secs);
    let down_growth = median(|r| r.download_growth_kib as f64) / 1024.0;
    let action_growth = median(|r| r.action_growth_kib as f64) / 1024.0;
    let worst_action_growth =
        rows.iter().map(|r| r.action_growth_kib).max().unwrap_or(0) as f64 / 1024.0;
    let verdict = if worst_action_growth <= 32.0 {
        "met"
    } else {
        "**missed**"
    };

    use std::fmt::Write as _;
    let mut out = String::new();
    writeln!(
        out,
        "## Actions: a {} MiB file through `data-uri` delivery (local mode)\n",
        args.action_size_mib
    )?;
    writeln!(
        out,
        "`target/fast/sluice-bench --only actions --action-size-mib {} --runs {}`: one sluice process; \
         the file is sent (1) as a plain download link, the reference that only moves the bytes \
         (read, hash, send), and (2) through `tools/call action_sink`, whose upstream (the discard \
         server's `/sink`) receives it as a base64 data URI inside the JSON body. Peak RSS (`VmHWM`) \
         is reset before each and its growth over the resting RSS read after; medians of {} runs.\n",
        args.action_size_mib, args.runs, args.runs
    )?;
    writeln!(out, "| path | MiB/s | peak RSS growth |")?;
    writeln!(out, "|---|---|---|")?;
    writeln!(
        out,
        "| download link (reference) | {down_rate:.0} | {down_growth:.1} MiB |"
    )?;
    writeln!(
        out,
        "| action, data-uri delivery | {action_rate:.0} | {action_growth:.1} MiB |"
    )?;
    writeln!(
        out,
        "\nAction / reference: speed **{:.2}** (the action also base64-encodes, a third more bytes on the wire), \
         memory growth **{:.2}**; largest growth of any action run {worst_action_growth:.1} MiB \
         (target ≤ 32 MiB: {verdict}).\n",
        action_rate / down_rate,
        if down_growth > 0.0 {
            action_growth / down_growth
        } else {
            f64::NAN
        },
    )?;
    Ok(out)
}
