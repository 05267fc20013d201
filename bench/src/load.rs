//! A closed-loop HTTP load generator: `concurrency` workers on keep-alive
//! connections send the same POST until `requests` have completed, recording
//! each latency; request `i` carries the header set `i % sets` (one set per
//! user, for a server that keeps per-user state). The same generator drives
//! sluice and its reference.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};
use bytes::Bytes;
use http_body_util::{BodyExt as _, Full};
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;

/// What one load run measured.
#[derive(Debug, Clone, Copy)]
pub struct Load {
    /// Completed requests per second.
    pub rps: f64,
    /// Median latency.
    pub p50: Duration,
    /// 99th-percentile latency.
    pub p99: Duration,
}

/// Sends `requests` POSTs of `body` to `url`, `concurrency` at a time, the
/// `i`th with `headers[i % headers.len()]`. Every answer must be a 200 whose
/// body contains `expect`.
pub async fn run(
    url: &str,
    headers: &[Vec<(String, String)>],
    body: Bytes,
    concurrency: usize,
    requests: usize,
    expect: &'static str,
) -> anyhow::Result<Load> {
    let client: Client<_, Full<Bytes>> = Client::builder(TokioExecutor::new())
        .pool_max_idle_per_host(concurrency)
        .build_http();
    let uri: hyper::Uri = url.parse()?;
    let next = Arc::new(AtomicUsize::new(0));
    let start = Instant::now();
    let mut workers = Vec::new();
    for _ in 0..concurrency {
        let (client, uri, next, body) = (client.clone(), uri.clone(), next.clone(), body.clone());
        let headers = headers.to_vec();
        anyhow::ensure!(!headers.is_empty(), "at least one header set");
        workers.push(tokio::spawn(async move {
            let mut latencies = Vec::new();
            loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= requests {
                    break;
                }
                let mut req = hyper::Request::post(uri.clone());
                for (k, v) in &headers[i % headers.len()] {
                    req = req.header(k, v);
                }
                let req = req.body(Full::new(body.clone()))?;
                let sent = Instant::now();
                let response = client.request(req).await?;
                let status = response.status();
                let bytes = response.into_body().collect().await?.to_bytes();
                latencies.push(sent.elapsed());
                if status != 200 || !bytes.windows(expect.len()).any(|w| w == expect.as_bytes()) {
                    bail!(
                        "unexpected answer {status}: {}",
                        String::from_utf8_lossy(&bytes[..bytes.len().min(300)])
                    );
                }
            }
            Ok::<_, anyhow::Error>(latencies)
        }));
    }
    let mut latencies = Vec::with_capacity(requests);
    for w in workers {
        latencies.extend(w.await.context("worker")??);
    }
    let elapsed = start.elapsed();
    latencies.sort();
    let pick = |q: f64| latencies[((latencies.len() as f64 * q) as usize).min(latencies.len() - 1)];
    Ok(Load {
        rps: latencies.len() as f64 / elapsed.as_secs_f64(),
        p50: pick(0.50),
        p99: pick(0.99),
    })
}
