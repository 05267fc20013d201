//! The `mcp` function: the model-facing MCP endpoint.
//!
//! Until the MCP tools land, `/mcp` answers every method with `405` and the
//! methods it will allow, so clients get a clear answer rather than a 404.

use axum::Router;
use axum::routing::any;
use sluice::{ApiError, Sluice};

/// The MCP endpoint's routes.
pub fn router(state: Sluice) -> Router {
    Router::new()
        .route("/mcp", any(|| async { ApiError::MethodNotAllowed("POST") }))
        .with_state(state)
}
