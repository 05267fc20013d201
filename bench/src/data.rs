//! The data plane: one file up and down through sluice beside the
//! reference servers, as ratios, and the server's memory.

use std::path::Path;

use anyhow::Context as _;

use crate::Args;
use crate::harness::{self, median};
use crate::kit::{make_file, memory_kib, post, sluice_bin, start_refs, start_sluice, timed_curl};

pub(crate) fn run(args: &Args) -> anyhow::Result<String> {
    let size = args.size_mib << 20;
    let work = tempfile::tempdir()?;
    let file = work.path().join("payload.bin");
    eprintln!("writing a {} MiB payload…", args.size_mib);
    let sha = make_file(&file, size)?;
    let file_arg = file.to_str().context("utf-8 path")?.to_owned();

    let (mut refs_child, discard, reference) = start_refs(&file, size)?;
    let sluice = start_sluice(&work.path().join("sluice"))?;
    let pid = sluice.process.id();

    // Warm up sluice with a small round trip, then take its resting RSS.
    let small = work.path().join("small.bin");
    let small_sha = make_file(&small, 4096)?;
    let ticket = post(
        &format!("{}/uploads", sluice.base),
        &sluice.token,
        &serde_json::json!({"filename": "small.bin", "size": 4096, "sha256": small_sha}),
    )?;
    timed_curl(&[
        "-T",
        small.to_str().unwrap(),
        ticket["upload"]["url"].as_str().unwrap(),
    ])?;
    let (_, rss_before) = memory_kib(pid)?;

    // One round: each direction to discard, to hash+file and to sluice, in
    // seconds.
    let runs = harness::rounds(args.runs, "data plane", |_| {
        let d = format!("http://{discard}/object");
        let r = format!("http://{reference}/object");
        let mut up = [0.0; 3];
        up[0] = timed_curl(&["-T", &file_arg, &d])?;
        up[1] = timed_curl(&["-T", &file_arg, &r])?;
        let ticket = post(
            &format!("{}/uploads", sluice.base),
            &sluice.token,
            &serde_json::json!({"filename": "payload.bin", "size": size, "sha256": sha}),
        )?;
        up[2] = timed_curl(&["-T", &file_arg, ticket["upload"]["url"].as_str().unwrap()])?;
        let mut down = [0.0; 3];
        down[0] = timed_curl(&[&d])?;
        down[1] = timed_curl(&[&r])?;
        let link = post(
            &format!("{}/resolve", sluice.base),
            &sluice.token,
            &serde_json::json!({"handle": ticket["handle"]}),
        )?;
        down[2] = timed_curl(&[link["download"]["url"].as_str().unwrap()])?;
        Ok((up, down))
    })?;
    // Each direction's seconds by reference: discard, hash+file, sluice.
    type Round = ([f64; 3], [f64; 3]);
    let column = |pick: fn(&Round) -> [f64; 3]| -> [Vec<f64>; 3] {
        [0, 1, 2].map(|i| runs.iter().map(|r| pick(r)[i]).collect())
    };
    let (up, down) = (column(|r| r.0), column(|r| r.1));
    let (peak, _) = memory_kib(pid)?;
    let _ = refs_child.kill();
    let _ = refs_child.wait();

    let mib = args.size_mib as f64;
    let rate = |secs: &Vec<f64>| mib / median(secs.clone());
    let [ud, ur, us] = up.each_ref().map(rate);
    let [dd, dr, ds] = down.each_ref().map(rate);
    // The disk's speed changes from one transfer to the next (writeback):
    // each sluice transfer is compared with the reference run beside it,
    // and the ratio is the median of those pairs.
    let paired = |times: &[Vec<f64>; 3]| {
        median(
            times[1]
                .iter()
                .zip(&times[2])
                .map(|(reference, ours)| harness::rate_ratio(*ours, *reference))
                .collect(),
        )
    };
    let (up_ratio, down_ratio) = (paired(&up), paired(&down));
    let growth_mib = (peak.saturating_sub(rss_before)) as f64 / 1024.0;
    let verdict = |ok: bool| if ok { "met" } else { "**missed**" };

    let mut out = String::new();
    use std::fmt::Write as _;
    let server = sluice_bin()?;
    let build = server
        .parent()
        .and_then(Path::file_name)
        .map(|d| d.to_string_lossy().into_owned())
        .unwrap_or_default();
    let which = if build == "fast" {
        String::new()
    } else {
        format!(
            ", the {build} build of the server (`SLUICE_BENCH_SERVER={}`)",
            server.display()
        )
    };
    writeln!(
        out,
        "## Data plane: {} MiB upload and download (local mode{which})\n",
        args.size_mib
    )?;
    writeln!(
        out,
        "`make bench` (`target/fast/sluice-bench --size-mib {} --runs {}`), {} cores; \
         median of {} runs, MiB/s as seen by curl on loopback; the ratio is the median, over the runs, \
         of sluice beside the reference transfer of the same run (the disk's speed changes between \
         transfers, so medians taken apart can compare different disk states). References run in the same process \
         and the same run: **discard** only moves the bytes over HTTP (the loopback ceiling); \
         **hash+file** does the unavoidable work (sha256 of every byte, and writing + fsync / reading a file). \
         Dirty pages are flushed before each transfer; on this machine the disk's write speed bounds both \
         hash+file and sluice uploads.\n",
        args.size_mib,
        args.runs,
        std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(0),
        args.runs
    )?;
    writeln!(
        out,
        "| direction | discard | hash+file | sluice | sluice / hash+file | target |"
    )?;
    writeln!(out, "|---|---|---|---|---|---|")?;
    writeln!(
        out,
        "| upload (PUT) | {ud:.0} | {ur:.0} | {us:.0} | {up_ratio:.2} | ≥ 0.85: {} |",
        verdict(up_ratio >= 0.85)
    )?;
    writeln!(
        out,
        "| download (GET) | {dd:.0} | {dr:.0} | {ds:.0} | {down_ratio:.2} | ≥ 0.85: {} |",
        verdict(down_ratio >= 0.85)
    )?;
    writeln!(
        out,
        "\nsluice peak RSS {:.1} MiB, {:.1} MiB at rest before the transfers: growth **{growth_mib:.1} MiB** \
         while moving {} MiB files (target ≤ 32 MiB: {}).",
        peak as f64 / 1024.0,
        rss_before as f64 / 1024.0,
        args.size_mib,
        verdict(growth_mib <= 32.0)
    )?;
    Ok(out)
}
