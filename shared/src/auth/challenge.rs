//! The bearer challenge (RFC 6750, with RFC 9728's `resource_metadata`):
//! one builder for every route, REST and MCP, so a client learns where the
//! authorization server is whichever door it knocked on.

use crate::auth::{Caller, Scope};
use crate::error::ApiError;
use crate::service::Sluice;

/// The protected-resource metadata document, beside the MCP endpoint.
pub const METADATA_PATH: &str = "/.well-known/oauth-protected-resource/mcp";

/// The scopes a client may ask for here: the file scopes, and
/// `actions:execute` where actions are configured.
pub fn offered_scopes(sluice: &Sluice) -> Vec<Scope> {
    let mut scopes = vec![Scope::FilesRead, Scope::FilesWrite];
    if !sluice.actions().catalog().is_empty() {
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

impl Sluice {
    /// 401 with the challenge: no token (`invalid` false) or a refused one.
    pub fn unauthorized(&self, message: &str, invalid: bool) -> ApiError {
        let (error, challenge) = if invalid {
            (
                "invalid_token",
                challenge(self, Some(("invalid_token", &scope_list(self)))),
            )
        } else {
            ("unauthorized", challenge(self, None))
        };
        ApiError::Challenge {
            status: http::StatusCode::UNAUTHORIZED,
            error,
            message: message.to_owned(),
            challenge,
        }
    }

    /// 403 `insufficient_scope`, with the challenge naming the scope,
    /// unless `caller` holds `scope`.
    pub fn require(&self, caller: &Caller, scope: Scope) -> Result<(), ApiError> {
        if caller.scopes.contains(&scope) {
            return Ok(());
        }
        Err(ApiError::Challenge {
            status: http::StatusCode::FORBIDDEN,
            error: "insufficient_scope",
            message: format!("this needs the '{scope}' scope"),
            challenge: challenge(self, Some(("insufficient_scope", scope.as_str()))),
        })
    }
}
