//! The gate in front of the MCP service: bearer authentication, a bounded
//! and well-formed JSON-RPC body, and the scope a tool call needs.
//!
//! Every refusal here is a 4xx whose body is a JSON-RPC error (or, for auth,
//! a challenge), never a 500: a client always learns what to fix.

use axum::body::{Body, to_bytes};
use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use http::StatusCode;
use rmcp::ErrorData;
use serde_json::Value;
use sluice::Sluice;
use sluice::http::auth::{authenticate, require};

use crate::table;

/// A JSON-RPC error response with an HTTP status.
fn rpc_error(status: StatusCode, id: Value, error: ErrorData) -> Response {
    let body = serde_json::json!({ "jsonrpc": "2.0", "id": id, "error": error });
    (status, axum::Json(body)).into_response()
}

/// Authenticates, checks the body, and passes the request on with the
/// [`Caller`] in its extensions.
pub(crate) async fn gate(State(sluice): State<Sluice>, req: Request, next: Next) -> Response {
    let (mut parts, body) = req.into_parts();
    let caller = match authenticate(&sluice, &parts.headers).await {
        Ok(c) => c,
        Err(refused) => return refused.into_response(),
    };

    let limit = sluice.mcp_max_body_bytes();
    let bytes = match to_bytes(body, limit).await {
        Ok(b) => b,
        // Over the limit, or a body that stopped arriving (the server's body
        // read deadline) or broke off: each answered as what it is.
        Err(e) => {
            let over = std::error::Error::source(&e)
                .is_some_and(|s| s.is::<http_body_util::LengthLimitError>());
            let (status, what) = if over {
                (
                    StatusCode::PAYLOAD_TOO_LARGE,
                    format!("the request body is over {limit} bytes"),
                )
            } else {
                (
                    StatusCode::REQUEST_TIMEOUT,
                    "the request body did not arrive whole in time".to_owned(),
                )
            };
            return rpc_error(status, Value::Null, ErrorData::invalid_request(what, None));
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
        if let Some(scope) = table::required_scope(name)
            && let Err(refused) = require(&sluice, &caller, scope)
        {
            tracing::debug!(tool = name, %scope, "tool call without its scope");
            return refused.into_response();
        }
    }

    parts.extensions.insert(caller);
    next.run(Request::from_parts(parts, Body::from(bytes)))
        .await
}
