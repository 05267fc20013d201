//! RFC 9728 protected-resource metadata: where a client finds the
//! authorization server(s) and the scopes this resource understands.

use axum::Json;
use axum::extract::State;
use axum::response::IntoResponse;
use http::{HeaderValue, header};
use sluice::{Scope, Sluice};

/// The metadata document for the `/mcp` resource.
pub const METADATA_PATH: &str = "/.well-known/oauth-protected-resource/mcp";

/// The scopes an MCP client may ask for here: the file scopes, and
/// `actions:execute` where actions are configured.
pub fn scopes(sluice: &Sluice) -> Vec<Scope> {
    let mut scopes = vec![Scope::FilesRead, Scope::FilesWrite];
    if !sluice.actions().catalog().is_empty() {
        scopes.push(Scope::ActionsExecute);
    }
    scopes
}

fn scope_list(sluice: &Sluice) -> String {
    scopes(sluice)
        .iter()
        .map(|s| s.as_str())
        .collect::<Vec<_>>()
        .join(" ")
}

/// Where the metadata document is, as a client reaches it: beside the MCP
/// endpoint, whatever prefix the endpoint is served under.
pub fn metadata_url(sluice: &Sluice) -> String {
    format!("{}{METADATA_PATH}", sluice.mcp_base_url())
}

pub(crate) async fn protected_resource(State(sluice): State<Sluice>) -> impl IntoResponse {
    let body = serde_json::json!({
        "resource": sluice.mcp_url(),
        "authorization_servers": sluice.parts().auth_servers.iter().map(|u| u.as_str().trim_end_matches('/')).collect::<Vec<_>>(),
        "scopes_supported": scopes(&sluice).iter().map(|s| s.as_str()).collect::<Vec<_>>(),
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

/// `WWW-Authenticate` for a request without a valid token, or, with
/// `error`, for one refused (`invalid_token`) or lacking a scope
/// (`insufficient_scope`, with the scope needed).
pub(crate) fn challenge(sluice: &Sluice, error: Option<(&str, &str)>) -> String {
    let metadata = metadata_url(sluice);
    match error {
        None => format!(
            "Bearer resource_metadata=\"{metadata}\", scope=\"{}\"",
            scope_list(sluice)
        ),
        Some((code, scope)) => {
            format!("Bearer error=\"{code}\", scope=\"{scope}\", resource_metadata=\"{metadata}\"")
        }
    }
}
