//! What operating costs: the same load against two `sluice` processes of
//! the same build, one with webhooks (to a receiver that answers at once)
//! and metrics on, one with both off, in interleaved rounds; each figure is
//! the "on" server's beside the "off" server's of the same round.

use std::fmt::Write as _;

use anyhow::Context as _;

use crate::harness::{self, median};
use crate::kit::{make_file, post, start_refs, start_sluice_with, timed_curl};
use crate::mcp::{mcp_user_headers, tool_call};
use crate::{Args, load};

/// The section: MCP calls (one that writes a pending record, one that
/// stores a file and so emits `file.ready`) and a file up and down.
pub(crate) fn run(args: &Args) -> anyhow::Result<String> {
    let work = tempfile::tempdir()?;
    let size_mib = args.size_mib.min(256);
    let size = size_mib << 20;
    let file = work.path().join("payload.bin");
    let sha = make_file(&file, size)?;
    let file_arg = file.to_str().context("utf-8 path")?.to_owned();
    let (mut refs, discard, _) = start_refs(&file, size)?;
    // One master secret: a token minted once works on both.
    let secret = "bench-operations-master-secret-0123456789abcdef";
    let hook_secret = format!("whsec_{}", "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=");
    let sink = format!("http://{discard}/sink");
    let off = start_sluice_with(
        &work.path().join("off"),
        &[
            ("SLUICE_MASTER_SECRET", secret),
            ("SLUICE_METRICS", "false"),
        ],
    )?;
    let on = start_sluice_with(
        &work.path().join("on"),
        &[
            ("SLUICE_MASTER_SECRET", secret),
            ("SLUICE_WEBHOOK_URL", &sink),
            ("SLUICE_WEBHOOK_SECRET", &hook_secret),
        ],
    )?;
    let requests = (args.requests / 4).max(1000);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let result = rt.block_on(measure(args, requests, [&off, &on], size, &sha, &file_arg));
    let delivered = delivered(&on);
    let _ = refs.kill();
    let _ = refs.wait();
    let rows = result?;
    let delivered = delivered?;

    let mut out = String::new();
    writeln!(
        out,
        "\n## Operating: webhooks and metrics on beside off (local mode)\n"
    )?;
    writeln!(
        out,
        "`target/fast/sluice-bench --only ops --runs {} --requests {}`: two `sluice` processes of the same build, \
         one with `SLUICE_METRICS=false` and no webhooks (**off**), one with metrics on and every event sent to a \
         receiver on loopback that answers at once (**on**: each `file.ready` and `file.downloaded` written to the \
         outbox and delivered, signed); each round runs the same load against both, in turns (the order alternating), \
         and each ratio is the median over the rounds of on beside off in the same round. MCP: {requests} calls a \
         round, 32 keep-alive connections (the MCP section's generator); `upload_small_file` stores a 1 KiB file, \
         so each call also writes its `file.ready` event in the record's transaction; the data plane moves a \
         {size_mib} MiB file up and down with curl.\n",
        args.runs, args.requests,
    )?;
    writeln!(out, "| load | off | on | on / off | target |")?;
    writeln!(out, "|---|---|---|---|---|")?;
    let verdict = |ok: bool| if ok { "met" } else { "**missed**" };
    for row in &rows {
        writeln!(
            out,
            "| {} | {:.0} {} | {:.0} {} | {:.3} | ≥ 0.95: {} |",
            row.what,
            row.off,
            row.unit,
            row.on,
            row.unit,
            row.ratio,
            verdict(row.ratio >= 0.95)
        )?;
    }
    writeln!(
        out,
        "\nEvents the on server delivered during the run (its `sluice_webhook_deliveries_total{{outcome=\"delivered\"}}`): {delivered}. \
         The p99 ratio moves most from run to run: the write-ahead log's checkpoint sets each server's p99 (see the MCP section), \
         and a round holds only {requests} calls."
    )?;
    Ok(out)
}

/// One line of the table.
struct Row {
    what: &'static str,
    unit: &'static str,
    off: f64,
    on: f64,
    ratio: f64,
}

async fn measure(
    args: &Args,
    requests: usize,
    servers: [&crate::kit::Sluice; 2],
    size: u64,
    sha: &sluice::Sha256,
    file: &str,
) -> anyhow::Result<Vec<Row>> {
    // One master secret: the tokens minted by one work on both.
    let headers = mcp_user_headers(servers[0], 1000 + args.runs * requests)?;
    let issue = tool_call(
        "request_upload",
        serde_json::json!({"filename": "report.pdf", "size": 5_000_000, "sha256": sluice::Sha256::of(b"report").to_hex()}),
    );
    let small = vec![7u8; 1024];
    let store = tool_call(
        "upload_small_file",
        serde_json::json!({
            "filename": "note.bin",
            "data_base64": base64_of(&small),
            "sha256": sluice::Sha256::of(&small).to_hex(),
        }),
    );
    let urls = servers.map(|s| format!("{}/mcp", s.base));
    for url in &urls {
        load::run(url, &headers, issue.clone(), 32, 1000, "\"isError\":false").await?;
    }
    // Per round and per server: request_upload rps, its p99 (ms),
    // upload_small_file rps, upload and download seconds.
    let mut rounds: Vec<[[f64; 5]; 2]> = Vec::new();
    for round in 0..args.runs {
        eprintln!("ops: round {} of {}…", round + 1, args.runs);
        let mut this = [[0.0; 5]; 2];
        let order = if round % 2 == 0 { [0, 1] } else { [1, 0] };
        for i in order {
            let l = load::run(
                &urls[i],
                &headers,
                issue.clone(),
                32,
                requests,
                "\"isError\":false",
            )
            .await?;
            this[i][0] = l.rps;
            this[i][1] = l.p99.as_secs_f64() * 1000.0;
            let l = load::run(
                &urls[i],
                &headers,
                store.clone(),
                32,
                requests / 4,
                "\"isError\":false",
            )
            .await?;
            this[i][2] = l.rps;
            let s = servers[i];
            let ticket = post(
                &format!("{}/uploads", s.base),
                &s.token,
                &serde_json::json!({"filename": "payload.bin", "size": size, "sha256": sha}),
            )?;
            this[i][3] = timed_curl(&["-T", file, ticket["upload"]["url"].as_str().unwrap()])?;
            let link = post(
                &format!("{}/resolve", s.base),
                &s.token,
                &serde_json::json!({"handle": ticket["handle"]}),
            )?;
            this[i][4] = timed_curl(&[link["download"]["url"].as_str().unwrap()])?;
        }
        rounds.push(this);
    }
    let med = |k: usize, i: usize| median(rounds.iter().map(|r| r[i][k]).collect());
    let paired = |k: usize, f: fn(f64, f64) -> f64| {
        median(rounds.iter().map(|r| f(r[1][k], r[0][k])).collect())
    };
    let more_is_better = |on: f64, off: f64| on / off;
    let less_is_better = |on: f64, off: f64| off / on;
    let mib = (size >> 20) as f64;
    Ok(vec![
        Row {
            what: "`request_upload` calls/s",
            unit: "/s",
            off: med(0, 0),
            on: med(0, 1),
            ratio: paired(0, more_is_better),
        },
        Row {
            what: "`request_upload` p99 (ratio: off / on)",
            unit: "ms",
            off: med(1, 0),
            on: med(1, 1),
            ratio: paired(1, less_is_better),
        },
        Row {
            what: "`upload_small_file` calls/s (each a `file.ready`)",
            unit: "/s",
            off: med(2, 0),
            on: med(2, 1),
            ratio: paired(2, more_is_better),
        },
        Row {
            what: "upload MiB/s",
            unit: "MiB/s",
            off: mib / med(3, 0),
            on: mib / med(3, 1),
            ratio: paired(3, harness::rate_ratio),
        },
        Row {
            what: "download MiB/s",
            unit: "MiB/s",
            off: mib / med(4, 0),
            on: mib / med(4, 1),
            ratio: paired(4, harness::rate_ratio),
        },
    ])
}

/// What `server` counted as delivered, from its `/metrics`.
fn delivered(server: &crate::kit::Sluice) -> anyhow::Result<f64> {
    // Deliveries trail the load by a poll or two.
    std::thread::sleep(std::time::Duration::from_secs(2));
    let out = std::process::Command::new("curl")
        .args(["-sS", "--fail-with-body"])
        .arg(format!("{}/metrics", server.base))
        .output()?;
    anyhow::ensure!(out.status.success(), "GET /metrics failed");
    Ok(String::from_utf8(out.stdout)?
        .lines()
        .filter(|l| {
            l.starts_with("sluice_webhook_deliveries_total{") && l.contains("outcome=\"delivered\"")
        })
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum())
}

/// Standard base64 of `bytes`.
fn base64_of(bytes: &[u8]) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.encode(bytes)
}
