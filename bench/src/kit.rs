//! What every bench shares: the `sluice` process (started with a token for
//! it), payload files, timed curl and shell runs, memory readings, and the
//! reference servers' child process.

use std::io::{BufRead as _, BufReader, Write as _};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Instant;

use anyhow::{Context as _, bail};

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
    pub(crate) process: sluice_testkit::process::Spawned,
    pub(crate) base: String,
    pub(crate) token: String,
    pub(crate) data_dir: PathBuf,
    /// The master secret it was given (aws mode), else its data
    /// directory's own.
    secret: Option<String>,
}

impl Sluice {
    /// A fresh upload link for a file of `size` bytes and digest `sha`
    /// named `name`, as `POST /uploads` gives it.
    pub(crate) fn upload_link(
        &self,
        name: &str,
        size: u64,
        sha: &sluice::Sha256,
    ) -> anyhow::Result<String> {
        let ticket = post(
            &format!("{}/uploads", self.base),
            &self.token,
            &serde_json::json!({"filename": name, "size": size, "sha256": sha}),
        )?;
        ticket["upload"]["url"]
            .as_str()
            .map(str::to_owned)
            .with_context(|| format!("no upload url in {ticket}"))
    }

    /// A bearer token for `user` (the default scopes).
    pub(crate) fn token_for(&self, user: &str) -> anyhow::Result<String> {
        let mut vars = vec![("SLUICE_DATA_DIR", self.data_dir.as_os_str())];
        if let Some(secret) = &self.secret {
            vars.push(("SLUICE_MASTER_SECRET", std::ffi::OsStr::new(secret)));
        }
        Ok(sluice_testkit::process::mint_token(
            &sluice_bin()?,
            vars,
            user,
            &[],
        )?)
    }
}

pub(crate) fn start_sluice(data_dir: &Path) -> anyhow::Result<Sluice> {
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
        match self.0.replace(next) {
            Some(last) => delete_file(sluice, &last),
            None => Ok(()),
        }
    }
}

/// Deletes file `file_id` of `sluice`'s user (`DELETE /files/{id}`).
pub(crate) fn delete_file(sluice: &Sluice, file_id: &str) -> anyhow::Result<()> {
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
        .arg(format!("{}/files/{file_id}", sluice.base))
        .output()?;
    if !out.status.success() {
        bail!("DELETE {file_id}: {}", String::from_utf8_lossy(&out.stderr));
    }
    Ok(())
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
