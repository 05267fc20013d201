//! Files of any size: one real file over 5 GiB uploaded through the line
//! `request_upload` returns (locally one resumable stream, on S3 (s3s-fs)
//! in parts) and downloaded through `get_download_url`'s, beside the same
//! file in one PUT and beside hash+file; what a resume after an
//! interruption at half-way sends again; the local server's peak RSS
//! growth; the line beside one PUT, interleaved; and a resume across a
//! restart, by the server's CPU.

use std::path::Path;
use std::process::Command;
use std::time::Instant;

use anyhow::{Context as _, bail};

use crate::kit::{Sluice, make_file, memory_kib, post, start_refs, start_sluice_with, timed_curl};

/// Runs `line` in `dir` (`sh -c`), with a `curl` first on the PATH that
/// counts the parts it sends and, with `fail_from`, drops the connection
/// (exit 56) of every part from that one on; returns the seconds it took, whether it succeeded, and
/// the parts sent.
fn run_line(
    line: &str,
    dir: &Path,
    fail_from: Option<usize>,
) -> anyhow::Result<(f64, bool, usize)> {
    let path = sluice_testkit::counting_curl(dir, fail_from)?;
    Command::new("sync").status()?;
    let start = Instant::now();
    let out = Command::new("sh")
        .args(["-c", line])
        .current_dir(dir)
        .env("PATH", path)
        .output()?;
    let secs = start.elapsed().as_secs_f64();
    let sent = sluice_testkit::parts_sent(dir);
    if fail_from.is_none() && !out.status.success() {
        bail!("{line}: {}", String::from_utf8_lossy(&out.stderr));
    }
    Ok((secs, out.status.success(), sent))
}

/// Sends the first half of `file` (of `size` bytes) to the resumable
/// upload `link` and stops, as a client cut off there.
pub(crate) fn send_first_half(link: &str, file: &Path, size: u64) -> anyhow::Result<()> {
    let half = size / 2;
    let sent = Command::new("sh")
        .args([
            "-c",
            "head -c \"$1\" \"$2\" | curl -fsS -X PATCH -H 'Tus-Resumable: 1.0.0' \
             -H 'Content-Type: application/offset+octet-stream' -H 'Upload-Offset: 0' \
             -H \"Content-Length: $1\" -T - \"$3\"",
            "half",
            &half.to_string(),
            file.to_str().context("utf-8 path")?,
            link,
        ])
        .output()?;
    anyhow::ensure!(
        sent.status.success(),
        "the first half: {}",
        String::from_utf8_lossy(&sent.stderr)
    );
    anyhow::ensure!(stream_offset(link)? == half, "the first half kept");
    Ok(())
}

/// Where the resumable upload `link` stands (`HEAD`'s `Upload-Offset`).
pub(crate) fn stream_offset(link: &str) -> anyhow::Result<u64> {
    let out = Command::new("curl")
        .args(["-fsSI", "-H", "Tus-Resumable: 1.0.0", link])
        .output()?;
    let head = String::from_utf8(out.stdout)?;
    head.lines()
        .find_map(|l| {
            l.to_ascii_lowercase()
                .strip_prefix("upload-offset:")
                .map(|v| v.trim().to_owned())
        })
        .context("no Upload-Offset")?
        .parse()
        .context("Upload-Offset")
}

/// One backend's figures.
struct Figures {
    parts_up: f64,
    single_up: Option<f64>,
    down: f64,
    resent_mib: f64,
    parts: usize,
    part_mib: u64,
    down_resumed_mib: f64,
    rss_growth_mib: Option<f64>,
}

fn issue(
    sluice: &Sluice,
    token: &str,
    size: u64,
    sha: &sluice::Sha256,
) -> anyhow::Result<serde_json::Value> {
    post(
        &format!("{}/uploads", sluice.base),
        token,
        &serde_json::json!({"filename": "payload.bin", "size": size, "sha256": sha}),
    )
}

fn measure(
    sluice: &Sluice,
    token: &str,
    work: &Path,
    file: &Path,
    size: u64,
    sha: &sluice::Sha256,
    local: bool,
) -> anyhow::Result<Figures> {
    let pid = sluice.process.id();
    let (_, rss_before) = memory_kib(pid)?;
    let up_dir = work.join("up");
    std::fs::create_dir_all(&up_dir)?;
    let payload = up_dir.join("payload.bin");
    std::fs::rename(file, &payload)?;
    let result = (|| {
        // In parts, through the one line.
        let ticket = issue(sluice, token, size, sha)?;
        let line = ticket["command"].as_str().context("command")?.to_owned();
        eprintln!("parts: uploading in parts…");
        let (parts_secs, _, parts) = run_line(&line, &up_dir, None)?;
        let handle = ticket["handle"].clone();

        // Interrupted at half-way, then the same line again: in parts, the
        // connection dropped from the part after half on; as one stream,
        // the first half sent and the client gone.
        let ticket2 = issue(sluice, token, size, sha)?;
        let line2 = ticket2["command"].as_str().context("command")?.to_owned();
        eprintln!("parts: interrupted at half-way, then resumed…");
        let resent_mib = if local {
            let link = ticket2["upload"]["url"].as_str().context("url")?;
            send_first_half(link, &payload, size)?;
            let before = stream_offset(link)?;
            run_line(&line2, &up_dir, None)?;
            (size - before) as f64 / f64::from(1 << 20)
        } else {
            let (_, ok, _) = run_line(&line2, &up_dir, Some(parts / 2 + 1))?;
            anyhow::ensure!(!ok, "the interrupted run failed");
            let (_, _, resent) = run_line(&line2, &up_dir, None)?;
            let part = sluice::multipart::Plan::new(size, 64 << 20).part_size;
            (resent as u64 * part) as f64 / f64::from(1 << 20)
        };

        // The same file in one PUT (local: sluice's link takes any size).
        let single_up = if local {
            let ticket = issue(sluice, token, size, sha)?;
            let url = ticket["upload"]["url"].as_str().context("url")?;
            eprintln!("parts: the same file in one PUT…");
            Some(timed_curl(&["-T", payload.to_str().context("path")?, url])?)
        } else {
            None
        };

        // Download through the line, then resumed from half-way.
        let down_dir = work.join("down");
        std::fs::create_dir_all(&down_dir)?;
        let link = post(
            &format!("{}/resolve", sluice.base),
            token,
            &serde_json::json!({"handle": handle}),
        )?;
        eprintln!("parts: downloading…");
        let (down_secs, _, _) = run_line(
            link["command"].as_str().context("command")?,
            &down_dir,
            None,
        )?;
        let saved = down_dir.join("payload.bin");
        let half = size / 2;
        std::fs::rename(&saved, down_dir.join("payload.bin.part"))?;
        std::fs::OpenOptions::new()
            .write(true)
            .open(down_dir.join("payload.bin.part"))?
            .set_len(half)?;
        let link = post(
            &format!("{}/resolve", sluice.base),
            token,
            &serde_json::json!({"handle": handle}),
        )?;
        run_line(
            link["command"].as_str().context("command")?,
            &down_dir,
            None,
        )?;
        anyhow::ensure!(
            std::fs::metadata(&saved)?.len() == size,
            "the resumed download is whole"
        );
        std::fs::remove_file(&saved)?;
        let (peak, _) = memory_kib(pid)?;
        // The default plan (SLUICE_PART_BYTES, 64 MiB).
        let part_mib = sluice::multipart::Plan::new(size, 64 << 20).part_size >> 20;
        Ok(Figures {
            parts_up: parts_secs,
            single_up,
            down: down_secs,
            resent_mib,
            parts,
            part_mib,
            down_resumed_mib: (size - half) as f64 / f64::from(1 << 20),
            rss_growth_mib: local.then(|| peak.saturating_sub(rss_before) as f64 / 1024.0),
        })
    })();
    std::fs::rename(&payload, file)?;
    result
}

/// Runs the section; `size_mib` is the file's size.
pub fn run(size_mib: u64) -> anyhow::Result<String> {
    let size = size_mib << 20;
    let work = tempfile::tempdir()?;
    let file = work.path().join("payload.bin");
    eprintln!("parts: writing a {size_mib} MiB file…");
    let sha = make_file(&file, size)?;
    let file_arg = file.to_str().context("utf-8 path")?.to_owned();

    // hash+file: the unavoidable work of a verifying store, one PUT.
    let (mut refs, _discard, reference) = start_refs(&work.path().join("ref.bin"), size)?;
    Command::new("sync").status()?;
    let hash_file = timed_curl(&["-T", &file_arg, &format!("http://{reference}/object")])?;
    let _ = std::fs::remove_file(work.path().join("ref.bin"));
    let _ = refs.kill();
    let _ = refs.wait();

    let local = {
        let sluice = start_sluice_with(&work.path().join("sluice"), &[])?;
        let token = sluice.token.clone();
        let f = measure(&sluice, &token, work.path(), &file, size, &sha, true)?;
        drop(sluice);
        let _ = std::fs::remove_dir_all(work.path().join("sluice"));
        f
    };
    let s3 = {
        let emulators = sluice_testkit::emulators::Emulators::start();
        let rt = tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()?;
        rt.block_on(emulators.provision("parts"));
        let env = emulators.env("parts");
        let vars: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
        let sluice = start_sluice_with(&work.path().join("sluice-aws"), &vars)?;
        let token = sluice.token.clone();
        measure(&sluice, &token, work.path(), &file, size, &sha, false)?
    };

    let mib = size_mib as f64;
    let mut out = String::new();
    use std::fmt::Write as _;
    writeln!(
        out,
        "## Files of any size: one {size_mib} MiB file ({:.2} GiB), locally (one resumable stream) and on S3 (s3s-fs, in parts)\n",
        mib / 1024.0
    )?;
    writeln!(
        out,
        "`target/fast/sluice-bench --only parts --parts-size-mib {size_mib}`: the file is uploaded by running the \
         `command` line `request_upload` returns: locally one resumable tus stream (`HEAD`, then one `PATCH` from the offset, \
         hashed once by sluice as it arrives); on S3 in parts (default settings: parts of {} MiB, {} of them; the script sends four parts at \
         once, each hashed (`openssl`, else `sha256sum`), its URL asked for, and streamed there, and completes, which proves the whole file's SHA-256, \
         read after the join), downloaded by running `get_download_url`'s line (which checks the SHA-256 itself), \
         beside **hash+file** (one PUT to a server that hashes every byte and writes and syncs a file: the \
         unavoidable work) and, locally, the same file in one PUT to sluice's link. One run each (a 5 GiB \
         transfer is long enough to average the disk's swings, not the machine's other load); MiB/s as seen from the line's start to its end.\n",
        s3.part_mib, s3.parts
    )?;
    writeln!(out, "| | local | S3 (s3s-fs) |")?;
    writeln!(out, "|---|---|---|")?;
    writeln!(
        out,
        "| hash+file, one PUT | {:.0} MiB/s | (same reference) |",
        mib / hash_file
    )?;
    writeln!(
        out,
        "| upload (the line: one stream locally, parts on S3) | {:.0} MiB/s ({:.2} of hash+file) | {:.0} MiB/s ({:.2} of hash+file) |",
        mib / local.parts_up,
        hash_file / local.parts_up,
        mib / s3.parts_up,
        hash_file / s3.parts_up
    )?;
    if let Some(single) = local.single_up {
        writeln!(
            out,
            "| the same file in one PUT to sluice | {:.0} MiB/s (the line: {:.2} of it) | S3 takes at most 5 GiB in one PUT |",
            mib / single,
            single / local.parts_up
        )?;
    }
    writeln!(
        out,
        "| interrupted at half-way, the same line again sends | {:.0} MiB (from where the stream stood) | {:.0} MiB ({} parts of {}) |",
        local.resent_mib, s3.resent_mib, s3.parts, s3.part_mib
    )?;
    writeln!(
        out,
        "| download (the line: curl, then sha256sum) | {:.0} MiB/s | {:.0} MiB/s |",
        mib / local.down,
        mib / s3.down
    )?;
    writeln!(
        out,
        "| a download resumed from half-way fetches | {:.0} MiB | {:.0} MiB |",
        local.down_resumed_mib, s3.down_resumed_mib
    )?;
    if let Some(growth) = local.rss_growth_mib {
        writeln!(
            out,
            "\nThe local server's peak RSS grew by **{growth:.1} MiB** over all of it (each byte hashed once as it arrived, \
             with the hash state checkpointed beside the stream: constant in the file's size). On S3 the bytes never pass through \
             sluice but for the proof's one read (streamed)."
        )?;
    }
    Ok(out)
}

/// The line beside one PUT, interleaved: `runs` rounds, each of hash+file
/// (one PUT), the same file in one PUT to sluice's link and the same file
/// through `request_upload`'s line (locally one resumable stream); the
/// ratios are the medians of each round's, so that the disk's swings
/// between rounds (this machine's writeback) cancel out.
pub fn versus_one_put(size_mib: u64, runs: usize) -> anyhow::Result<String> {
    use crate::harness::{Whose, cpu_seconds, median, rate_ratio, rounds};
    let size = size_mib << 20;
    let work = tempfile::tempdir()?;
    let up_dir = work.path().join("up");
    std::fs::create_dir_all(&up_dir)?;
    let file = up_dir.join("payload.bin");
    eprintln!("the line beside one PUT: writing a {size_mib} MiB file…");
    let sha = make_file(&file, size)?;
    let file_arg = file.to_str().context("utf-8 path")?.to_owned();
    let (mut refs, _discard, reference) = start_refs(&work.path().join("ref.bin"), size)?;
    let sluice = start_sluice_with(&work.path().join("sluice"), &[])?;
    let (server, bench) = (sluice.process.id(), std::process::id());
    let token = sluice.token.clone();
    let mut stored = crate::kit::LastStored::default();
    // A transfer's seconds, and the CPU seconds its client (the commands
    // this process ran and waited for) and the server spent on it.
    let accounted = |transfer: &mut dyn FnMut() -> anyhow::Result<f64>| -> anyhow::Result<Spent> {
        let (client, server_before) = (
            cpu_seconds(bench, Whose::WaitedChildren)?,
            cpu_seconds(server, Whose::Own)?,
        );
        let secs = transfer()?;
        Ok(Spent {
            secs,
            client: cpu_seconds(bench, Whose::WaitedChildren)? - client,
            server: cpu_seconds(server, Whose::Own)? - server_before,
        })
    };
    let results = rounds(runs, "the line beside one PUT", |_| {
        let hash_file = timed_curl(&["-T", &file_arg, &format!("http://{reference}/object")])?;
        let ticket = issue(&sluice, &token, size, &sha)?;
        let url = ticket["upload"]["url"].as_str().context("url")?.to_owned();
        stored.replace(&sluice, &ticket)?;
        let one_put = accounted(&mut || timed_curl(&["-T", &file_arg, &url]))?;
        let ticket = issue(&sluice, &token, size, &sha)?;
        let line = ticket["command"].as_str().context("command")?.to_owned();
        stored.replace(&sluice, &ticket)?;
        let parts = accounted(&mut || crate::kit::timed_sh(&line, &up_dir))?;
        eprintln!(
            "  hash+file {hash_file:.2} s, one PUT {:.2} s (CPU: client {:.2}, server {:.2}), \
             the line {:.2} s (CPU: client {:.2}, server {:.2})",
            one_put.secs, one_put.client, one_put.server, parts.secs, parts.client, parts.server
        );
        Ok(Round {
            hash_file,
            one_put,
            parts,
        })
    })?;
    let _ = refs.kill();
    let _ = refs.wait();
    // The median over the rounds of what `pick` reads of each.
    let med = |pick: &dyn Fn(&Round) -> f64| median(results.iter().map(pick).collect());
    let mib = size_mib as f64;
    let gib = mib / 1024.0;
    let rate = |pick: &dyn Fn(&Round) -> f64| mib / med(pick);
    let per_gib = |pick: &dyn Fn(&Round) -> f64| med(pick) / gib;
    let of_put = med(&|r| rate_ratio(r.parts.secs, r.one_put.secs));
    let of_ref = med(&|r| rate_ratio(r.parts.secs, r.hash_file));
    let cpu_ratio = med(&|r| r.parts.cpu() / r.one_put.cpu());
    let server_ratio = med(&|r| r.parts.server / r.one_put.server);
    let verdict = if of_put >= 0.95 { "met" } else { "**missed**" };
    let server_verdict = if server_ratio <= 1.1 {
        "met"
    } else {
        "**missed**"
    };
    let profile = crate::kit::sluice_bin()?
        .parent()
        .and_then(Path::file_name)
        .map(|d| d.to_string_lossy().into_owned())
        .unwrap_or_default();
    Ok(format!(
        "## The line beside one PUT: {size_mib} MiB, interleaved (local mode, {profile} build)\n\n\
         `target/fast/sluice-bench --only parts-vs-put --parts-size-mib {size_mib} --runs {runs}` (the server \
         `target/{profile}/sluice`; `SLUICE_BENCH_SERVER` names another build): {runs} rounds, \
         each of hash+file (one PUT to a server that hashes, writes and syncs), the file in one PUT to sluice's \
         link, and the file through `request_upload`'s line (one resumable tus stream: `HEAD`, then one `PATCH` \
         from the offset, each byte hashed once by the server as it arrives, its hash state checkpointed every \
         64 MiB), the file sluice stored last deleted just before each transfer to it (so that each writes into \
         page cache just freed, as on a server that has run a while); MiB/s medians, and each ratio the median \
         of the rounds' own.\n\n\
         | hash+file | sluice, one PUT | sluice, the line | the line / one PUT | the line / hash+file |\n\
         |---|---|---|---|---|\n\
         | {:.0} | {:.0} | {:.0} | **{of_put:.2}** (target ≥ 0.95: {verdict}) | {of_ref:.2} |\n\n\
         CPU seconds a GiB, medians of the same rounds (client: the commands the bench ran and waited \
         for, curl or the line's shell and all it started; server: sluice's own), with client and server \
         on this machine's cores:\n\n\
         | | client | server | both |\n\
         |---|---|---|---|\n\
         | one PUT | {:.2} | {:.2} | {:.2} |\n\
         | the line | {:.2} | {:.2} | {:.2} |\n\n\
         The server spends **{server_ratio:.2}×** one PUT's CPU a GiB on the line (target ≤ 1.1: {server_verdict}); \
         client and server together **{cpu_ratio:.2}×**.\n\n",
        rate(&|r| r.hash_file),
        rate(&|r| r.one_put.secs),
        rate(&|r| r.parts.secs),
        per_gib(&|r| r.one_put.client),
        per_gib(&|r| r.one_put.server),
        per_gib(&|r| r.one_put.cpu()),
        per_gib(&|r| r.parts.client),
        per_gib(&|r| r.parts.server),
        per_gib(&|r| r.parts.cpu()),
    ))
}

/// A resume costs nothing: `runs` rounds, each of one upload through the
/// line uninterrupted, and one cut at half (the first half sent, the
/// client gone), the server stopped and started again on its data
/// directory, and the same line run again. The server's CPU for that
/// second run beside the uninterrupted upload's, and what it read: the
/// bytes of the second half from the socket, and none of the first half
/// from the disk (it takes the hash up from its checkpoint).
pub fn resume(size_mib: u64, runs: usize) -> anyhow::Result<String> {
    use crate::harness::{Whose, cpu_seconds, median, rounds};
    let size = size_mib << 20;
    let work = tempfile::tempdir()?;
    let up_dir = work.path().join("up");
    std::fs::create_dir_all(&up_dir)?;
    let file = up_dir.join("payload.bin");
    eprintln!("resume: writing a {size_mib} MiB file…");
    let sha = make_file(&file, size)?;
    let data_dir = work.path().join("sluice");
    let results = rounds(runs, "resume across a restart", |_| {
        let _ = std::fs::remove_dir_all(&data_dir);
        let sluice = start_sluice_with(&data_dir, &[])?;
        let token = sluice.token.clone();
        // Uninterrupted.
        let ticket = issue(&sluice, &token, size, &sha)?;
        let line = ticket["command"].as_str().context("command")?.to_owned();
        let pid = sluice.process.id();
        let before = cpu_seconds(pid, Whose::Own)?;
        crate::kit::timed_sh(&line, &up_dir)?;
        let whole = cpu_seconds(pid, Whose::Own)? - before;
        // Cut at half, the server restarted, the same line again.
        let ticket = issue(&sluice, &token, size, &sha)?;
        let line = ticket["command"].as_str().context("command")?.to_owned();
        let link = ticket["upload"]["url"].as_str().context("url")?.to_owned();
        send_first_half(&link, &file, size)?;
        let old_base = sluice.base.clone();
        drop(sluice);
        let sluice = start_sluice_with(&data_dir, &[])?;
        let (link, line) = (
            link.replace(&old_base, &sluice.base),
            line.replace(&old_base, &sluice.base),
        );
        anyhow::ensure!(
            stream_offset(&link)? == size / 2,
            "half kept across the restart"
        );
        let pid = sluice.process.id();
        let (cpu_before, read_before) = (cpu_seconds(pid, Whose::Own)?, read_bytes(pid)?);
        crate::kit::timed_sh(&line, &up_dir)?;
        let second = cpu_seconds(pid, Whose::Own)? - cpu_before;
        let read = read_bytes(pid)? - read_before;
        anyhow::ensure!(stream_offset(&link)? == size, "the resumed upload is whole");
        eprintln!(
            "  uninterrupted {whole:.2} s CPU; resumed after a restart {second:.2} s CPU, {read} bytes read"
        );
        Ok((whole, second, read))
    })?;
    let ratio = median(results.iter().map(|(w, s, _)| s / w).collect());
    let read_kib = median(results.iter().map(|(_, _, r)| *r).collect()) as f64 / 1024.0;
    let verdict = if ratio <= 0.65 { "met" } else { "**missed**" };
    Ok(format!(
        "## A resume costs nothing: {size_mib} MiB cut at half, the server restarted (local mode)\n\n\
         `target/fast/sluice-bench --only resume --parts-size-mib {size_mib} --runs {runs}`: {runs} rounds, each of \
         the file through the line uninterrupted, and the file cut at half (its first half sent in one `PATCH`, \
         the client gone), the server stopped and started again on its data directory, and the same line run \
         again. Medians of the rounds'.\n\n\
         | server CPU, resumed / uninterrupted | what the resumed server read with `read(2)` and its kin (`/proc/PID/io` `rchar`: files, not the sockets' `recv`) |\n\
         |---|---|\n\
         | **{ratio:.2}** (target ≤ 0.65: {verdict}) | {read_kib:.0} KiB (its configuration and database): none of the \
         {} MiB it had stored before the restart; it took the hash up from its checkpoint |\n\n",
        size_mib / 2
    ))
}

/// The bytes process `pid` has read through system calls (`rchar`: from
/// sockets and files alike).
fn read_bytes(pid: u32) -> anyhow::Result<u64> {
    let io = std::fs::read_to_string(format!("/proc/{pid}/io"))?;
    io.lines()
        .find_map(|l| l.strip_prefix("rchar:"))
        .context("rchar")?
        .trim()
        .parse()
        .context("rchar")
}

/// What one transfer took: its seconds, and the CPU seconds its client and
/// the server spent.
#[derive(Clone, Copy)]
struct Spent {
    secs: f64,
    client: f64,
    server: f64,
}

impl Spent {
    /// The CPU seconds client and server spent together.
    fn cpu(&self) -> f64 {
        self.client + self.server
    }
}

/// One round: hash+file's seconds, and the two ways of sending to sluice.
struct Round {
    hash_file: f64,
    one_put: Spent,
    parts: Spent,
}
