//! Logging: one subscriber, the configured filter.

use std::io;

use sluice::config::Config;

/// Starts logging with the configured filter (`info`, or targets and levels
/// such as `sluice=debug,info`). Tokens are never logged whole: only their `jti`.
pub fn init_tracing(config: &Config) {
    use tracing_subscriber::layer::SubscriberExt as _;
    use tracing_subscriber::util::SubscriberInitExt as _;
    let _ = tracing_subscriber::registry()
        .with(
            tracing_subscriber::fmt::layer()
                .with_writer(io::stderr)
                // Colour for a person at a terminal, not for CloudWatch.
                .with_ansi(!config.lambda && io::IsTerminal::is_terminal(&io::stderr())),
        )
        .with(config.operations.log.clone())
        .try_init();
    // A typo would otherwise leave a default the operator did not mean,
    // without a word: named at start (a function's cold start).
    for line in &config.unknown {
        tracing::warn!("{line}");
    }
}
