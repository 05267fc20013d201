//! Cold start of each function under an emulated Lambda runtime API: the
//! time from spawning the binary to its first `GET …/invocation/next`, which
//! is when init (config, tracing, backends, AWS clients) is done. Beside it,
//! the same measure for a process that does nothing (`/bin/true` to exit),
//! as the floor of spawning anything on this machine.

use crate::harness::median;
use std::io::{BufRead as _, BufReader};
use std::net::TcpListener;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::Context as _;

const RUNS: usize = 15;

/// Spawns `bin` with the runtime API at a fresh listener and returns how
/// long it took to ask for its first event; `traced`, with an OTLP
/// endpoint set (the template's TracesEndpoint: the exporter made at start,
/// nothing sent before the first invocation ends).
fn init_time(bin: &Path, function: &str, traced: bool) -> anyhow::Result<Duration> {
    let listener = TcpListener::bind("127.0.0.1:0")?;
    let addr = listener.local_addr()?.to_string();
    let start = Instant::now();
    let mut child = Command::new(bin)
        .env_clear()
        .env("AWS_LAMBDA_RUNTIME_API", &addr)
        .env("AWS_LAMBDA_FUNCTION_NAME", function)
        .env("AWS_LAMBDA_FUNCTION_MEMORY_SIZE", "128")
        .env("AWS_LAMBDA_FUNCTION_VERSION", "1")
        .env("AWS_REGION", "us-east-1")
        .env("AWS_ACCESS_KEY_ID", "AKIDBENCH")
        .env("AWS_SECRET_ACCESS_KEY", "bench")
        .env("AWS_EC2_METADATA_DISABLED", "true")
        .env("SLUICE_BACKEND", "aws")
        .env("SLUICE_S3_BUCKET", "bench")
        .env("SLUICE_DYNAMODB_TABLE", "bench")
        .env(
            "SLUICE_MASTER_SECRET",
            "a-bench-master-secret-of-32-bytes-or-more",
        )
        .env("SLUICE_PUBLIC_URL", "https://files.example.com")
        // As deployed: an authorization server's JWKS (fetched on first use).
        .env("SLUICE_AUTH_ISSUER", "https://auth.example.com")
        .env("SLUICE_AUTH_JWKS_URL", "https://auth.example.com/jwks")
        .env("SLUICE_LOG", "warn")
        // As the template sets them: the receipt key, where the function
        // signs (its client is made at start; KMS is called first by the
        // first receipt).
        .envs(signs(function).then_some((
            "SLUICE_RECEIPT_KMS_KEY",
            "arn:aws:kms:us-east-1:123456789012:key/11111111-2222-3333-4444-555555555555",
        )))
        .envs(traced.then_some(("OTEL_EXPORTER_OTLP_ENDPOINT", "http://localhost:4318")))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()?;
    let (stream, _) = listener.accept()?;
    let mut line = String::new();
    BufReader::new(stream).read_line(&mut line)?;
    let elapsed = start.elapsed();
    let _ = child.kill();
    let _ = child.wait();
    anyhow::ensure!(
        line.starts_with("GET /2018-06-01/runtime/invocation/next"),
        "unexpected first request {line:?}"
    );
    Ok(elapsed)
}

/// Whether the template gives `function` the receipt key.
fn signs(function: &str) -> bool {
    matches!(function, "mcp" | "issuer")
}

pub fn run(release_dir: &Path) -> anyhow::Result<String> {
    let floor = median(
        (0..RUNS)
            .map(|_| {
                let start = Instant::now();
                Command::new("true").status().map(|_| start.elapsed())
            })
            .collect::<Result<_, _>>()?,
    );
    use std::fmt::Write as _;
    let mut out = String::new();
    writeln!(out, "\n## Lambda cold start (init) of each function\n")?;
    writeln!(
        out,
        "`target/fast/sluice-bench --only lambda` (after `cargo build --release -p sluice-mcp -p sluice-issuer -p sluice-resolver`): \
         each x86_64 release binary spawned {RUNS} times under an emulated runtime API with the aws backend configured \
         (secret from the environment; with `SLUICE_MASTER_SECRET_ID` a Secrets Manager call is added); the figure is the \
         median time to its first `GET /runtime/invocation/next`, i.e. config load, tracing, AWS client construction and \
         the runtime client; the mcp and issuer functions with the receipt key set, as the template sets it (its KMS \
         client made; KMS itself is first called by the first receipt); beside it, the same with traces on \
         (`OTEL_EXPORTER_OTLP_ENDPOINT` set, as the template's `TracesEndpoint` sets it: the exporter and its thread made \
         at start). Floor: spawning `true` and waiting for it, {:.1} ms.\n",
        floor.as_secs_f64() * 1000.0
    )?;
    writeln!(
        out,
        "| function | init (median) | init − floor | with traces (median) | target ≤ 50 ms |"
    )?;
    writeln!(out, "|---|---|---|---|---|")?;
    for (function, binary) in [
        ("mcp", "sluice-mcp"),
        ("issuer", "sluice-issuer"),
        ("resolver", "sluice-resolver"),
    ] {
        let bin = release_dir.join(binary);
        anyhow::ensure!(
            bin.exists(),
            "{} missing: cargo build --release -p {binary}",
            bin.display()
        );
        // Alternated, so that the machine's drift falls on both alike.
        let (mut plain, mut traced) = (Vec::new(), Vec::new());
        for _ in 0..RUNS {
            plain.push(init_time(&bin, function, false)?);
            traced.push(init_time(&bin, function, true)?);
        }
        let (m, t) = (median(plain), median(traced));
        writeln!(
            out,
            "| {function} | {:.1} ms | {:.1} ms | {:.1} ms | {} |",
            m.as_secs_f64() * 1000.0,
            (m.saturating_sub(floor)).as_secs_f64() * 1000.0,
            t.as_secs_f64() * 1000.0,
            if m.max(t) <= Duration::from_millis(50) {
                "met"
            } else {
                "**missed**"
            }
        )?;
    }
    Ok(out)
}

/// Sizes of the stripped aarch64 `bootstrap` binaries, when they were built.
pub fn sizes(target_dir: &Path) -> anyhow::Result<String> {
    use std::fmt::Write as _;
    let dir = target_dir.join("aarch64-unknown-linux-gnu/release");
    let mut out = String::new();
    writeln!(
        out,
        "\n## Function binary sizes (aarch64, release: opt-level s, lto, codegen-units=1, panic=abort, strip)\n"
    )?;
    writeln!(
        out,
        "Built with `cargo build --release --target aarch64-unknown-linux-gnu -p sluice-mcp -p sluice-issuer -p sluice-resolver` \
         (linker aarch64-linux-gnu-gcc); `sam build` (cargo-lambda) builds the same crates with the same profile and features \
         (no `local`: no SQLite).\n"
    )?;
    writeln!(out, "| function | stripped size | target ≤ 10 MB |")?;
    writeln!(out, "|---|---|---|")?;
    for binary in ["sluice-mcp", "sluice-issuer", "sluice-resolver"] {
        let len = std::fs::metadata(dir.join(binary))
            .with_context(|| format!("{binary} for aarch64 not built"))?
            .len();
        let mb = len as f64 / 1e6;
        writeln!(
            out,
            "| {binary} | {mb:.2} MB | {} |",
            if mb <= 10.0 { "met" } else { "**missed**" }
        )?;
    }
    Ok(out)
}
