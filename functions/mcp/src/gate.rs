//! The gate in front of the MCP service: bearer authentication, a bounded
//! and well-formed JSON-RPC body, and the scope a tool call needs.
//!
//! Every refusal here is a 4xx whose body is a JSON-RPC error (or, for auth,
//! a challenge), never a 500: a client always learns what to fix.

use axum::body::{Body, to_bytes};
use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use http::{HeaderValue, StatusCode, header};
use rmcp::ErrorData;
use serde_json::Value;
use sluice::auth::BearerError;
use sluice::{Caller, Scope, Sluice};

use crate::metadata::challenge;
use crate::tools;

/// A JSON-RPC error response with an HTTP status.
fn rpc_error(status: StatusCode, id: Value, error: ErrorData) -> Response {
    let body = serde_json::json!({ "jsonrpc": "2.0", "id": id, "error": error });
    (status, axum::Json(body)).into_response()
}

/// A refusal that carries a bearer challenge: the status, a JSON body
/// `{error, message, www_authenticate}`, and the same challenge in
/// `WWW-Authenticate`. The body copy is for API Gateway, which renames a
/// Lambda's `WWW-Authenticate`; its response mapping puts it back from there
/// (template.yaml).
fn challenged(status: StatusCode, error: &str, message: &str, challenge: String) -> Response {
    let mut response = (
        status,
        axum::Json(serde_json::json!({
            "error": error,
            "message": message,
            "www_authenticate": challenge,
        })),
    )
        .into_response();
    if let Ok(v) = HeaderValue::from_str(&challenge) {
        response.headers_mut().insert(header::WWW_AUTHENTICATE, v);
    }
    response
}

fn unauthorized(sluice: &Sluice, message: &'static str, invalid: bool) -> Response {
    let challenge = if invalid {
        let scopes = crate::metadata::scopes(sluice)
            .iter()
            .map(|s| s.as_str())
            .collect::<Vec<_>>()
            .join(" ");
        challenge(sluice, Some(("invalid_token", &scopes)))
    } else {
        challenge(sluice, None)
    };
    let error = if invalid {
        "invalid_token"
    } else {
        "unauthorized"
    };
    challenged(StatusCode::UNAUTHORIZED, error, message, challenge)
}

fn insufficient_scope(sluice: &Sluice, scope: Scope, tool: &str) -> Response {
    challenged(
        StatusCode::FORBIDDEN,
        "insufficient_scope",
        &format!("the tool {tool} needs the '{scope}' scope"),
        challenge(sluice, Some(("insufficient_scope", scope.as_str()))),
    )
}

/// Authenticates, checks the body, and passes the request on with the
/// [`Caller`] in its extensions.
pub(crate) async fn gate(State(sluice): State<Sluice>, req: Request, next: Next) -> Response {
    let (mut parts, body) = req.into_parts();
    let token = match sluice::auth::bearer(&parts.headers) {
        Ok(t) => t.to_owned(),
        // A missing header gets a plain challenge; a malformed one, invalid_token.
        Err(e) => return unauthorized(&sluice, e.message(), e == BearerError::Malformed),
    };
    let caller: Caller = match sluice.access().verify(&token).await {
        Ok(c) => c,
        Err(e) => {
            tracing::debug!(reason = %e, "bearer token refused");
            return unauthorized(&sluice, "the bearer token is not valid here", true);
        }
    };

    let limit = sluice.parts().mcp_max_body_bytes;
    let bytes = match to_bytes(body, limit).await {
        Ok(b) => b,
        Err(_) => {
            return rpc_error(
                StatusCode::PAYLOAD_TOO_LARGE,
                Value::Null,
                ErrorData::invalid_request(format!("the request body is over {limit} bytes"), None),
            );
        }
    };
    let message: Value = match serde_json::from_slice(&bytes) {
        Ok(v) => v,
        Err(e) => {
            return rpc_error(
                StatusCode::BAD_REQUEST,
                Value::Null,
                ErrorData::parse_error(format!("the body is not valid JSON: {e}"), None),
            );
        }
    };
    let Some(object) = message.as_object() else {
        let what = if message.is_array() {
            "JSON-RPC batches are not supported: send one message per request"
        } else {
            "the body must be one JSON-RPC message (an object)"
        };
        return rpc_error(
            StatusCode::BAD_REQUEST,
            Value::Null,
            ErrorData::invalid_request(what, None),
        );
    };
    if object.get("method").and_then(Value::as_str) == Some("tools/call") {
        let name = object
            .get("params")
            .and_then(|p| p.get("name"))
            .and_then(Value::as_str)
            .unwrap_or_default();
        if let Some(scope) = tools::required_scope(name)
            && !caller.scopes.contains(&scope)
        {
            return insufficient_scope(&sluice, scope, name);
        }
    }

    parts.extensions.insert(caller);
    next.run(Request::from_parts(parts, Body::from(bytes)))
        .await
}
