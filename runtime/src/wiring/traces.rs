//! Exporting traces over OTLP/HTTP (the `otlp` feature): with
//! `OTEL_EXPORTER_OTLP_ENDPOINT` (or `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`)
//! set, every span of [`sluice::traces`] goes, in batches, to that
//! collector, as OpenTelemetry's own SDK and exporter send them
//! (`http/protobuf`; `OTEL_SERVICE_NAME`, `OTEL_RESOURCE_ATTRIBUTES`,
//! `OTEL_EXPORTER_OTLP_HEADERS`, `OTEL_BSP_*` and the rest of the standard
//! variables read by them, as the specification says). Off by default:
//! nothing is exported, and nothing is made.
//!
//! The batches leave from the SDK's own thread, so no request waits on the
//! collector: each is sent by sluice's HTTP client (hyper, rustls) on a
//! small runtime of its own, which outlives any request.

use std::collections::HashMap;
use std::time::Duration;

use opentelemetry::propagation::TextMapPropagator as _;
use opentelemetry::trace::{TraceContextExt as _, TracerProvider as _};
use opentelemetry_http::{HttpClient, HttpError, Request, Response};
use opentelemetry_sdk::propagation::TraceContextPropagator;
use opentelemetry_sdk::trace::SdkTracerProvider;
use tracing_opentelemetry::OpenTelemetrySpanExt as _;

/// The variables that ask for traces (either).
const ENDPOINTS: [&str; 2] = [
    "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
    "OTEL_EXPORTER_OTLP_ENDPOINT",
];

/// Whether the standard variables ask for traces: an endpoint, and neither
/// `OTEL_SDK_DISABLED=true` nor `OTEL_TRACES_EXPORTER=none`.
fn asked() -> bool {
    let set = |name: &str| std::env::var(name).is_ok_and(|v| !v.trim().is_empty());
    ENDPOINTS.iter().any(|name| set(name))
        && !std::env::var("OTEL_SDK_DISABLED").is_ok_and(|v| v.eq_ignore_ascii_case("true"))
        && !std::env::var("OTEL_TRACES_EXPORTER").is_ok_and(|v| v.eq_ignore_ascii_case("none"))
}

/// The exporting tracer, where traces are asked for: its provider (kept
/// to flush at the end) and its tracer. A collector that cannot be set up
/// is said once, and the server runs without traces.
pub(crate) fn provider() -> Option<SdkTracerProvider> {
    if !asked() {
        return None;
    }
    match exporter() {
        Ok(exporter) => {
            let mut resource = opentelemetry_sdk::Resource::builder();
            if std::env::var("OTEL_SERVICE_NAME").is_err() {
                resource = resource.with_service_name("sluice");
            }
            let provider = SdkTracerProvider::builder()
                .with_batch_exporter(exporter)
                .with_resource(resource.build())
                .build();
            sluice::traces::install(Box::new(W3c));
            Some(provider)
        }
        Err(e) => {
            eprintln!("sluice: traces are not exported: {e}");
            None
        }
    }
}

/// The layer that makes `tracing`'s spans OpenTelemetry's, for `provider`.
pub(crate) fn layer<S>(provider: &SdkTracerProvider) -> impl tracing_subscriber::Layer<S> + use<S>
where
    S: tracing::Subscriber + for<'a> tracing_subscriber::registry::LookupSpan<'a>,
{
    // Spans alone, as named: no source location, thread or idle time on
    // each (what every span would otherwise carry and cost).
    tracing_opentelemetry::layer()
        .with_tracer(provider.tracer("sluice"))
        .with_location(false)
        .with_threads(false)
        .with_tracked_inactivity(false)
}

/// OpenTelemetry's OTLP/HTTP exporter over [`OnItsRuntime`].
fn exporter() -> Result<opentelemetry_otlp::SpanExporter, String> {
    use opentelemetry_otlp::{WithExportConfig as _, WithHttpConfig as _};
    let (handle_in, handle_out) = std::sync::mpsc::channel();
    std::thread::Builder::new()
        .name("sluice-otlp".into())
        .spawn(move || {
            let Ok(runtime) = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
            else {
                return;
            };
            let _ = handle_in.send(runtime.handle().clone());
            runtime.block_on(std::future::pending::<()>());
        })
        .map_err(|e| e.to_string())?;
    let handle = handle_out
        .recv()
        .map_err(|_| "its runtime did not start".to_owned())?;
    let client = OnItsRuntime {
        client: opentelemetry_http::hyper::HyperClient::new(
            sluice::https_connector(),
            Duration::from_secs(10),
            None,
        ),
        handle,
    };
    opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .with_protocol(opentelemetry_otlp::Protocol::HttpBinary)
        .with_http_client(client)
        .build()
        .map_err(|e| e.to_string())
}

/// sluice's HTTP client, its requests run on the exporter's own runtime
/// (the SDK's thread has none).
#[derive(Debug)]
struct OnItsRuntime {
    client: opentelemetry_http::hyper::HyperClient<
        hyper_rustls::HttpsConnector<hyper_util::client::legacy::connect::HttpConnector>,
    >,
    handle: tokio::runtime::Handle,
}

#[async_trait::async_trait]
impl HttpClient for OnItsRuntime {
    async fn send_bytes(
        &self,
        request: Request<bytes::Bytes>,
    ) -> Result<Response<bytes::Bytes>, HttpError> {
        let client = self.client.clone();
        self.handle
            .spawn(async move { client.send_bytes(request).await })
            .await
            .map_err(|e| Box::new(e) as HttpError)?
    }
}

/// W3C trace context, read from and written into `traceparent`.
struct W3c;

impl sluice::traces::Propagation for W3c {
    fn current(&self) -> Option<String> {
        let context = tracing::Span::current().context();
        if !context.span().span_context().is_valid() {
            return None;
        }
        let mut carrier = HashMap::new();
        TraceContextPropagator::new().inject_context(&context, &mut carrier);
        carrier.remove("traceparent")
    }

    fn join(&self, span: &tracing::Span, traceparent: &str) {
        let carrier = HashMap::from([("traceparent".to_owned(), traceparent.to_owned())]);
        let context = TraceContextPropagator::new().extract(&carrier);
        if context.span().span_context().is_valid() {
            let _ = span.set_parent(context);
        }
    }
}
