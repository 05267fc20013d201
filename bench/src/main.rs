//! `make bench`: sluice's data plane beside two reference servers started in
//! the same run, every figure reported as a ratio to its reference, because
//! this machine is shared and noisy and only same-run ratios mean anything.

mod actions;
mod backends;
mod batch;
mod browser;
mod data;
mod harness;
mod import;
mod kit;
mod lambda;
mod load;
mod mcp;
mod ops;
mod out;
mod parts;
mod peer;
mod pick;
mod receipts;
mod refs;
mod scale;
mod scan;
mod soak;
mod traces;

use std::path::{Path, PathBuf};

use anyhow::Context as _;

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
    #[arg(long, value_parser = ["data", "actions", "mcp", "backends", "browser", "scale", "lambda", "hash", "parts", "parts-vs-put", "resume", "peer", "pick", "batch", "ops", "import", "scan", "out", "receipts", "traces"])]
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
        report.push_str(&data::run(&args)?);
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
    if wants("receipts") {
        report.push_str(&receipts::run(args.runs)?);
    }
    if wants("out") {
        report.push_str(&out::run(args.runs.min(3))?);
    }
    if wants("ops") {
        report.push_str(&ops::run(&args)?);
    }
    if wants("import") {
        report.push_str(&import::run(&args)?);
    }
    if wants("scan") {
        report.push_str(&scan::run(args.runs)?);
    }
    if wants("actions") {
        report.push_str(&actions::run(&args)?);
    }
    if wants("mcp") {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()?;
        report.push_str(&rt.block_on(mcp::run(&args))?);
    }
    if wants("traces") {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()?;
        report.push_str(&rt.block_on(traces::run(&args))?);
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
    if wants("pick") {
        report.push_str(&pick::run(args.runs.min(3))?);
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
