//! What exporting traces costs (issue 69): `tools/call request_upload` and
//! a 1 GiB upload through the returned line on a server exporting every
//! span over OTLP/HTTP (to a receiver on loopback that decodes each batch
//! with the official `opentelemetry-proto`) beside the same server without,
//! rounds interleaved, as ratios.

use std::io::{BufRead as _, BufReader};
use std::process::{Child, Command, Stdio};

use anyhow::Context as _;

use crate::actions::call_tool;
use crate::harness::median;
use crate::kit::{Sluice, start_sluice, start_sluice_with, timed_sh};
use crate::mcp::{cpu_measured, mcp_user_headers, tool_call};
use crate::{Args, load};

/// The receiver (`tests/clients/otlp_receiver.py`) and its endpoint; what
/// it prints is read and dropped.
fn receiver() -> anyhow::Result<(Child, String)> {
    let root = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut child = Command::new(root.join(".venv/bin/python"))
        .arg(root.join("tests/clients/otlp_receiver.py"))
        .stdout(Stdio::piped())
        .spawn()
        .context("the receiver (run `make clients` first)")?;
    let mut lines = BufReader::new(child.stdout.take().context("stdout")?).lines();
    let first = lines.next().context("the receiver's port")??;
    let port = first.trim().trim_start_matches("listening on ").to_owned();
    std::thread::spawn(move || lines.map_while(Result::ok).for_each(drop));
    Ok((child, format!("http://127.0.0.1:{port}")))
}

pub(crate) async fn run(args: &Args) -> anyhow::Result<String> {
    let work = tempfile::tempdir()?;
    let (mut receiver, endpoint) = receiver()?;
    let off = start_sluice(&work.path().join("off"))?;
    let on = start_sluice_with(
        &work.path().join("on"),
        &[("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint.as_str())],
    )?;
    let result = measure(args, &off, &on, work.path()).await;
    let _ = receiver.kill();
    let _ = receiver.wait();
    result
}

async fn measure(
    args: &Args,
    off: &Sluice,
    on: &Sluice,
    dir: &std::path::Path,
) -> anyhow::Result<String> {
    let upload = tool_call(
        "request_upload",
        serde_json::json!({"filename": "report.pdf", "size": 5_000_000, "sha256": sluice::Sha256::of(b"report").to_hex()}),
    );
    let c = args.concurrency;
    let mut calls: [Vec<_>; 2] = [Vec::new(), Vec::new()];
    let headers = [
        mcp_user_headers(off, 1000 + args.runs * args.requests)?,
        mcp_user_headers(on, 1000 + args.runs * args.requests)?,
    ];
    let servers = [off, on];
    for (server, headers) in servers.iter().zip(&headers) {
        let url = format!("{}/mcp", server.base);
        load::run(&url, headers, upload.clone(), c, 1000, "\"isError\":false").await?;
    }
    for round in 0..args.runs {
        eprintln!(
            "traces: request_upload round {} of {}…",
            round + 1,
            args.runs
        );
        for (i, (server, headers)) in servers.iter().zip(&headers).enumerate() {
            let url = format!("{}/mcp", server.base);
            let load = load::run(
                &url,
                headers,
                upload.clone(),
                c,
                args.requests,
                "\"isError\":false",
            );
            calls[i].push(cpu_measured(server.process.id(), args.requests, load).await?);
        }
    }
    // A 1 GiB upload through the line, on each.
    let size: u64 = 1 << 30;
    let src = dir.join("src");
    std::fs::create_dir_all(&src)?;
    let sha = crate::kit::make_file(&src.join("big.bin"), size)?;
    let mut uploads: [Vec<f64>; 2] = [Vec::new(), Vec::new()];
    for round in 0..args.runs.min(3) {
        eprintln!(
            "traces: 1 GiB upload round {} of {}…",
            round + 1,
            args.runs.min(3)
        );
        for (i, server) in servers.iter().enumerate() {
            let (result, _) = call_tool(
                &server.base,
                &server.token,
                "request_upload",
                serde_json::json!({"filename": "big.bin", "size": size, "sha256": sha}),
            )?;
            let line = result["structuredContent"]["command"]
                .as_str()
                .context("command")?;
            uploads[i].push(timed_sh(line, &src)?);
        }
    }
    let rps = |i: usize| median(calls[i].iter().map(|m| m.load.rps).collect());
    let p99 = |i: usize| {
        median(
            calls[i]
                .iter()
                .map(|m| m.load.p99.as_secs_f64() * 1000.0)
                .collect(),
        )
    };
    let cpu = |i: usize| median(calls[i].iter().map(|m| m.server_us).collect());
    let secs = |i: usize| median(uploads[i].clone());
    let mib_s = |i: usize| size as f64 / (1 << 20) as f64 / secs(i);

    use std::fmt::Write as _;
    let mut out = String::new();
    writeln!(out, "\n## Traces: what exporting them costs\n")?;
    writeln!(
        out,
        "`target/fast/sluice-bench --only traces --runs {} --requests {} --concurrency {c}`: two sluice \
         processes, one exporting every span over OTLP/HTTP (`OTEL_EXPORTER_OTLP_ENDPOINT`, the SDK's \
         default batches) to a receiver on loopback that decodes each batch with the official \
         `opentelemetry-proto` (`tests/clients/otlp_receiver.py`), one without; the MCP load of the \
         `mcp` section ({} requests a round after 1,000 warm-up requests each) and a 1 GiB upload through \
         the returned line, rounds interleaved; medians.\n",
        args.runs, args.requests, args.requests
    )?;
    writeln!(out, "| | traces off | traces on | on / off |")?;
    writeln!(out, "|---|---|---|---|")?;
    writeln!(
        out,
        "| `request_upload`, requests/s | {:.0} | {:.0} | {:.2} |",
        rps(0),
        rps(1),
        rps(1) / rps(0)
    )?;
    writeln!(
        out,
        "| `request_upload`, p99 ms | {:.2} | {:.2} | {:.2} |",
        p99(0),
        p99(1),
        p99(1) / p99(0)
    )?;
    writeln!(
        out,
        "| `request_upload`, server CPU µs a request | {:.0} | {:.0} | {:.2} |",
        cpu(0),
        cpu(1),
        cpu(1) / cpu(0)
    )?;
    writeln!(
        out,
        "| 1 GiB upload through the line, MiB/s | {:.0} | {:.0} | {:.2} |",
        mib_s(0),
        mib_s(1),
        mib_s(1) / mib_s(0)
    )?;
    writeln!(
        out,
        "\nA traced `request_upload` makes two spans (the request's, the tool call's) and writes the \
         trace's context into the file's record; the upload makes one span a request for its bytes. \
         The batches leave from the SDK's own thread, on the exporter's own small runtime: no request \
         waits on the collector. The receiver decodes every batch on the same 2 cores as both servers and \
         the load generator, so part of the rate's drop is its CPU, not sluice's; sluice's own cost is the \
         server CPU's row (spans only: the log's events stay out of the trace, and no span carries a source \
         location or a thread, which cost 40 µs more a request when they did)."
    )?;
    Ok(out)
}
