//! `make soak`: the local server under mixed load for a bounded time, on
//! loopback only. Well-formed traffic (uploads with their exact bytes,
//! downloads compared byte for byte, MCP calls) runs beside hostile traffic
//! (stalled upload bodies, replayed links, forged and missing tokens). The
//! soak fails on any 5xx answer to a well-formed request or any transfer that
//! is not byte-exact; it reports the server's RSS and open file descriptors
//! over time, which must be flat after warm-up.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};
use bytes::Bytes;
use http_body_util::{BodyExt as _, Full};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use serde_json::{Value, json};
use tokio::io::AsyncWriteExt as _;

use crate::kit::{memory_kib, start_sluice_with};

type Http = Client<HttpConnector, Full<Bytes>>;

/// What the soak counted.
#[derive(Default)]
struct Counts {
    /// Well-formed requests sent.
    requests: AtomicU64,
    /// 5xx answers to well-formed requests: must stay 0.
    server_errors: AtomicU64,
    /// Round trips whose downloaded bytes differed: must stay 0.
    mismatches: AtomicU64,
    /// Files uploaded and downloaded back.
    transfers: AtomicU64,
    /// Hostile requests sent (each refused as it should be, or counted below).
    hostile: AtomicU64,
    /// Hostile requests answered other than as they should have been.
    hostile_wrong: AtomicU64,
    /// Stalled bodies the server closed on its own.
    stalls_closed: AtomicU64,
}

struct Target {
    http: Http,
    base: String,
    token: String,
    counts: Counts,
    stop: AtomicBool,
}

impl Target {
    async fn send(
        &self,
        method: &str,
        url: &str,
        headers: &[(&str, &str)],
        body: Bytes,
    ) -> anyhow::Result<(u16, hyper::HeaderMap, Bytes)> {
        let mut req = hyper::Request::builder().method(method).uri(url);
        for (k, v) in headers {
            req = req.header(*k, *v);
        }
        let response = tokio::time::timeout(
            Duration::from_secs(60),
            self.http.request(req.body(Full::new(body))?),
        )
        .await
        .context("no answer within 60 s")??;
        let status = response.status().as_u16();
        let headers = response.headers().clone();
        let body = response.into_body().collect().await?.to_bytes();
        Ok((status, headers, body))
    }

    /// A well-formed request: a 5xx is counted as a failure of the soak.
    async fn good(
        &self,
        method: &str,
        url: &str,
        headers: &[(&str, &str)],
        body: Bytes,
    ) -> anyhow::Result<(u16, hyper::HeaderMap, Bytes)> {
        self.counts.requests.fetch_add(1, Ordering::Relaxed);
        let answer = self.send(method, url, headers, body).await?;
        if answer.0 >= 500 {
            self.counts.server_errors.fetch_add(1, Ordering::Relaxed);
            eprintln!(
                "5xx to a well-formed {method} {}: {} {}",
                url.split('?')
                    .next()
                    .unwrap_or(url)
                    .chars()
                    .take(60)
                    .collect::<String>(),
                answer.0,
                String::from_utf8_lossy(&answer.2[..answer.2.len().min(200)])
            );
        }
        Ok(answer)
    }

    async fn post_json(&self, path: &str, body: &Value) -> anyhow::Result<(u16, Value)> {
        let auth = format!("Bearer {}", self.token);
        let (status, _, bytes) = self
            .good(
                "POST",
                &format!("{}{path}", self.base),
                &[
                    ("Authorization", &auth),
                    ("Content-Type", "application/json"),
                    ("Accept", "application/json, text/event-stream"),
                ],
                Bytes::from(body.to_string()),
            )
            .await?;
        Ok((
            status,
            serde_json::from_slice(&bytes).unwrap_or(Value::Null),
        ))
    }

    async fn hostile(&self, method: &str, url: &str, headers: &[(&str, &str)], expect: u16) {
        self.counts.hostile.fetch_add(1, Ordering::Relaxed);
        match self.send(method, url, headers, Bytes::new()).await {
            Ok((status, _, _)) if status == expect => {}
            _ => {
                self.counts.hostile_wrong.fetch_add(1, Ordering::Relaxed);
            }
        }
    }
}

fn payload(len: usize, seed: u64) -> Bytes {
    sluice_testkit::bytes(len, seed).into()
}

/// Upload a file, download it back, compare, replay the spent link.
async fn round_trip(t: &Target, seed: u64) -> anyhow::Result<()> {
    let len = 1024 + (seed as usize * 7919) % (256 * 1024);
    let data = payload(len, seed);
    let sha = sluice::Sha256::of(&data);
    let (status, ticket) = t
        .post_json(
            "/uploads",
            &json!({"filename": format!("soak {seed}.bin"), "size": len, "sha256": sha}),
        )
        .await?;
    if status != 200 {
        bail!("POST /uploads: {status} {ticket}");
    }
    let url = ticket["upload"]["url"].as_str().context("upload url")?;
    let (status, _, body) = t
        .good(
            "PUT",
            url,
            &[("Content-Type", "application/octet-stream")],
            data.clone(),
        )
        .await?;
    if status != 200 {
        bail!("PUT: {status} {}", String::from_utf8_lossy(&body));
    }
    let (status, download) = t
        .post_json("/resolve", &json!({"handle": ticket["handle"]}))
        .await?;
    if status != 200 {
        bail!("POST /resolve: {status} {download}");
    }
    let link = download["download"]["url"]
        .as_str()
        .context("download url")?;
    let (status, _, got) = t.good("GET", link, &[], Bytes::new()).await?;
    if status != 200 || got != data {
        t.counts.mismatches.fetch_add(1, Ordering::Relaxed);
        bail!(
            "download of {len} bytes: {status}, {} bytes back",
            got.len()
        );
    }
    t.counts.transfers.fetch_add(1, Ordering::Relaxed);
    // Hostile: the same link again, and a tampered one.
    t.hostile("GET", link, &[], 404).await;
    let tampered = format!("{}x", &link[..link.len() - 1]);
    t.hostile("GET", &tampered, &[], 404).await;
    Ok(())
}

async fn mcp_calls(t: &Target, seed: u64) -> anyhow::Result<()> {
    let call = |id: u64, name: &str, arguments: Value| {
        json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
               "params": {"name": name, "arguments": arguments}})
    };
    for message in [
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "soak", "version": "1"}}}),
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}),
        call(3, "list_files", json!({})),
        call(
            4,
            "request_upload",
            json!({"filename": format!("mcp {seed}.txt"), "size": 5,
                   "sha256": sluice::Sha256::of(b"hello")}),
        ),
    ] {
        let (status, answer) = t.post_json("/mcp", &message).await?;
        if status != 200 || answer.get("error").is_some() {
            bail!("MCP {}: {status} {answer}", message["method"]);
        }
    }
    // Hostile: a forged token, and none at all.
    let mcp = format!("{}/mcp", t.base);
    t.hostile(
        "POST",
        &mcp,
        &[("Authorization", "Bearer eyJhbGciOiJub25lIn0.e30.")],
        401,
    )
    .await;
    t.hostile("POST", &mcp, &[], 401).await;
    Ok(())
}

/// Opens an upload, sends part of its body, and waits for the server to
/// close the connection on its own (the body idle timeout).
async fn stalled_body(t: &Target, seed: u64) -> anyhow::Result<()> {
    let len = 64 * 1024;
    let (status, ticket) = t
        .post_json(
            "/uploads",
            &json!({"filename": format!("stall {seed}.bin"), "size": len,
                    "sha256": sluice::Sha256::of(&payload(len, seed))}),
        )
        .await?;
    if status != 200 {
        bail!("POST /uploads: {status}");
    }
    let url: hyper::Uri = ticket["upload"]["url"].as_str().context("url")?.parse()?;
    let authority = url.authority().context("authority")?.as_str().to_owned();
    let mut stream = tokio::net::TcpStream::connect(&authority).await?;
    let head = format!(
        "PUT {} HTTP/1.1\r\nHost: {authority}\r\nContent-Type: application/octet-stream\r\nContent-Length: {len}\r\n\r\n",
        url.path()
    );
    stream.write_all(head.as_bytes()).await?;
    stream.write_all(&[0u8; 100]).await?;
    t.counts.hostile.fetch_add(1, Ordering::Relaxed);
    let mut buf = [0u8; 4096];
    let closed = tokio::time::timeout(Duration::from_secs(120), async {
        use tokio::io::AsyncReadExt as _;
        loop {
            match stream.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(_) => {}
            }
        }
    })
    .await;
    match closed {
        Ok(()) => t.counts.stalls_closed.fetch_add(1, Ordering::Relaxed),
        Err(_) => t.counts.hostile_wrong.fetch_add(1, Ordering::Relaxed),
    };
    Ok(())
}

/// A download opened and never read: the server must cut it off (the
/// write timeout) rather than hold its slot for ever.
async fn stalled_download(t: &Target, seed: u64) -> anyhow::Result<()> {
    let len = 8 << 20;
    let data = payload(len, seed);
    let (status, ticket) = t
        .post_json(
            "/uploads",
            &json!({"filename": format!("big {seed}.bin"), "size": len,
                    "sha256": sluice::Sha256::of(&data)}),
        )
        .await?;
    if status != 200 {
        bail!("POST /uploads: {status} {ticket}");
    }
    let url = ticket["upload"]["url"].as_str().context("upload url")?;
    let (status, _, _) = t.good("PUT", url, &[], data).await?;
    if status != 200 {
        bail!("PUT: {status}");
    }
    let (status, download) = t
        .post_json("/resolve", &json!({"handle": ticket["handle"]}))
        .await?;
    if status != 200 {
        bail!("POST /resolve: {status} {download}");
    }
    let link: hyper::Uri = download["download"]["url"]
        .as_str()
        .context("link")?
        .parse()?;
    let authority = link.authority().context("authority")?.as_str().to_owned();
    let mut stream = tokio::net::TcpStream::connect(&authority).await?;
    let head = format!("GET {} HTTP/1.1\r\nHost: {authority}\r\n\r\n", link.path());
    stream.write_all(head.as_bytes()).await?;
    t.counts.hostile.fetch_add(1, Ordering::Relaxed);
    // Read nothing; the server must give up on its own.
    let closed = tokio::time::timeout(Duration::from_secs(120), async {
        use tokio::io::AsyncReadExt as _;
        let mut buf = [0u8; 1];
        // Peek at the answer's start only once the write timeout has passed.
        tokio::time::sleep(Duration::from_secs(8)).await;
        let mut rest = Vec::new();
        let _ = stream.read(&mut buf).await;
        let _ = stream.read_to_end(&mut rest).await;
    })
    .await;
    match closed {
        Ok(()) => t.counts.stalls_closed.fetch_add(1, Ordering::Relaxed),
        Err(_) => t.counts.hostile_wrong.fetch_add(1, Ordering::Relaxed),
    };
    Ok(())
}

/// A request body trickled: headers, a few bytes, then nothing. The server
/// must answer at its body read timeout, without the body.
async fn trickled_body(t: &Target, _seed: u64) -> anyhow::Result<()> {
    let base: hyper::Uri = t.base.parse()?;
    let authority = base.authority().context("authority")?.as_str().to_owned();
    let mut stream = tokio::net::TcpStream::connect(&authority).await?;
    let head = format!(
        "POST /uploads HTTP/1.1\r\nHost: {authority}\r\nAuthorization: Bearer {}\r\n\
         Content-Type: application/json\r\nContent-Length: 500\r\n\r\n{{\"filename\":",
        t.token
    );
    stream.write_all(head.as_bytes()).await?;
    t.counts.hostile.fetch_add(1, Ordering::Relaxed);
    let answered = tokio::time::timeout(Duration::from_secs(60), async {
        use tokio::io::AsyncReadExt as _;
        let mut got = Vec::new();
        let _ = stream.read_to_end(&mut got).await;
        got
    })
    .await;
    let ok = matches!(&answered, Ok(got) if got.starts_with(b"HTTP/1.1 400") || got.starts_with(b"HTTP/1.1 408"));
    if !ok {
        t.counts.hostile_wrong.fetch_add(1, Ordering::Relaxed);
    }
    Ok(())
}

/// An action naming one handle 101 times, and a page started in a flood:
/// each must be refused in words (a tool error, 429), never served or a 5xx.
async fn repeats_and_floods(t: &Target, seed: u64) -> anyhow::Result<()> {
    let call = |name: &str, arguments: Value| {
        json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
               "params": {"name": name, "arguments": arguments}})
    };
    let (status, stored) = t
        .post_json(
            "/mcp",
            &call(
                "upload_small_file",
                json!({"filename": format!("r {seed}.txt"),
                "data_base64": "aGk=", "sha256": sluice::Sha256::of(b"hi")}),
            ),
        )
        .await?;
    let handle = stored["result"]["structuredContent"]["handle"].clone();
    if status != 200 || !handle.is_string() {
        bail!("upload_small_file: {status} {stored}");
    }
    let extras = vec![handle.clone(); 101];
    t.counts.hostile.fetch_add(1, Ordering::Relaxed);
    let (status, answer) = t
        .post_json(
            "/mcp",
            &call(
                "action_attach_document",
                json!({"review_id": 1, "document": handle, "extras": extras}),
            ),
        )
        .await?;
    if status != 200 || answer["result"]["isError"] != true {
        t.counts.hostile_wrong.fetch_add(1, Ordering::Relaxed);
    }
    let (status, page) = t
        .post_json("/mcp", &call("request_browser_upload", json!({})))
        .await?;
    let page_url = page["result"]["structuredContent"]["page_url"]
        .as_str()
        .context("page")?;
    if status != 200 {
        bail!("request_browser_upload: {status}");
    }
    let start = json!({"filename": "flood.bin", "size": 4, "sha256": sluice::Sha256::of(b"scan")});
    let mut limited = false;
    for _ in 0..8 {
        t.counts.hostile.fetch_add(1, Ordering::Relaxed);
        let (status, _, _) = t
            .send(
                "POST",
                &format!("{page_url}/start"),
                &[("Content-Type", "application/json")],
                Bytes::from(start.to_string()),
            )
            .await?;
        match status {
            200 => {}
            429 => limited = true,
            _ => {
                t.counts.hostile_wrong.fetch_add(1, Ordering::Relaxed);
            }
        }
    }
    if !limited {
        t.counts.hostile_wrong.fetch_add(1, Ordering::Relaxed);
    }
    Ok(())
}

/// Runs `job` in a loop until the soak stops; an error ends the soak.
fn worker<F, Fut>(
    t: Arc<Target>,
    first_seed: u64,
    step: u64,
    job: F,
) -> tokio::task::JoinHandle<anyhow::Result<()>>
where
    F: Fn(Arc<Target>, u64) -> Fut + Send + 'static,
    Fut: std::future::Future<Output = anyhow::Result<()>> + Send,
{
    tokio::spawn(async move {
        let mut seed = first_seed;
        while !t.stop.load(Ordering::Relaxed) {
            job(t.clone(), seed).await?;
            seed += step;
        }
        Ok(())
    })
}

fn open_fds(pid: u32) -> anyhow::Result<usize> {
    Ok(std::fs::read_dir(format!("/proc/{pid}/fd"))?.count())
}

/// Runs the soak for `secs` and returns its section of BENCHMARKS.md.
pub async fn run(secs: u64) -> anyhow::Result<String> {
    let work = tempfile::tempdir()?;
    // Short lifetimes, so the sweep runs and the store stays small.
    let sluice = start_sluice_with(
        work.path(),
        &[
            ("SLUICE_HANDLE_TTL_SECS", "60"),
            ("SLUICE_UPLOAD_TTL_SECS", "60"),
            ("SLUICE_LINK_TTL_SECS", "30"),
            ("SLUICE_BODY_IDLE_TIMEOUT_SECS", "5"),
            ("SLUICE_BODY_READ_TIMEOUT_SECS", "5"),
            ("SLUICE_WRITE_TIMEOUT_SECS", "5"),
            // One user, always with stalled bodies pending.
            ("SLUICE_MAX_PENDING_FILES", "1000000"),
        ],
    )?;
    let pid = sluice.process.id();
    let http: Http = Client::builder(TokioExecutor::new())
        .pool_idle_timeout(Duration::from_secs(5))
        .build_http();
    let t = Arc::new(Target {
        http,
        base: sluice.base.clone(),
        token: sluice.token.clone(),
        counts: Counts::default(),
        stop: AtomicBool::new(false),
    });
    let mut workers = Vec::new();
    for i in 0..4 {
        workers.push(worker(t.clone(), i, 4, |t, s| async move {
            round_trip(&t, s).await
        }));
    }
    for i in 0..2 {
        workers.push(worker(t.clone(), i, 2, |t, s| async move {
            mcp_calls(&t, s).await
        }));
    }
    for i in 0..16 {
        workers.push(worker(t.clone(), 1_000_000 + i, 16, |t, s| async move {
            stalled_body(&t, s).await
        }));
    }
    for i in 0..2 {
        workers.push(worker(t.clone(), 2_000_000 + i, 2, |t, s| async move {
            stalled_download(&t, s).await
        }));
    }
    for i in 0..4 {
        workers.push(worker(t.clone(), 3_000_000 + i, 4, |t, s| async move {
            trickled_body(&t, s).await
        }));
    }
    workers.push(worker(t.clone(), 4_000_000, 1, |t, s| async move {
        repeats_and_floods(&t, s).await
    }));

    let start = Instant::now();
    let mut samples = Vec::new();
    let every = Duration::from_secs(10);
    while start.elapsed() < Duration::from_secs(secs) {
        tokio::time::sleep(every).await;
        if let Some(done) = workers.iter().position(|w| w.is_finished()) {
            let w = workers.remove(done);
            w.await??;
            bail!("a soak worker ended early");
        }
        let (_, rss) = memory_kib(pid)?;
        let fds = open_fds(pid)?;
        let elapsed = start.elapsed().as_secs();
        eprintln!(
            "soak {elapsed:>4} s: RSS {:.1} MiB, {fds} fds, {} requests, {} transfers, {} 5xx",
            rss as f64 / 1024.0,
            t.counts.requests.load(Ordering::Relaxed),
            t.counts.transfers.load(Ordering::Relaxed),
            t.counts.server_errors.load(Ordering::Relaxed),
        );
        samples.push((elapsed, rss, fds));
    }
    t.stop.store(true, Ordering::Relaxed);
    for w in workers {
        w.await??;
    }

    let c = &t.counts;
    let load = |a: &AtomicU64| a.load(Ordering::Relaxed);
    if load(&c.server_errors) > 0 || load(&c.mismatches) > 0 || load(&c.hostile_wrong) > 0 {
        bail!(
            "soak failed: {} 5xx to well-formed requests, {} transfers not byte-exact, \
             {} hostile requests not refused as they should be",
            load(&c.server_errors),
            load(&c.mismatches),
            load(&c.hostile_wrong)
        );
    }
    // Warm-up: the first minute (or a sixth of a shorter soak).
    let warm = (secs / 6).min(60);
    let after: Vec<_> = samples.iter().filter(|s| s.0 >= warm).collect();
    let first = after.first().context("no samples after warm-up")?;
    let last_third = &after[after.len() * 2 / 3..];
    let mean = |f: &dyn Fn(&&(u64, u64, usize)) -> f64| {
        last_third.iter().map(f).sum::<f64>() / last_third.len() as f64
    };
    let (rss_end, fds_end) = (mean(&|s| s.1 as f64), mean(&|s| s.2 as f64));
    let max_rss = after.iter().map(|s| s.1).max().unwrap_or(0);
    let max_fds = after.iter().map(|s| s.2).max().unwrap_or(0);
    let mib = |kib: f64| kib / 1024.0;
    let mut report = String::from("## Soak\n\n");
    report.push_str(&format!(
        "`make soak` (`target/fast/sluice-bench --soak {secs}`): the local server for {} min \
         under 4 upload→download→replay loops, 2 MCP loops (initialize, tools/list, \
         list_files, request_upload, then a forged and a missing token), 16 stalled \
         upload bodies at all times (closed by the 5 s body idle timeout), 2 loops that \
         upload 8 MiB and open its download without reading it (cut off by the 5 s write \
         timeout), 4 loops trickling a request body (answered at the 5 s body read \
         deadline), and one naming a handle 101 times in an action and starting a browser \
         page 8 times (refused, and 429 past its burst), loopback only.\n\n",
        secs / 60
    ));
    report.push_str("| figure | value |\n|---|---|\n");
    report.push_str(&format!(
        "| well-formed requests | {} |\n| 5xx among them | {} |\n| files uploaded and downloaded back, byte-exact | {} |\n\
         | hostile requests (replays, tampered links, forged or missing tokens, stalled bodies, downloads never read, trickled bodies, a handle repeated 101 times, page-start floods) | {} |\n\
         | hostile requests answered wrongly | {} |\n| stalled bodies closed by the server | {} |\n",
        load(&c.requests),
        load(&c.server_errors),
        load(&c.transfers),
        load(&c.hostile),
        load(&c.hostile_wrong),
        load(&c.stalls_closed),
    ));
    report.push_str(&format!(
        "| RSS after warm-up ({warm} s) → mean of the last third | {:.1} MiB → {:.1} MiB (ratio {:.2}; peak {:.1} MiB) |\n\
         | open fds after warm-up → mean of the last third | {} → {:.0} (peak {max_fds}) |\n\n",
        mib(first.1 as f64),
        mib(rss_end),
        rss_end / first.1 as f64,
        mib(max_rss as f64),
        first.2,
        fds_end,
    ));
    report.push_str("Samples every 10 s (seconds, RSS MiB, open fds):\n\n```\n");
    for (s, rss, fds) in &samples {
        report.push_str(&format!("{s:>5} {:>7.1} {fds:>5}\n", mib(*rss as f64)));
    }
    report.push_str("```\n\n");
    drop(sluice);
    Ok(report)
}
