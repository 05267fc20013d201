//! RFC 9728 protected-resource metadata: where a client finds the
//! authorization server(s) and the scopes this resource understands.

use axum::Json;
use axum::extract::State;
use axum::response::IntoResponse;
use http::{HeaderValue, header};
use sluice::Sluice;

use sluice::http::auth::offered_scopes as scopes;

pub(crate) async fn protected_resource(State(sluice): State<Sluice>) -> impl IntoResponse {
    let body = serde_json::json!({
        "resource": sluice.mcp_url(),
        "authorization_servers": sluice.auth_servers().iter().map(|u| u.as_str().trim_end_matches('/')).collect::<Vec<_>>(),
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
