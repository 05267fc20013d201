//! Files out (issue 68), local mode: a 1 GiB download resumed once by
//! `Range` on one link beside an uninterrupted one; a 1 GiB zip of 100
//! files beside the same files' one line; and a zip past 4 GiB (ZIP64),
//! read whole by Python's `zipfile`, with the server's memory beside it.
//! Each pair interleaved in rounds on one server, as ratios.

use std::path::Path;

use anyhow::{Context as _, ensure};

use crate::actions::call_tool;
use crate::harness::median;
use crate::kit::{memory_kib, start_sluice_with, timed_sh};

/// The download link of a fresh `get_download_url` for `handle`.
fn link(base: &str, token: &str, handle: &str) -> anyhow::Result<String> {
    let (result, _) = call_tool(
        base,
        token,
        "get_download_url",
        serde_json::json!({"file": handle}),
    )?;
    Ok(result["structuredContent"]["download"]["url"]
        .as_str()
        .context("download.url")?
        .to_owned())
}

/// Uploads `n` files of `size` bytes in one batch (written into `src`);
/// gives the batch's handle.
fn batch_of(base: &str, token: &str, src: &Path, n: usize, size: u64) -> anyhow::Result<String> {
    std::fs::create_dir_all(src)?;
    let mut entries = Vec::new();
    for i in 0..n {
        let name = format!("f{i:03}.bin");
        let sha = crate::kit::make_file(&src.join(&name), size)?;
        entries.push(serde_json::json!({"path": name, "size": size, "sha256": sha}));
    }
    let (result, _) = call_tool(
        base,
        token,
        "request_uploads",
        serde_json::json!({"files": entries}),
    )?;
    let batch = &result["structuredContent"];
    timed_sh(batch["command"].as_str().context("command")?, src)?;
    Ok(batch["handle"].as_str().context("handle")?.to_owned())
}

/// The zip of `handle`'s files, saved into `dir` by its command: seconds.
fn zip_once(base: &str, token: &str, handle: &str, dir: &Path) -> anyhow::Result<f64> {
    let (result, _) = call_tool(
        base,
        token,
        "get_download_urls",
        serde_json::json!({"files": [handle], "zip": true}),
    )?;
    let zip = &result["structuredContent"]["zip"];
    timed_sh(zip["command"].as_str().context("zip.command")?, dir)
}

/// Python's `zipfile` reads every entry of `zip` and checks its CRC, and
/// `SHA256SUMS` against the entries: the number of files it read.
fn python_checks(zip: &Path) -> anyhow::Result<usize> {
    let script = r#"
import hashlib, sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as z:
    sums = dict(reversed(l.split("  ", 1)) for l in z.read("SHA256SUMS").decode().splitlines())
    n = 0
    for i in z.infolist():
        if i.filename == "SHA256SUMS":
            continue
        h = hashlib.sha256()
        with z.open(i) as f:
            while chunk := f.read(1 << 20):
                h.update(chunk)
        assert sums[i.filename] == h.hexdigest(), i.filename
        n += 1
    print(n)
"#;
    let out = std::process::Command::new("python3")
        .args(["-c", script])
        .arg(zip)
        .output()?;
    ensure!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    Ok(String::from_utf8_lossy(&out.stdout).trim().parse()?)
}

pub fn run(runs: usize) -> anyhow::Result<String> {
    let work = tempfile::tempdir()?;
    let sluice = start_sluice_with(&work.path().join("data"), &[])?;
    let (base, token) = (sluice.base.as_str(), sluice.token.as_str());
    let pid = sluice.process.id();

    // A 1 GiB download resumed once by Range on one link.
    eprintln!("out: a 1 GiB download, whole and resumed…");
    let size: u64 = 1 << 30;
    let src = work.path().join("src");
    std::fs::create_dir_all(&src)?;
    let sha = crate::kit::make_file(&src.join("big.bin"), size)?;
    let (result, _) = call_tool(
        base,
        token,
        "request_upload",
        serde_json::json!({"filename": "big.bin", "size": size, "sha256": sha}),
    )?;
    let ticket = &result["structuredContent"];
    timed_sh(ticket["command"].as_str().context("command")?, &src)?;
    let handle = ticket["handle"].as_str().context("handle")?.to_owned();
    let dst = work.path().join("dst");
    std::fs::create_dir_all(&dst)?;
    let (mut whole, mut resumed) = (Vec::new(), Vec::new());
    for _ in 0..runs {
        let url = link(base, token, &handle)?;
        whole.push(timed_sh(&format!("curl -sSf -o whole.bin '{url}'"), &dst)?);
        std::fs::remove_file(dst.join("whole.bin"))?;
        let url = link(base, token, &handle)?;
        let cut = timed_sh(
            &format!("curl -sSf -r 0-{} -o part.bin '{url}'", size / 2 - 1),
            &dst,
        )?;
        let rest = timed_sh(&format!("curl -sSf -C - -o part.bin '{url}'"), &dst)?;
        ensure!(
            std::fs::metadata(dst.join("part.bin"))?.len() == size,
            "the resumed download is whole"
        );
        std::fs::remove_file(dst.join("part.bin"))?;
        resumed.push(cut + rest);
    }
    let (whole, resumed) = (median(whole), median(resumed));
    std::fs::remove_dir_all(&src)?;

    // A 1 GiB zip of 100 files beside the same files' one line.
    eprintln!("out: 100 files of 10 MiB, the line and the zip…");
    let batch = batch_of(base, token, &work.path().join("set"), 100, 10 << 20)?;
    std::fs::remove_dir_all(work.path().join("set"))?;
    let (mut line, mut zipped) = (Vec::new(), Vec::new());
    for _ in 0..runs {
        let d = work.path().join("line");
        std::fs::create_dir_all(&d)?;
        let (result, _) = call_tool(
            base,
            token,
            "get_download_urls",
            serde_json::json!({"files": [&batch]}),
        )?;
        line.push(timed_sh(
            result["structuredContent"]["command"]
                .as_str()
                .context("command")?,
            &d,
        )?);
        std::fs::remove_dir_all(&d)?;
        let d = work.path().join("zip");
        std::fs::create_dir_all(&d)?;
        zipped.push(zip_once(base, token, &batch, &d)?);
        std::fs::remove_dir_all(&d)?;
    }
    let (line, zipped) = (median(line), median(zipped));

    // Past 4 GiB: five files of 1100 MiB, one zip, read whole by Python.
    eprintln!("out: a 5.4 GiB zip…");
    let big = batch_of(base, token, &work.path().join("big"), 5, 1100 << 20)?;
    std::fs::remove_dir_all(work.path().join("big"))?;
    let d = work.path().join("bigzip");
    std::fs::create_dir_all(&d)?;
    let (_, rss_before) = memory_kib(pid)?;
    let sampling = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(true));
    let sampler = {
        let sampling = sampling.clone();
        std::thread::spawn(move || {
            let mut most = 0;
            while sampling.load(std::sync::atomic::Ordering::Relaxed) {
                if let Ok((_, rss)) = memory_kib(pid) {
                    most = most.max(rss);
                }
                std::thread::sleep(std::time::Duration::from_millis(50));
            }
            most
        })
    };
    let big_secs = zip_once(base, token, &big, &d)?;
    sampling.store(false, std::sync::atomic::Ordering::Relaxed);
    let big_peak = sampler.join().map_err(|_| anyhow::anyhow!("sampler"))?;
    let zip_path = std::fs::read_dir(&d)?.next().context("the zip")??.path();
    let zip_len = std::fs::metadata(&zip_path)?.len();
    let read = python_checks(&zip_path)?;
    ensure!(read == 5, "Python read {read} files");

    let mib = |kib: u64| kib as f64 / 1024.0;
    Ok(format!(
        "## Files out: a resumed download, one zip (local mode, issue 68)\n\n\
         `target/fast/sluice-bench --only out` (server `{server}`, {runs} interleaved rounds, medians).\n\n\
         | what | reference | sluice's way | ratio |\n|---|---|---|---|\n\
         | a 1 GiB download cut at half and resumed with `curl -C -` on the same link | one uninterrupted `curl` of a link: {whole:.2} s | `curl -r 0-…` then `curl -C -`: {resumed:.2} s | {rr:.2}× the time |\n\
         | 100 files of 10 MiB (1000 MiB) | the batch's one line: {line:.2} s | the zip's one `curl`: {zipped:.2} s | {zr:.2}× the time |\n\n\
         A resumed download reads the file from its start again where sluice sends the bytes (the whole file is \
         verified before its last byte goes), so the second request costs the bytes it skips as well as those it \
         sends. The zip is written through a {pipe} KiB pipe as it is read, and the line's 100 requests are \
         100 links redeemed and 100 curls started.\n\n\
         **Past 4 GiB:** five files of 1100 MiB as one zip of {zl} bytes ({zg:.2} GiB, ZIP64) in {big_secs:.1} s; \
         Python's `zipfile` read every entry and matched `SHA256SUMS`. Server RSS {bb:.1} MiB before, at most \
         {bp:.1} MiB while it streamed (sampled every 50 ms): the zip holds a constant, not the files.\n\n",
        server = crate::kit::sluice_bin()?.display(),
        rr = resumed / whole,
        zr = zipped / line,
        pipe = sluice::service::batches::zip::PIPE_BYTES / 1024,
        zl = zip_len,
        zg = zip_len as f64 / (1u64 << 30) as f64,
        bb = mib(rss_before),
        bp = mib(big_peak),
    ))
}
