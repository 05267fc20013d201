//! `make bench`: sluice's data plane beside two reference servers started in
//! the same run, every figure reported as a ratio to its reference, because
//! this machine is shared and noisy and only same-run ratios mean anything.

mod actions;
mod backends;
mod batch;
mod browser;
mod harness;
mod lambda;
mod load;
mod ops;
mod parts;
mod peer;
mod refs;
mod scale;
mod soak;

use harness::median;
use std::io::{BufRead as _, BufReader, Write as _};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Instant;

use anyhow::{Context as _, bail};

/// Benchmarks sluice beside reference servers in the same run, every
/// figure a ratio; `--out` writes the sections into BENCHMARKS.md.
#[derive(Debug, clap::Parser)]
#[command(name = "sluice-bench")]
pub(crate) struct Args {
    /// Size of the data-plane file, in MiB.
    #[arg(long, value_name = "N", default_value_t = 1024)]
    size_mib: u64,
    /// Interleaved rounds of each measurement.
    #[arg(long, value_name = "N", default_value_t = 5)]
    runs: usize,
    /// Where to merge the sections written (BENCHMARKS.md).
    #[arg(long, value_name = "FILE")]
    out: Option<PathBuf>,
    /// Run one section only.
    #[arg(long, value_parser = ["data", "actions", "mcp", "backends", "browser", "scale", "lambda", "hash", "parts", "parts-vs-put", "resume", "peer", "batch", "ops"])]
    only: Option<String>,
    /// Size of the file uploaded in parts, in MiB (over 5 GiB: more than
    /// one PUT to S3 can take).
    #[arg(long, value_name = "N", default_value_t = 5200)]
    parts_size_mib: u64,
    /// Requests of the MCP load.
    #[arg(long, value_name = "N", default_value_t = 20_000)]
    requests: usize,
    /// Concurrent clients of the MCP load.
    #[arg(long, value_name = "N", default_value_t = 32)]
    concurrency: usize,
    /// Size of the action bench's file, in MiB.
    #[arg(long, value_name = "N", default_value_t = 256)]
    action_size_mib: u64,
    /// Run the soak for this many seconds instead of the benchmarks.
    #[arg(long = "soak", value_name = "SECS")]
    soak_secs: Option<u64>,
}

fn parse_args() -> Args {
    <Args as clap::Parser>::parse()
}

fn main() -> anyhow::Result<()> {
    // The references run as a child process of their own, like sluice, so
    // that neither side shares a process with the load generator.
    let argv: Vec<String> = std::env::args().collect();
    if argv.get(1).map(String::as_str) == Some("--serve-refs") {
        let file = PathBuf::from(argv.get(2).context("--serve-refs FILE SIZE")?);
        let size: u64 = argv.get(3).context("--serve-refs FILE SIZE")?.parse()?;
        let rt = tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()?;
        return rt.block_on(async move {
            let (discard, work) = refs::start(file, size).await?;
            println!("{discard} {work}");
            std::future::pending::<anyhow::Result<()>>().await
        });
    }
    let args = parse_args();
    if let Some(secs) = args.soak_secs {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()?;
        let section = rt.block_on(soak::run(secs))?;
        print!("{section}");
        if let Some(out) = &args.out {
            merge_sections(out, &section)?;
        }
        return Ok(());
    }
    let mut report = String::from(
        "# Benchmarks\n\nFigures from one run of `make bench` on the development machine. \
         Every figure stands beside a reference measured in the same run, as a ratio: \
         the machine is shared and noisy, so absolute numbers vary from run to run.\n\n",
    );
    let wants = |name: &str| args.only.as_deref().is_none_or(|o| o == name);
    if wants("hash") {
        report.push_str(&sluice_hashbench::run(args.runs)?);
    }
    if wants("data") {
        report.push_str(&data_plane(&args)?);
    }
    if wants("parts") {
        report.push_str(&parts::run(args.parts_size_mib)?);
    }
    if wants("parts-vs-put") {
        // 1 GiB for as many rounds as asked, and the parts section's file
        // (5.08 GiB by default: more than one PUT to S3 takes) for two.
        report.push_str(&parts::versus_one_put(
            args.parts_size_mib.min(1024),
            args.runs,
        )?);
        if args.parts_size_mib > 1024 {
            report.push_str(&parts::versus_one_put(
                args.parts_size_mib,
                args.runs.min(2),
            )?);
        }
    }
    if wants("resume") {
        report.push_str(&parts::resume(args.parts_size_mib.min(1024), args.runs)?);
    }
    if wants("peer") {
        report.push_str(&peer::run(args.runs)?);
    }
    if wants("batch") {
        report.push_str(&batch::run()?);
    }
    if wants("ops") {
        report.push_str(&ops::run(&args)?);
    }
    if wants("actions") {
        report.push_str(&actions::run(&args)?);
    }
    if wants("mcp") {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()?;
        report.push_str(&rt.block_on(mcp(&args))?);
    }
    if wants("backends") {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()?;
        report.push_str(&rt.block_on(backends::run())?);
    }
    if wants("browser") {
        report.push_str(&browser::run()?);
    }
    if wants("scale") {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()?;
        report.push_str(&rt.block_on(scale::run())?);
    }
    if wants("lambda") {
        // This binary is target/fast/sluice-bench; the functions are built
        // in target/release, as `sam build` builds them.
        let exe = std::env::current_exe()?;
        let target = exe.parent().and_then(Path::parent).context("target dir")?;
        report.push_str(&lambda::run(&target.join("release"))?);
        // Sizes only where the aarch64 build exists (it needs a cross linker).
        match lambda::sizes(target) {
            Ok(sizes) => report.push_str(&sizes),
            Err(e) => eprintln!("binary sizes skipped: {e}"),
        }
    }
    print!("{report}");
    if let Some(out) = &args.out {
        if args.only.is_some() {
            // One part measured: only its sections are replaced.
            let sections = report.find("\n## ").map_or("", |i| &report[i + 1..]);
            merge_sections(out, sections)?;
        } else {
            std::fs::write(out, report)?;
            eprintln!("wrote {}", out.display());
        }
    }
    Ok(())
}

/// Replaces, in the report at `out`, each `## ` section that `sections`
/// holds (appending the new ones), leaving every other section as it was.
fn merge_sections(out: &Path, sections: &str) -> anyhow::Result<()> {
    let existing = std::fs::read_to_string(out).unwrap_or_default();
    let split = |text: &str| -> Vec<String> {
        let mut parts = Vec::new();
        let mut current = String::new();
        for line in text.split_inclusive('\n') {
            if line.starts_with("## ") && !current.is_empty() {
                parts.push(std::mem::take(&mut current));
            }
            current.push_str(line);
        }
        if !current.is_empty() {
            parts.push(current);
        }
        parts
    };
    let heading = |part: &str| part.lines().next().unwrap_or_default().to_owned();
    let mut parts = split(&existing);
    for new in split(sections) {
        match parts.iter_mut().find(|p| heading(p) == heading(&new)) {
            Some(old) => *old = new,
            None => parts.push(new),
        }
    }
    // One blank line between sections, whichever came from where.
    let text: Vec<String> = parts
        .iter()
        .map(|p| format!("{}\n", p.trim_end()))
        .collect();
    std::fs::write(out, text.join("\n"))?;
    eprintln!("updated {}", out.display());
    Ok(())
}

/// The `sluice` binary next to this one (same profile).
pub(crate) fn sluice_bin() -> anyhow::Result<PathBuf> {
    // Another build of the server (`SLUICE_BENCH_SERVER=target/release/sluice`):
    // how fast the binary a user builds with `cargo build --release` is.
    if let Some(bin) = std::env::var_os("SLUICE_BENCH_SERVER") {
        return Ok(PathBuf::from(bin));
    }
    let exe = std::env::current_exe()?;
    let bin = exe.with_file_name("sluice");
    if !bin.exists() {
        bail!(
            "{} not found: build it with `cargo build --profile fast -p sluice-local`",
            bin.display()
        );
    }
    Ok(bin)
}

/// Writes `size` pseudo-random bytes to `path` and returns their sha256.
pub(crate) fn make_file(path: &Path, size: u64) -> anyhow::Result<sluice::Sha256> {
    let mut block = vec![0u8; 1 << 20];
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    for b in &mut block {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        *b = (x >> 24) as u8;
    }
    let mut file = std::io::BufWriter::new(std::fs::File::create(path)?);
    let mut hasher = sluice::sha::Hasher::new();
    let mut left = size;
    while left > 0 {
        let n = left.min(block.len() as u64) as usize;
        file.write_all(&block[..n])?;
        hasher.update(&block[..n]);
        left -= n as u64;
    }
    file.flush()?;
    Ok(hasher.finish())
}

pub(crate) struct Sluice {
    process: sluice_testkit::process::Spawned,
    base: String,
    token: String,
    data_dir: PathBuf,
    /// The master secret it was given (aws mode), else its data
    /// directory's own.
    secret: Option<String>,
}

impl Sluice {
    /// A bearer token for `user` (the default scopes).
    pub(crate) fn token_for(&self, user: &str) -> anyhow::Result<String> {
        let mut command = Command::new(sluice_bin()?);
        command.env("SLUICE_DATA_DIR", &self.data_dir);
        if let Some(secret) = &self.secret {
            command.env("SLUICE_MASTER_SECRET", secret);
        }
        let out = command.args(["token", "--user", user]).output()?;
        anyhow::ensure!(out.status.success(), "sluice token --user {user} failed");
        Ok(String::from_utf8(out.stdout)?.trim().to_owned())
    }
}

fn start_sluice(data_dir: &Path) -> anyhow::Result<Sluice> {
    start_sluice_with(data_dir, &[])
}

/// A `sluice` process on `data_dir` with extra variables, and a token for it
/// (the default scopes: files and actions).
pub(crate) fn start_sluice_with(data_dir: &Path, env: &[(&str, &str)]) -> anyhow::Result<Sluice> {
    let mut command = Command::new(sluice_bin()?);
    command
        .env("SLUICE_DATA_DIR", data_dir)
        .env("SLUICE_LOG", "warn")
        .env("SLUICE_QUOTA_BYTES", (1u64 << 40).to_string())
        // The load asks for files faster than a person would; the caps on
        // pending files stay at their defaults unless `env` says otherwise.
        .env("SLUICE_ISSUE_RATE_PER_MINUTE", "1000000000")
        .env("SLUICE_ISSUE_BURST", "1000000")
        .env("SLUICE_LINK_RATE_PER_MINUTE", "1000000000")
        .env("SLUICE_LINK_BURST", "1000000")
        .env("SLUICE_RESOLVE_RATE_PER_MINUTE", "1000000000")
        .env("SLUICE_RESOLVE_BURST", "1000000")
        .env("SLUICE_ACTION_RATE_PER_MINUTE", "1000000000")
        .env("SLUICE_ACTION_BURST", "1000000")
        // The bench's few users move many files at once.
        .env("SLUICE_MAX_TRANSFERS_PER_USER", "100000")
        .envs(env.iter().copied());
    let process = sluice_testkit::process::Spawned::sluice(command)?;
    let mut sluice = Sluice {
        base: process.base.clone(),
        process,
        token: String::new(),
        data_dir: data_dir.to_owned(),
        secret: env
            .iter()
            .find(|(name, _)| *name == "SLUICE_MASTER_SECRET")
            .map(|(_, value)| (*value).to_owned()),
    };
    sluice.token = sluice.token_for("bench")?;
    Ok(sluice)
}

/// `VmHWM` (peak) and `VmRSS` (now) of a process, in KiB.
pub(crate) fn memory_kib(pid: u32) -> anyhow::Result<(u64, u64)> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))?;
    let field = |name: &str| -> anyhow::Result<u64> {
        let line = status
            .lines()
            .find(|l| l.starts_with(name))
            .with_context(|| format!("{name} missing"))?;
        Ok(line.split_whitespace().nth(1).context("value")?.parse()?)
    };
    Ok((field("VmHWM:")?, field("VmRSS:")?))
}

/// Runs curl and returns the seconds it took; fails on a non-2xx. Dirty pages
/// are flushed first, so no transfer pays for the previous one's writeback.
pub(crate) fn timed_curl(args: &[&str]) -> anyhow::Result<f64> {
    Command::new("sync").status()?;
    let start = Instant::now();
    let out = Command::new("curl")
        .args(["-sS", "--fail-with-body", "-o", "/dev/null"])
        .args(args)
        .output()?;
    let secs = start.elapsed().as_secs_f64();
    if !out.status.success() {
        bail!(
            "curl {args:?} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    Ok(secs)
}

pub(crate) fn post(
    url: &str,
    token: &str,
    body: &serde_json::Value,
) -> anyhow::Result<serde_json::Value> {
    let out = Command::new("curl")
        .args([
            "-sS",
            "--fail-with-body",
            "-H",
            "Content-Type: application/json",
        ])
        .arg("-H")
        .arg(format!("Authorization: Bearer {token}"))
        .arg("-d")
        .arg(body.to_string())
        .arg(url)
        .output()?;
    if !out.status.success() {
        bail!("POST {url}: {}", String::from_utf8_lossy(&out.stdout));
    }
    Ok(serde_json::from_slice(&out.stdout)?)
}

/// Runs `line` in `dir`, timed; fails if it fails.
pub(crate) fn timed_sh(line: &str, dir: &Path) -> anyhow::Result<f64> {
    Command::new("sync").status()?;
    let start = Instant::now();
    let out = Command::new("sh")
        .args(["-c", line])
        .current_dir(dir)
        .output()?;
    let secs = start.elapsed().as_secs_f64();
    if !out.status.success() {
        bail!("{line}: {}", String::from_utf8_lossy(&out.stderr));
    }
    Ok(secs)
}

/// The file sluice stored last, deleted just before the next transfer to
/// it ([`LastStored::replace`]), so that each transfer writes into the page
/// cache the one before it held, as on a server that has run for a while.
/// On this VM, writing into memory the guest never touched costs the writer
/// about three seconds of system time a GiB (the hypervisor backs each new
/// page), which made a transfer's rate depend on how much memory the ones
/// before it used.
#[derive(Default)]
pub(crate) struct LastStored(Option<String>);

impl LastStored {
    /// Deletes the file stored last (`DELETE /files/{id}`), and keeps
    /// `ticket`'s file as the next one to delete.
    pub(crate) fn replace(
        &mut self,
        sluice: &Sluice,
        ticket: &serde_json::Value,
    ) -> anyhow::Result<()> {
        let next = ticket["file_id"].as_str().context("file_id")?.to_owned();
        let Some(last) = self.0.replace(next) else {
            return Ok(());
        };
        let out = Command::new("curl")
            .args([
                "-sS",
                "--fail-with-body",
                "-o",
                "/dev/null",
                "-X",
                "DELETE",
                "-H",
            ])
            .arg(format!("Authorization: Bearer {}", sluice.token))
            .arg(format!("{}/files/{last}", sluice.base))
            .output()?;
        if !out.status.success() {
            bail!("DELETE {last}: {}", String::from_utf8_lossy(&out.stderr));
        }
        Ok(())
    }
}

/// The reference servers as a child process serving `file` (`size`
/// bytes): the child, and the `discard` and `hash+file` addresses.
pub(crate) fn start_refs(file: &Path, size: u64) -> anyhow::Result<(Child, String, String)> {
    let mut child = Command::new(std::env::current_exe()?)
        .arg("--serve-refs")
        .arg(file)
        .arg(size.to_string())
        .stdout(Stdio::piped())
        .spawn()?;
    let mut line = String::new();
    BufReader::new(child.stdout.take().context("stdout")?).read_line(&mut line)?;
    let mut addrs = line.split_whitespace();
    let discard = addrs.next().context("discard address")?.to_owned();
    let reference = addrs.next().context("reference address")?.to_owned();
    Ok((child, discard, reference))
}

fn data_plane(args: &Args) -> anyhow::Result<String> {
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

/// The repository root (the bench runs from a checkout).
fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// `tools/call request_upload` on sluice against a no-op tool on the
/// official TypeScript SDK, same generator, interleaved rounds.
async fn mcp(args: &Args) -> anyhow::Result<String> {
    let work = tempfile::tempdir()?;
    let sluice = start_sluice(&work.path().join("sluice"))?;
    let clients = repo_root().join("tests/clients");
    let mut noop_child = Command::new("node")
        .arg("noop-server.mjs")
        .current_dir(&clients)
        .stdout(Stdio::piped())
        .spawn()
        .context("node (run `make clients` first)")?;
    let mut noop_url = String::new();
    BufReader::new(noop_child.stdout.take().context("stdout")?).read_line(&mut noop_url)?;
    let noop_url = noop_url.trim().to_owned();
    let result = mcp_rounds(args, &sluice, (&noop_url, noop_child.id())).await;
    let _ = noop_child.kill();
    let _ = noop_child.wait();
    result
}

/// How many files each user of the MCP load leaves pending, at most (the
/// default cap is 100).
const MCP_PENDING_PER_USER: usize = 64;

/// The headers of every MCP request the load sends.
fn mcp_common_headers() -> Vec<(String, String)> {
    [
        ("Content-Type", "application/json"),
        ("Accept", "application/json, text/event-stream"),
        ("MCP-Protocol-Version", "2025-06-18"),
    ]
    .map(|(k, v)| (k.to_owned(), v.to_owned()))
    .to_vec()
}

/// One header set per user for `requests` calls of a tool that leaves a
/// pending file each (a user may have 100, the default cap): enough users
/// that none reaches it, each with its own token from `sluice`, as a real
/// population would.
pub(crate) fn mcp_user_headers(
    sluice: &Sluice,
    requests: usize,
) -> anyhow::Result<Vec<Vec<(String, String)>>> {
    let users = requests.div_ceil(MCP_PENDING_PER_USER);
    eprintln!("minting tokens for {users} users…");
    (0..users)
        .map(|user| {
            let token = sluice.token_for(&format!("user-{user}"))?;
            let mut headers = mcp_common_headers();
            headers.push(("Authorization".into(), format!("Bearer {token}")));
            Ok(headers)
        })
        .collect()
}

/// The body of a `tools/call` of `name` with `arguments`.
pub(crate) fn tool_call(name: &str, arguments: serde_json::Value) -> bytes::Bytes {
    bytes::Bytes::from(
        serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": name, "arguments": arguments}})
            .to_string(),
    )
}

/// One load round and the CPU it took, in microseconds a request.
struct Measured {
    load: load::Load,
    /// The server's (all its threads).
    server_us: f64,
    /// The load generator's (this process, which does nothing else meanwhile).
    generator_us: f64,
}

/// Runs `round` (`requests` requests to the server `server`), counting
/// the CPU both sides spent on it.
async fn cpu_measured(
    server: u32,
    requests: usize,
    round: impl std::future::Future<Output = anyhow::Result<load::Load>>,
) -> anyhow::Result<Measured> {
    use harness::{Whose, cpu_seconds};
    let me = std::process::id();
    let (server0, me0) = (
        cpu_seconds(server, Whose::Own)?,
        cpu_seconds(me, Whose::Own)?,
    );
    let load = round.await?;
    let per = |spent: f64| spent * 1e6 / requests as f64;
    Ok(Measured {
        load,
        server_us: per(cpu_seconds(server, Whose::Own)? - server0),
        generator_us: per(cpu_seconds(me, Whose::Own)? - me0),
    })
}

async fn mcp_rounds(
    args: &Args,
    sluice: &Sluice,
    (noop_url, noop_pid): (&str, u32),
) -> anyhow::Result<String> {
    let sluice_headers = mcp_user_headers(sluice, 1000 + args.runs * args.requests)?;
    let users = sluice_headers.len();
    let common = [mcp_common_headers()];
    let upload = tool_call(
        "request_upload",
        serde_json::json!({"filename": "report.pdf", "size": 5_000_000, "sha256": sluice::Sha256::of(b"report").to_hex()}),
    );
    let noop = tool_call("noop", serde_json::json!({}));
    let sluice_url = format!("{}/mcp", sluice.base);
    let c = args.concurrency;

    // Warm both up (JIT, allocator, connection pools).
    load::run(
        &sluice_url,
        &sluice_headers,
        upload.clone(),
        c,
        1000,
        "\"isError\":false",
    )
    .await?;
    load::run(noop_url, &common, noop.clone(), c, 1000, "\"ok\"").await?;
    let (mut s, mut n) = (Vec::new(), Vec::new());
    let sluice_pid = sluice.process.id();
    for round in 0..args.runs {
        eprintln!("mcp round {} of {}…", round + 1, args.runs);
        let noop_round = load::run(noop_url, &common, noop.clone(), c, args.requests, "\"ok\"");
        n.push(cpu_measured(noop_pid, args.requests, noop_round).await?);
        let sluice_round = load::run(
            &sluice_url,
            &sluice_headers,
            upload.clone(),
            c,
            args.requests,
            "\"isError\":false",
        );
        s.push(cpu_measured(sluice_pid, args.requests, sluice_round).await?);
    }
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get()) as f64;
    let med = |v: &[Measured], f: fn(&Measured) -> f64| median(v.iter().map(f).collect());
    let (s_rps, n_rps) = (med(&s, |m| m.load.rps), med(&n, |m| m.load.rps));
    let (s_server, n_server) = (med(&s, |m| m.server_us), med(&n, |m| m.server_us));
    let (s_gen, n_gen) = (med(&s, |m| m.generator_us), med(&n, |m| m.generator_us));
    fn ms(d: std::time::Duration) -> f64 {
        d.as_secs_f64() * 1000.0
    }
    let (s_p99, n_p99) = (med(&s, |m| ms(m.load.p99)), med(&n, |m| ms(m.load.p99)));
    let (s_p50, n_p50) = (med(&s, |m| ms(m.load.p50)), med(&n, |m| ms(m.load.p50)));
    let verdict = |ok: bool| if ok { "met" } else { "**missed**" };

    use std::fmt::Write as _;
    let mut out = String::new();
    writeln!(
        out,
        "\n## MCP: `tools/call request_upload` against a no-op tool\n"
    )?;
    writeln!(
        out,
        "`target/fast/sluice-bench --only mcp --runs {} --requests {} --concurrency {}`: one Rust load generator \
         (hyper, {} keep-alive connections, closed loop, {} requests a round after 1,000 warm-up requests) \
         drives sluice's real `request_upload` (validate, sign a handle and an upload link, check the caller's \
         rate and pending caps, write the file record, build the curl line; bearer token verified on every \
         request) for {users} users in turn, each left with at most {MCP_PENDING_PER_USER} pending files (the \
         default caps; the rate limit is raised, since the load is faster than people), and a minimal server on the official \
         TypeScript SDK (stateless Streamable HTTP, JSON responses, one no-op tool), rounds interleaved; medians of {} rounds.\n",
        args.runs, args.requests, c, c, args.requests, args.runs
    )?;
    writeln!(
        out,
        "| server | requests/s | p50 ms | p99 ms | server CPU µs a request | load generator CPU µs a request |"
    )?;
    writeln!(out, "|---|---|---|---|---|---|")?;
    writeln!(
        out,
        "| TypeScript SDK, no-op tool | {n_rps:.0} | {n_p50:.2} | {n_p99:.2} | {n_server:.0} | {n_gen:.0} |"
    )?;
    writeln!(
        out,
        "| sluice, request_upload | {s_rps:.0} | {s_p50:.2} | {s_p99:.2} | {s_server:.0} | {s_gen:.0} |"
    )?;
    writeln!(
        out,
        "\nThroughput ratio sluice / no-op **{:.2}×** (target ≥ 8×: {}); p99 ratio sluice / no-op **{:.2}** (target ≤ 0.25: {}).",
        s_rps / n_rps,
        verdict(s_rps / n_rps >= 8.0),
        s_p99 / n_p99,
        verdict(s_p99 / n_p99 <= 0.25)
    )?;
    // The server and the generator share this machine's cores: 8× the
    // no-op's rate leaves so many microseconds of CPU a request for both.
    let budget = cores * 1e6 / (8.0 * n_rps);
    writeln!(
        out,
        "\nServer and load generator share this machine's {cores:.0} cores (CPU from `/proc/<pid>/stat`, \
         medians of the rounds). 8× the no-op's rate ({:.0} requests/s) leaves {budget:.0} µs of CPU a \
         request for both; the generator alone spent {s_gen:.0} µs a sluice request, so sluice could \
         spend at most {:.0} µs (it spends {s_server:.0}). The no-op's process spent {n_server:.0} µs a \
         request, {:.2} cores at its rate (node runs the JavaScript on one thread).",
        8.0 * n_rps,
        (budget - s_gen).max(0.0),
        n_server * n_rps / 1e6,
    )?;
    writeln!(
        out,
        "\nWhat the no-op does not do: each `request_upload` counts its caller's pending files and \
         writes the new file's record in one SQLite transaction (WAL, `synchronous = NORMAL`), \
         committed in batches by one writer thread (the record goes at the end of the table, its \
         id being in time order; its entries by owner and time, by owner among pending files, and \
         its owner's running byte count are most of each commit's pages); and checkpointing that \
         log into the database every 10,000 writes, so that it stays bounded under any load, sets \
         the 99th percentile: the checkpoint's last step (~8 ms of syncs) holds up the writes \
         queued meanwhile (every 5,000 writes p99 was 12-15 ms, every 10,000 8 ms, never 7 ms)."
    )?;
    Ok(out)
}
