//! sluice on one machine: the `mcp`, `issuer` and `resolver` routers mounted
//! on one listener over the local backends (a directory of objects and an
//! SQLite ledger), plus the `sluice` command line and the example upstream
//! that makes actions work with no configuration.

mod cli;
pub mod example;
pub mod metrics;

pub use cli::main;

use std::time::Duration;

use axum::Router;
use sluice::Sluice;
use sluice_runtime::LocalBackends;

/// Every function's routes on one router.
pub fn app(state: Sluice) -> Router {
    Router::new()
        .merge(sluice_mcp::router(state.clone()))
        .merge(sluice_issuer::router(state.clone()))
        .merge(sluice_resolver::router(state))
}

/// Deletes expired file records every minute, and, when the bytes are in
/// the data directory too, expired objects (in a bucket, its lifecycle rule
/// expires them). Objects live as long as the handle that names them, plus
/// a margin for downloads issued just before expiry; records until their
/// own expiry.
pub async fn sweep_forever(local: LocalBackends, handle_ttl: Duration, link_ttl: Duration) {
    let max_age = handle_ttl + link_ttl + Duration::from_secs(60);
    let mut tick = tokio::time::interval(Duration::from_secs(60));
    loop {
        tick.tick().await;
        let local = local.clone();
        let swept = tokio::task::spawn_blocking(move || {
            local
                .records
                .sweep(sluice::time::now_unix())
                .map_err(sluice::StoreError::from)?;
            match &local.store {
                Some(store) => store.sweep(max_age, |ids| Ok(local.records.live(ids)?)),
                None => Ok(0),
            }
        });
        match swept.await {
            Ok(Ok(0)) => {}
            Ok(Ok(n)) => tracing::info!(removed = n, "expired objects swept"),
            Ok(Err(e)) => tracing::warn!(error = %e, "sweep failed"),
            Err(e) => tracing::warn!(error = %e, "sweep task failed"),
        }
    }
}
