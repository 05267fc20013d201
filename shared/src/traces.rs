//! Traces: each request a span, joined to its caller's trace (W3C
//! `traceparent`: the header over HTTP, `_meta.traceparent` in an MCP
//! request, SEP-414), and a file's whole life one trace, kept in its record
//! from the request that issued it ([`current`] then, [`follow`] at each
//! later step: the bytes, the proof, the scan, ready, each download).
//!
//! This module holds what the service says of a trace; it exports nothing.
//! A binary that exports (the local server, with `OTEL_EXPORTER_OTLP_*`
//! set: OpenTelemetry's own exporter, `runtime`'s `otlp` feature) installs
//! a [`Propagation`] that reads and writes the context of the spans it
//! exports; without one every call here is nothing, and a build that never
//! exports links nothing of OpenTelemetry's.
//!
//! What a span carries: ids (a file's), sizes, routes as templates
//! (`/u/{token}`, never the token), methods, statuses and outcomes. Never a
//! token, a URL's query, a file's name or a user.

use std::sync::OnceLock;

/// Reads and writes the trace context of `tracing`'s spans.
pub trait Propagation: Send + Sync {
    /// The current span's context as a `traceparent`, if it is in a trace
    /// that is exported.
    fn current(&self) -> Option<String>;

    /// Makes `traceparent` the parent of `span` (a malformed one is
    /// ignored: `span` starts a trace of its own).
    fn join(&self, span: &tracing::Span, traceparent: &str);
}

static PROPAGATION: OnceLock<Box<dyn Propagation>> = OnceLock::new();

/// Installs the exporter's propagation, once (a second is ignored).
pub fn install(propagation: Box<dyn Propagation>) {
    let _ = PROPAGATION.set(propagation);
}

/// Whether traces are exported here: otherwise no span of this module is
/// made (a request pays nothing for them).
pub fn exporting() -> bool {
    PROPAGATION.get().is_some()
}

/// The current span's context as a `traceparent`, where traces are
/// exported.
pub fn current() -> Option<String> {
    PROPAGATION.get()?.current()
}

/// `span`, joined to the trace `traceparent` names (where traces are
/// exported, and one is given).
pub fn join(span: tracing::Span, traceparent: Option<&str>) -> tracing::Span {
    if let (Some(propagation), Some(parent)) = (PROPAGATION.get(), traceparent) {
        propagation.join(&span, parent);
    }
    span
}

/// A span of a step in the life of file `file_id` (`file.bytes`,
/// `file.ready`, …), in the file's trace (`trace`, its record's), else
/// under the current span.
pub fn follow(step: &'static str, file_id: &str, trace: Option<&str>) -> tracing::Span {
    if !exporting() {
        return tracing::Span::none();
    }
    join(
        tracing::info_span!(
            "file",
            otel.name = step,
            otel.kind = "internal",
            sluice.file.id = %file_id,
            sluice.bytes.start = tracing::field::Empty,
            sluice.bytes.end = tracing::field::Empty,
        ),
        trace,
    )
}

/// Each request as a server span (OpenTelemetry's HTTP conventions): its
/// method, its route as a template (a path holds a token: never the path
/// itself) and its answer's status; joined to the caller's trace where it
/// sends `traceparent`.
pub async fn http_span(
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> axum::response::Response {
    use tracing::Instrument as _;
    if !exporting() {
        return next.run(request).await;
    }
    let route = request
        .extensions()
        .get::<axum::extract::MatchedPath>()
        .map_or("unmatched", |p| p.as_str())
        .to_owned();
    let method = request.method().as_str().to_owned();
    let parent = request
        .headers()
        .get("traceparent")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let span = join(
        tracing::info_span!(
            "http",
            otel.name = %format!("{method} {route}"),
            otel.kind = "server",
            http.request.method = %method,
            http.route = %route,
            http.response.status_code = tracing::field::Empty,
        ),
        parent.as_deref(),
    );
    let response = next.run(request).instrument(span.clone()).await;
    span.record("http.response.status_code", response.status().as_u16());
    response
}
