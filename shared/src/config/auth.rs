//! Bearer tokens and the authorization server, one group.

use std::time::Duration;

use url::Url;

use super::ConfigError;
use super::read::{self, Vars};
use super::refuse;
use super::settings::Default::{Unset, Value};
use super::settings::Group;
use super::settings::{Parse, Setting, s};

/// Where bearer tokens come from and what they must carry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuthSettings {
    /// The `iss` bearer tokens must carry (`SLUICE_AUTH_ISSUER`, default `sluice-local`).
    pub issuer: String,
    /// The `aud` bearer tokens must carry (`SLUICE_AUTH_AUDIENCE`). Unset:
    /// with an authorization server's JWKS, the MCP URL itself (RFC 8707);
    /// for local development tokens, `sluice`.
    pub audience: Option<String>,
    /// Client ids whose access tokens are accepted without an `aud`
    /// (`SLUICE_AUTH_CLIENT_IDS`, comma-separated): Cognito's shape, where an
    /// access token names its `client_id` and says `token_use: access`.
    pub client_ids: Vec<String>,
    /// A prefix that scopes carry at the authorization server
    /// (`SLUICE_AUTH_SCOPE_PREFIX`, e.g. Cognito's `sluice/` for
    /// `sluice/files:read`); stripped before the scope is read.
    pub scope_prefix: Option<String>,
    /// Whether locally minted HS256 bearer tokens are accepted with the
    /// records in DynamoDB (`SLUICE_DEV_TOKENS=true`): for development
    /// without an authorization server, never a silent fallback.
    pub dev_tokens: bool,
    /// Authorization servers listed in the protected-resource metadata
    /// (`SLUICE_AUTH_SERVERS`, comma-separated URLs; default: the issuer, if
    /// it is a URL).
    pub servers: Vec<Url>,
    /// The authorization server's JWKS (`SLUICE_AUTH_JWKS_URL`): when set,
    /// bearer tokens are RS256/ES256 tokens verified with its keys, and local
    /// development tokens are refused.
    pub jwks_url: Option<Url>,
    /// The least time between two JWKS fetches for unknown key ids
    /// (`SLUICE_AUTH_JWKS_REFRESH_SECS`, default 30).
    pub jwks_refresh: Duration,
    /// Lifetime of locally minted bearer tokens (`SLUICE_DEV_TOKEN_TTL_SECS`, default 30 days).
    pub dev_token_ttl: Duration,
}

impl AuthSettings {
    pub(super) fn read(vars: &Vars) -> Result<Self, ConfigError> {
        Ok(Self {
            issuer: vars.text("SLUICE_AUTH_ISSUER").unwrap_or_default(),
            audience: vars.text("SLUICE_AUTH_AUDIENCE"),
            client_ids: vars.list("SLUICE_AUTH_CLIENT_IDS"),
            scope_prefix: vars.text("SLUICE_AUTH_SCOPE_PREFIX"),
            dev_tokens: vars.flag("SLUICE_DEV_TOKENS")?.unwrap_or(false),
            servers: auth_servers(vars)?,
            jwks_url: vars.url("SLUICE_AUTH_JWKS_URL")?,
            jwks_refresh: vars.secs("SLUICE_AUTH_JWKS_REFRESH_SECS")?,
            dev_token_ttl: vars.secs("SLUICE_DEV_TOKEN_TTL_SECS")?,
        })
    }
}

fn auth_servers(vars: &Vars) -> Result<Vec<Url>, ConfigError> {
    if vars.is_set("SLUICE_AUTH_SERVERS") {
        return vars
            .list("SLUICE_AUTH_SERVERS")
            .iter()
            .map(|u| read::url("SLUICE_AUTH_SERVERS", u))
            .collect();
    }
    Ok(vars
        .raw("SLUICE_AUTH_ISSUER")
        .and_then(|i| Url::parse(i).ok())
        .filter(|u| matches!(u.scheme(), "http" | "https"))
        .into_iter()
        .collect())
}

/// Where bearer tokens come from.
pub(super) fn rules(vars: &Vars, shared: bool) -> Result<(), ConfigError> {
    let set = |var| vars.is_set(var);
    let jwks = set("SLUICE_AUTH_JWKS_URL");
    let dev_tokens = vars.flag("SLUICE_DEV_TOKENS")?.unwrap_or(false);
    if vars
        .url("SLUICE_MCP_URL")?
        .is_some_and(|u| !u.path().ends_with("/mcp"))
    {
        return refuse(
            "SLUICE_MCP_URL",
            "must be the MCP endpoint itself, ending in /mcp",
        );
    }
    if let Some(url) = vars.url("SLUICE_AUTH_JWKS_URL")? {
        // Keys that decide who may do what come over TLS; plain HTTP only
        // from this machine (a local authorization server).
        let loopback = url.scheme() == "http" && crate::actions::upstream_url_allowed(&url);
        if url.scheme() != "https" && !loopback {
            return refuse(
                "SLUICE_AUTH_JWKS_URL",
                "must be an https:// URL (http:// only on a loopback address)",
            );
        }
    }
    if set("SLUICE_AUTH_CLIENT_IDS") && !jwks {
        return refuse(
            "SLUICE_AUTH_CLIENT_IDS",
            "needs SLUICE_AUTH_JWKS_URL: client ids are checked on an authorization server's tokens",
        );
    }
    if set("SLUICE_AUTH_SCOPE_PREFIX") && !jwks {
        return refuse(
            "SLUICE_AUTH_SCOPE_PREFIX",
            "needs SLUICE_AUTH_JWKS_URL: the prefix is read off an authorization server's scopes",
        );
    }
    if shared && !jwks && !dev_tokens {
        return refuse(
            "SLUICE_AUTH_JWKS_URL",
            "required when the records are in DynamoDB (SLUICE_BACKEND=aws): name your authorization server's JWKS \
             (or, for development only, set SLUICE_DEV_TOKENS=true to accept tokens from `sluice token`)",
        );
    }
    if jwks && dev_tokens {
        return refuse(
            "SLUICE_DEV_TOKENS",
            "cannot be set with SLUICE_AUTH_JWKS_URL: bearer tokens come from one place",
        );
    }
    Ok(())
}

/// This group's settings (its variables, parsers, defaults and one line of
/// doc each), beside the code that reads them: the configuration page and
/// the start's checks take them from [`super::table`].
pub(super) const ROWS: &[Setting] = &[
    s(
        "SLUICE_AUTH_ISSUER",
        Group::Auth,
        Parse::Text,
        Value("sluice-local"),
        "required `iss` of bearer tokens",
    ),
    s(
        "SLUICE_AUTH_AUDIENCE",
        Group::Auth,
        Parse::Text,
        Unset("the MCP URL (with a JWKS); `sluice` (local tokens)"),
        "required `aud` of bearer tokens",
    ),
    s(
        "SLUICE_AUTH_JWKS_URL",
        Group::Auth,
        Parse::Url,
        Unset("—"),
        "the authorization server's JWKS (https, or http on loopback); when set, only its RS256/ES256 tokens are accepted",
    ),
    s(
        "SLUICE_AUTH_JWKS_REFRESH_SECS",
        Group::Auth,
        Parse::Seconds,
        Value("30"),
        "least time between two JWKS fetches for unknown key ids",
    ),
    s(
        "SLUICE_AUTH_SERVERS",
        Group::Auth,
        Parse::Urls,
        Unset("the issuer, if a URL"),
        "authorization servers listed in the protected-resource metadata (comma-separated)",
    ),
    s(
        "SLUICE_AUTH_CLIENT_IDS",
        Group::Auth,
        Parse::List,
        Unset("—"),
        "with a JWKS: accept access tokens that name one of these clients (`client_id`, `token_use: access`) instead of an audience: Cognito",
    ),
    s(
        "SLUICE_AUTH_SCOPE_PREFIX",
        Group::Auth,
        Parse::Text,
        Unset("—"),
        "with a JWKS: the prefix the server puts on sluice's scopes (`sluice/` for `sluice/files:read`)",
    ),
    s(
        "SLUICE_DEV_TOKENS",
        Group::Auth,
        Parse::Flag,
        Value("false"),
        "aws mode: accept tokens from `sluice token` without an authorization server (development only)",
    ),
    s(
        "SLUICE_DEV_TOKEN_TTL_SECS",
        Group::Auth,
        Parse::Seconds,
        Value("2592000"),
        "lifetime of tokens from `sluice token` (30 days)",
    ),
];
