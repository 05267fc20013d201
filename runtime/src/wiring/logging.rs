//! Logging: one subscriber, the configured filter; and, where asked for
//! (`otlp`), traces exported beside it ([`super::traces`]).

use std::io;

use sluice::config::Config;
use tracing_subscriber::Layer as _;

#[cfg(feature = "otlp")]
static TRACES: std::sync::OnceLock<opentelemetry_sdk::trace::SdkTracerProvider> =
    std::sync::OnceLock::new();

/// Starts logging with the configured filter (`info`, or targets and levels
/// such as `sluice=debug,info`). Tokens are never logged whole: only their
/// `jti`. Spans (not the log's events) at `info` and above are exported as traces where the
/// standard `OTEL_EXPORTER_OTLP_*` variables ask for them, whatever the
/// log's level.
pub fn init_tracing(config: &Config) {
    use tracing_subscriber::layer::SubscriberExt as _;
    use tracing_subscriber::util::SubscriberInitExt as _;
    let log = tracing_subscriber::fmt::layer()
        .with_writer(io::stderr)
        // Colour for a person at a terminal, not for CloudWatch.
        .with_ansi(!config.lambda && io::IsTerminal::is_terminal(&io::stderr()))
        .with_filter(config.operations.log.clone());
    #[cfg(feature = "otlp")]
    let traces = super::traces::provider().map(|provider| {
        // Spans only: the log's events stay in the log, not in the trace.
        let layer =
            super::traces::layer(&provider).with_filter(tracing_subscriber::filter::filter_fn(
                |meta| meta.is_span() && *meta.level() <= tracing::Level::INFO,
            ));
        let _ = TRACES.set(provider);
        layer
    });
    #[cfg(not(feature = "otlp"))]
    let traces: Option<tracing_subscriber::layer::Identity> = None;
    let _ = tracing_subscriber::registry()
        .with(log)
        .with(traces)
        .try_init();
    // A typo would otherwise leave a default the operator did not mean,
    // without a word: named at start (a function's cold start).
    for line in &config.unknown {
        tracing::warn!("{line}");
    }
}

/// Sends the spans not exported yet and waits for them to leave, going on
/// exporting: after each Lambda invocation, whose instance may be frozen
/// (or never thawed) once it asks for its next event.
pub fn send_spans() {
    #[cfg(feature = "otlp")]
    if let Some(provider) = TRACES.get()
        && let Err(e) = provider.force_flush()
    {
        tracing::warn!(error = %e, "traces not exported");
    }
}

/// Sends the spans not exported yet, and stops exporting (at shutdown).
pub fn flush_traces() {
    #[cfg(feature = "otlp")]
    if let Some(provider) = TRACES.get()
        && let Err(e) = provider.shutdown()
    {
        eprintln!("sluice: the last traces were not exported: {e}");
    }
}
