//! Bearer authentication over HTTP, one path for every route: the REST
//! extractor and the MCP gate both call [`authenticate`] and [`require`],
//! and every refusal carries the one challenge this module builds (RFC
//! 6750, with RFC 9728's `resource_metadata`), so a client learns where the
//! authorization server is whichever door it knocked on.

use axum::extract::{FromRef, FromRequestParts};
use http::StatusCode;
use http::request::Parts;

use super::HttpError;
use crate::auth::{Caller, Scope};
use crate::service::Sluice;

/// The protected-resource metadata document, beside the MCP endpoint.
pub const METADATA_PATH: &str = "/.well-known/oauth-protected-resource/mcp";

/// The scopes a client may ask for here: the file scopes, and
/// `actions:execute` where actions are configured.
pub fn offered_scopes(sluice: &Sluice) -> Vec<Scope> {
    let mut scopes = vec![Scope::FilesRead, Scope::FilesWrite];
    if !sluice.actions().configured().catalog().is_empty() {
        scopes.push(Scope::ActionsExecute);
    }
    scopes
}

fn scope_list(sluice: &Sluice) -> String {
    offered_scopes(sluice)
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

/// `WWW-Authenticate` for a request without a token, or, with `error`,
/// for one refused (`invalid_token`) or lacking a scope
/// (`insufficient_scope`, with the scope it needs).
pub fn challenge(sluice: &Sluice, error: Option<(&str, &str)>) -> String {
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

/// 401 with the challenge: no token (`invalid` false) or a refused one.
pub fn unauthorized(sluice: &Sluice, message: &str, invalid: bool) -> HttpError {
    let (error, challenge) = if invalid {
        (
            "invalid_token",
            challenge(sluice, Some(("invalid_token", &scope_list(sluice)))),
        )
    } else {
        ("unauthorized", challenge(sluice, None))
    };
    HttpError::Challenge {
        status: StatusCode::UNAUTHORIZED,
        error,
        message: message.to_owned(),
        challenge,
    }
}

/// The caller a request's `Authorization: Bearer` header names, or a 401
/// with the challenge: a missing header gets a plain challenge; a malformed
/// header or a refused token, `invalid_token`.
pub async fn authenticate(sluice: &Sluice, headers: &http::HeaderMap) -> Result<Caller, HttpError> {
    let token = crate::auth::bearer(headers).map_err(|e| {
        unauthorized(
            sluice,
            e.message(),
            e == crate::auth::BearerError::Malformed,
        )
    })?;
    sluice.access().verify(token).await.map_err(|e| {
        tracing::debug!(reason = %e, "bearer token refused");
        unauthorized(sluice, "the bearer token is not valid here", true)
    })
}

/// 403 `insufficient_scope`, with the challenge naming the scope, unless
/// `caller` holds `scope`.
pub fn require(sluice: &Sluice, caller: &Caller, scope: Scope) -> Result<(), HttpError> {
    if caller.has(scope) {
        return Ok(());
    }
    Err(HttpError::Challenge {
        status: StatusCode::FORBIDDEN,
        error: "insufficient_scope",
        message: format!("this needs the '{scope}' scope"),
        challenge: challenge(sluice, Some(("insufficient_scope", scope.as_str()))),
    })
}

impl<S> FromRequestParts<S> for Caller
where
    S: Send + Sync,
    Sluice: FromRef<S>,
{
    type Rejection = HttpError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        authenticate(&Sluice::from_ref(state), &parts.headers).await
    }
}
