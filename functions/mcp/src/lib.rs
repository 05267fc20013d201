//! The `mcp` function: the model-facing MCP endpoint.
//!
//! Streamable HTTP, stateless (no session is ever created, so any replica can
//! answer any request), JSON responses. In front of the rmcp service sits one
//! gate ([`gate`]) that authenticates the bearer token, bounds and checks the
//! body, and answers a tool call lacking its scope (from the one [`table`]
//! of tools) with `403 insufficient_scope`; the tools themselves
//! ([`tools`], [`actions`], served by [`server`]) call the shared service
//! in-process, and [`reply`] puts its answers and refusals on the wire.

pub mod actions;
mod gate;
mod metadata;
mod reply;
mod schema;
pub mod server;
pub mod shapes;
mod status;
mod summaries;
pub mod table;
pub mod tools;
pub mod widget;

use std::sync::Arc;

use axum::Router;
use axum::routing::{get, post_service};
use rmcp::transport::streamable_http_server::session::never::NeverSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use sluice::Sluice;
use sluice::http::Routes;

pub use server::{PROTOCOL_VERSIONS, SluiceTools};
pub use sluice::http::auth::METADATA_PATH;

/// The MCP endpoint's routes: `/mcp` and the RFC 9728 metadata.
pub fn router(state: Sluice) -> Router {
    routes(&state).with_state(state)
}

/// What the MCP endpoint serves, each route once with its methods (the
/// deployment's routes are held against this list). `GET /mcp` is routed
/// only to answer 405: this server opens no SSE stream.
pub fn routes(state: &Sluice) -> Routes<Sluice> {
    let tools = SluiceTools::new(state.clone());
    let service = StreamableHttpService::new(
        move || Ok(tools.clone()),
        Arc::new(NeverSessionManager::default()),
        http_config(state),
    );
    Routes::new()
        .route(
            "/mcp",
            "POST",
            post_service(service).layer(axum::middleware::from_fn_with_state(
                state.clone(),
                gate::gate,
            )),
        )
        .refusing("/mcp", "GET")
        .route(
            "/.well-known/oauth-protected-resource",
            "GET",
            get(metadata::protected_resource),
        )
        .route(METADATA_PATH, "GET", get(metadata::protected_resource))
}

/// Stateless, JSON responses, and `Host`/`Origin` pinned to the public URL
/// (plus loopback names when the server itself is on loopback), against DNS
/// rebinding.
fn http_config(state: &Sluice) -> StreamableHttpServerConfig {
    let url = &url::Url::parse(state.mcp_url()).expect("the MCP URL is a URL");
    let host = url
        .host_str()
        .unwrap_or("localhost")
        .trim_matches(['[', ']'])
        .to_owned();
    let mut hosts = vec![host.clone()];
    let loopback = host == "localhost"
        || host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback());
    if loopback {
        hosts.extend(["localhost", "127.0.0.1", "::1"].map(String::from));
    }
    let port = url.port_or_known_default().unwrap_or(80);
    // Always with an explicit port: rmcp treats a portless entry as any port.
    let origin_host = url.host_str().unwrap_or("localhost");
    let mut origins = vec![format!("{}://{origin_host}:{port}", url.scheme())];
    if loopback {
        origins.extend(
            ["localhost", "127.0.0.1", "[::1]"].map(|h| format!("{}://{h}:{port}", url.scheme())),
        );
    }
    StreamableHttpServerConfig::default()
        .with_legacy_session_mode(false)
        .with_json_response(true)
        .with_sse_keep_alive(None)
        .with_allowed_hosts(hosts)
        .with_allowed_origins(origins)
        .with_max_request_body_bytes(state.mcp_max_body_bytes())
}
