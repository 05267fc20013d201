//! SHA-256 speed in this build, 1 GiB in 1 MiB updates, in interleaved
//! rounds: `aws-lc-rs`'s digest (what `sluice::sha::Hasher` wraps), the
//! `sha2` crate as this build's profile compiles it (what sluice used
//! before), and `sha256sum` reading the same bytes from the page cache.
//! Built in the fast and the release profiles, it shows what the
//! optimization level does to each (`sluice-bench --only hash` runs it from
//! the fast build; `sluice-hashbench` alone builds in the release profile
//! in minutes).

use std::io::Write as _;
use std::process::Command;
use std::time::Instant;

use anyhow::{Context as _, bail};
use sha2::Digest as _;

const MIB: usize = 1 << 20;
const TOTAL_MIB: usize = 1024;

fn block() -> Vec<u8> {
    let mut block = vec![0u8; MIB];
    let mut x: u64 = 0x2545_f491_4f6c_dd1d;
    for b in &mut block {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        *b = (x >> 24) as u8;
    }
    block
}

/// MiB/s of `hash` over 1 GiB of `block`, and the digest it gave.
fn rate(block: &[u8], hash: impl Fn(&[u8], usize) -> String) -> (f64, String) {
    let started = Instant::now();
    let digest = hash(block, TOTAL_MIB);
    (TOTAL_MIB as f64 / started.elapsed().as_secs_f64(), digest)
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn aws_lc(block: &[u8], n: usize) -> String {
    let mut h = aws_lc_rs::digest::Context::new(&aws_lc_rs::digest::SHA256);
    for _ in 0..n {
        h.update(block);
    }
    hex(h.finish().as_ref())
}

fn sha2_crate(block: &[u8], n: usize) -> String {
    let mut h = sha2::Sha256::new();
    for _ in 0..n {
        h.update(block);
    }
    hex(&h.finalize())
}

fn midstate(block: &[u8], n: usize) -> String {
    let mut h = sluice::sha::Midstate::new();
    for _ in 0..n {
        h.update(block);
    }
    h.finish().to_hex()
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// The section of BENCHMARKS.md.
pub fn run(runs: usize) -> anyhow::Result<String> {
    let profile = std::env::current_exe()?
        .parent()
        .and_then(|p| p.file_name())
        .map(|n| n.to_string_lossy().into_owned())
        .context("the build's directory")?;
    let block = block();
    let dir = tempfile::tempdir()?;
    let path = dir.path().join("gib.bin");
    {
        let mut f = std::io::BufWriter::new(std::fs::File::create(&path)?);
        for _ in 0..TOTAL_MIB {
            f.write_all(&block)?;
        }
    }
    let (mut lc, mut s2, mut tool, mut mid) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for _ in 0..runs.max(1) {
        let (r, a) = rate(&block, aws_lc);
        lc.push(r);
        let (r, b) = rate(&block, sha2_crate);
        s2.push(r);
        let (r, c) = rate(&block, midstate);
        mid.push(r);
        if a != b || a != c {
            bail!("the hashers disagree: {a}, {b}, {c}");
        }
        let started = Instant::now();
        let out = Command::new("sha256sum").arg(&path).output()?;
        tool.push(TOTAL_MIB as f64 / started.elapsed().as_secs_f64());
        if !String::from_utf8_lossy(&out.stdout).starts_with(&a) {
            bail!("sha256sum disagrees");
        }
    }
    let (lc, s2, tool, mid) = (median(lc), median(s2), median(tool), median(mid));
    // The S3 proof on Lambda: the issuer's 1,769 MB (about one vCPU) for
    // 1024 / mid seconds a GiB, at arm64's price per GB-second (us-east-1).
    let secs_per_gib = 1024.0 / mid;
    let dollars_per_gib = secs_per_gib * 1.769 * 0.000_013_333_4;
    Ok(format!(
        "## Hashing ({profile} build)\n\n\
         `target/{profile}/sluice-hashbench` (or `sluice-bench --only hash`): SHA-256 of 1 GiB in 1 MiB updates, \
         median of {} interleaved rounds, beside `sha256sum` on the same bytes (page cache).\n\n\
         | hasher | MiB/s | ratio to `sha256sum` |\n|---|---|---|\n\
         | sluice (`aws-lc-rs`, any profile) | {lc:.0} | {:.2} |\n\
         | `sha2` crate, {profile} profile (what sluice hashed with before issue 20; built at `opt-level = 3` in every profile since issue 21) | {s2:.0} | {:.2} |\n\
         | sluice's resumable hash (`sha::Midstate`: `sha2`'s block function; the S3 proof of a file in parts) | {mid:.0} | {:.2} |\n\
         | `sha256sum` | {tool:.0} | 1.00 |\n\n\
         At the resumable hash's speed the S3 proof of a file in parts costs {secs_per_gib:.1} s of hashing a GiB, \
         about ${dollars_per_gib:.5} a GiB on the issuer's 1,769 MB arm64 Lambda (GB-seconds only; the ranged GETs, \
         4 a GiB, and progress notes add ~$0.00002), if Graviton hashes as fast as this machine: a figure to confirm \
         on AWS.\n\n",
        runs.max(1),
        lc / tool,
        s2 / tool,
        mid / tool,
    ))
}
