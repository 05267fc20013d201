//! `GET /metrics`: the process's metrics in the Prometheus text format,
//! rendered by `metrics-exporter-prometheus` from what the service counts
//! ([`sluice::telemetry`]). With `SLUICE_METRICS_TOKEN`, whoever presents
//! it as a bearer token. Without it, loopback peers only, and only while
//! the server's public URL is loopback too: behind a proxy on the same
//! host (how a public URL is usually served) every peer is loopback, so a
//! public server's metrics always need the token.

use std::net::SocketAddr;
use std::sync::Arc;

use axum::Router;
use axum::extract::{ConnectInfo, Request, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use metrics_exporter_prometheus::{BuildError, Matcher, PrometheusBuilder, PrometheusHandle};
use sluice::keys::MasterSecret;
use sluice::telemetry;

/// Installs the process's Prometheus recorder (once per process: a second
/// is refused).
pub fn install() -> Result<PrometheusHandle, BuildError> {
    let handle = PrometheusBuilder::new()
        .set_buckets_for_metric(
            Matcher::Full(telemetry::TOOL_SECONDS.to_owned()),
            telemetry::SECONDS_BUCKETS,
        )?
        .set_buckets_for_metric(
            Matcher::Full(telemetry::SCAN_SECONDS.to_owned()),
            telemetry::SCAN_SECONDS_BUCKETS,
        )?
        .install_recorder()?;
    telemetry::describe();
    Ok(handle)
}

#[derive(Clone)]
struct Metrics {
    handle: PrometheusHandle,
    token: Option<Arc<MasterSecret>>,
    public: bool,
}

/// The `/metrics` route over `handle`, guarded by `token` when set; with
/// none, answered only while `public` is false (the public URL is
/// loopback) and to loopback peers.
pub fn router(handle: PrometheusHandle, token: Option<MasterSecret>, public: bool) -> Router {
    Router::new()
        .route("/metrics", get(render))
        .with_state(Metrics {
            handle,
            token: token.map(Arc::new),
            public,
        })
}

/// Whether `url` (the public URL) is reached from beyond this machine: any
/// host but `localhost` and a loopback address.
pub fn is_public(url: Option<&url::Url>) -> bool {
    url.is_some_and(|u| !sluice::actions::loopback_host(u))
}

async fn render(State(metrics): State<Metrics>, request: Request) -> Response {
    let peer = request.extensions().get::<ConnectInfo<SocketAddr>>();
    let bearer = request
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "));
    let peer = peer.map(|p| p.0).filter(|_| !metrics.public);
    if !allowed(metrics.token.as_deref(), peer, bearer) {
        let message = match (&metrics.token, metrics.public) {
            (Some(_), _) => "metrics need the bearer token SLUICE_METRICS_TOKEN sets",
            (None, true) => {
                "metrics of a server with a public URL need SLUICE_METRICS_TOKEN (a proxy in front makes every peer loopback)"
            }
            (None, false) => {
                "metrics answer loopback peers only; set SLUICE_METRICS_TOKEN to scrape from elsewhere"
            }
        };
        return (StatusCode::FORBIDDEN, message).into_response();
    }
    (
        [(
            header::CONTENT_TYPE,
            "text/plain; version=0.0.4; charset=utf-8",
        )],
        metrics.handle.render(),
    )
        .into_response()
}

/// Whether a scrape is answered: with a token, whoever presents it (a
/// proxy in front makes every peer look local); without, loopback peers.
fn allowed(token: Option<&MasterSecret>, peer: Option<SocketAddr>, bearer: Option<&str>) -> bool {
    match token {
        Some(token) => bearer.is_some_and(|b| token.matches(b.as_bytes())),
        None => peer.is_some_and(|p| p.ip().to_canonical().is_loopback()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_only_without_a_token_and_the_token_with_one() {
        let local: SocketAddr = "127.0.0.1:5000".parse().unwrap();
        let local6: SocketAddr = "[::ffff:127.0.0.1]:5000".parse().unwrap();
        let remote: SocketAddr = "10.1.2.3:5000".parse().unwrap();
        assert!(allowed(None, Some(local), None));
        assert!(allowed(None, Some(local6), None));
        assert!(!allowed(None, Some(remote), None));
        assert!(!allowed(None, None, None));
        let token = MasterSecret::new(vec![b'x'; 32]).unwrap();
        let right = "x".repeat(32);
        assert!(allowed(Some(&token), Some(remote), Some(&right)));
        assert!(!allowed(Some(&token), Some(local), None));
        assert!(!allowed(Some(&token), Some(local), Some("x")));
    }

    #[test]
    fn a_public_url_is_any_but_loopback() {
        let url = |s: &str| url::Url::parse(s).unwrap();
        assert!(!is_public(None));
        for local in [
            "http://127.0.0.1:8787",
            "http://localhost:1",
            "http://[::1]:2",
        ] {
            assert!(!is_public(Some(&url(local))), "{local}");
        }
        for public in [
            "https://files.example.com",
            "http://10.0.0.2",
            "http://[2001:db8::1]",
        ] {
            assert!(is_public(Some(&url(public))), "{public}");
        }
    }
}
