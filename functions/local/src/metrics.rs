//! `GET /metrics`: the process's metrics in the Prometheus text format,
//! rendered by `metrics-exporter-prometheus` from what the service counts
//! ([`sluice::telemetry`]). Without `SLUICE_METRICS_TOKEN` it answers
//! loopback peers only; with it, whoever presents it as a bearer token.

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
        .install_recorder()?;
    telemetry::describe();
    Ok(handle)
}

#[derive(Clone)]
struct Metrics {
    handle: PrometheusHandle,
    token: Option<Arc<MasterSecret>>,
}

/// The `/metrics` route over `handle`, guarded by `token` when set.
pub fn router(handle: PrometheusHandle, token: Option<MasterSecret>) -> Router {
    Router::new()
        .route("/metrics", get(render))
        .with_state(Metrics {
            handle,
            token: token.map(Arc::new),
        })
}

async fn render(State(metrics): State<Metrics>, request: Request) -> Response {
    let peer = request.extensions().get::<ConnectInfo<SocketAddr>>();
    let bearer = request
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "));
    if !allowed(metrics.token.as_deref(), peer.map(|p| p.0), bearer) {
        let message = match metrics.token {
            Some(_) => "metrics need the bearer token SLUICE_METRICS_TOKEN sets",
            None => {
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
}
