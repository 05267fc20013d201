//! RFC 9728 protected-resource metadata: where a client finds the
//! authorization server(s) and the scopes this resource understands.

use axum::Json;
use axum::extract::State;
use axum::response::IntoResponse;
use http::{HeaderValue, header};
use sluice::{Scope, Sluice};

/// The metadata document for the `/mcp` resource.
pub const METADATA_PATH: &str = "/.well-known/oauth-protected-resource/mcp";

/// The scopes an MCP client may ask for.
pub const SCOPES: [Scope; 2] = [Scope::FilesRead, Scope::FilesWrite];

pub(crate) async fn protected_resource(State(sluice): State<Sluice>) -> impl IntoResponse {
    let base = sluice.base_url();
    let body = serde_json::json!({
        "resource": format!("{base}/mcp"),
        "authorization_servers": sluice.parts().auth_servers.iter().map(|u| u.as_str().trim_end_matches('/')).collect::<Vec<_>>(),
        "scopes_supported": SCOPES.map(|s| s.as_str()),
        "bearer_methods_supported": ["header"],
        "resource_name": "sluice",
    });
    (
        [(
            header::CACHE_CONTROL,
            HeaderValue::from_static("max-age=300"),
        )],
        Json(body),
    )
}

/// `WWW-Authenticate` for a request without a valid token.
pub(crate) fn challenge(sluice: &Sluice, error: Option<(&str, &str)>) -> String {
    let mut value = format!(
        "Bearer resource_metadata=\"{}{METADATA_PATH}\", scope=\"{}\"",
        sluice.base_url(),
        SCOPES.map(|s| s.as_str()).join(" ")
    );
    if let Some((code, scope)) = error {
        value = format!(
            "Bearer error=\"{code}\", scope=\"{scope}\", resource_metadata=\"{}{METADATA_PATH}\"",
            sluice.base_url()
        );
    }
    value
}
