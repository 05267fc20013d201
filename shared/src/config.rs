//! Configuration: read from the environment once, at start, into a typed
//! struct. Every refusal names the variable. Nothing else reads the environment.

use std::collections::HashMap;
use std::net::IpAddr;
use std::path::PathBuf;
use std::time::Duration;

use tracing_subscriber::filter::Targets;
use url::Url;

use crate::actions::ActionLimits;
use crate::keys::{KeyId, MasterSecret};

/// Why the configuration was refused. The message names the variable.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{var}: {reason}")]
pub struct ConfigError {
    /// The environment variable at fault.
    pub var: &'static str,
    /// What is wrong with its value.
    pub reason: String,
}

/// Every variable [`Config::from_env`] reads, for documentation and for the
/// deployment template's drift test.
pub const VARIABLES: &[&str] = &[
    "SLUICE_BACKEND",
    "SLUICE_S3_BUCKET",
    "SLUICE_DYNAMODB_TABLE",
    "SLUICE_AWS_REGION",
    "SLUICE_S3_ENDPOINT_URL",
    "SLUICE_DYNAMODB_ENDPOINT_URL",
    "SLUICE_MASTER_SECRET_ID",
    "SLUICE_DOWNLOAD_URL_TTL_SECS",
    "SLUICE_HOST",
    "SLUICE_PORT",
    "SLUICE_PUBLIC_URL",
    "SLUICE_DATA_DIR",
    "SLUICE_MASTER_SECRET",
    "SLUICE_KEY_ID",
    "SLUICE_PREVIOUS_MASTER_SECRET",
    "SLUICE_PREVIOUS_KEY_ID",
    "SLUICE_HANDLE_TTL_SECS",
    "SLUICE_LINK_TTL_SECS",
    "SLUICE_UPLOAD_TTL_SECS",
    "SLUICE_MAX_UPLOAD_BYTES",
    "SLUICE_QUOTA_BYTES",
    "SLUICE_AUTH_ISSUER",
    "SLUICE_AUTH_AUDIENCE",
    "SLUICE_AUTH_SERVERS",
    "SLUICE_AUTH_JWKS_URL",
    "SLUICE_AUTH_JWKS_REFRESH_SECS",
    "SLUICE_MCP_MAX_BODY_BYTES",
    "SLUICE_DEV_TOKEN_TTL_SECS",
    "SLUICE_LOG",
    "SLUICE_MAX_TRANSFERS",
    "SLUICE_MAX_CONNECTIONS",
    "SLUICE_HEADER_READ_TIMEOUT_SECS",
    "SLUICE_BODY_IDLE_TIMEOUT_SECS",
    "SLUICE_ISSUE_RATE_PER_MINUTE",
    "SLUICE_ISSUE_BURST",
    "SLUICE_MAX_PENDING_FILES",
    "SLUICE_MAX_PENDING_BYTES",
    "SLUICE_MCP_URL",
    "SLUICE_AUTH_CLIENT_IDS",
    "SLUICE_AUTH_SCOPE_PREFIX",
    "SLUICE_DEV_TOKENS",
    "SLUICE_ACTIONS_FILE",
    "SLUICE_ACTIONS_S3_KEY",
    "SLUICE_EXAMPLE_ACTIONS",
    "SLUICE_ACTION_MAX_CONCURRENT_READS",
    "SLUICE_ACTION_READ_TIMEOUT_SECS",
    "SLUICE_ACTION_MAX_BYTES",
];

/// Where objects and spent tokens live.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Backend {
    /// A directory and an SQLite file under `SLUICE_DATA_DIR`.
    Local,
    /// S3 and DynamoDB.
    Aws(Box<AwsConfig>),
}

/// The AWS resources (`SLUICE_BACKEND=aws`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AwsConfig {
    /// `SLUICE_S3_BUCKET`: objects and file records.
    pub bucket: String,
    /// `SLUICE_DYNAMODB_TABLE`: spent tokens (partition key `pk`, TTL `expires_at`).
    pub table: String,
    /// `SLUICE_AWS_REGION`; otherwise the SDK's chain (`AWS_REGION`).
    pub region: Option<String>,
    /// `SLUICE_S3_ENDPOINT_URL`: an S3 emulator, path-style.
    pub s3_endpoint: Option<Url>,
    /// `SLUICE_DYNAMODB_ENDPOINT_URL`: a DynamoDB emulator.
    pub dynamodb_endpoint: Option<Url>,
    /// `SLUICE_MASTER_SECRET_ID`: a Secrets Manager secret holding the master
    /// secret, read at start (instead of `SLUICE_MASTER_SECRET`).
    pub master_secret_id: Option<String>,
}

/// The validated configuration.
#[derive(Debug, Clone)]
pub struct Config {
    /// Which backends (`SLUICE_BACKEND`, `local` or `aws`; default `local`).
    pub backend: Backend,
    /// Whether the process runs inside AWS Lambda (`AWS_LAMBDA_RUNTIME_API` is set).
    pub lambda: bool,
    /// How long a presigned S3 download URL is valid
    /// (`SLUICE_DOWNLOAD_URL_TTL_SECS`, default and maximum 60).
    pub download_url_ttl: Duration,
    /// Address to listen on (`SLUICE_HOST`, default `127.0.0.1`).
    pub host: IpAddr,
    /// Port to listen on (`SLUICE_PORT`, default 8787; 0 picks a free one).
    pub port: u16,
    /// The origin clients reach sluice at (`SLUICE_PUBLIC_URL`); by default
    /// the address it listens on.
    pub public_url: Option<Url>,
    /// Where local objects, the ledger and the generated secret live
    /// (`SLUICE_DATA_DIR`, default `./.sluice`).
    pub data_dir: PathBuf,
    /// The master secret (`SLUICE_MASTER_SECRET`, at least 32 bytes). Local
    /// mode generates and keeps one in the data directory when unset.
    pub master_secret: Option<MasterSecret>,
    /// The master secret's id (`SLUICE_KEY_ID`, default `k1`).
    pub key_id: KeyId,
    /// The secret being rotated out, still accepted for verification
    /// (`SLUICE_PREVIOUS_MASTER_SECRET` with `SLUICE_PREVIOUS_KEY_ID`).
    pub previous: Option<(KeyId, MasterSecret)>,
    /// How long a handle is redeemable (`SLUICE_HANDLE_TTL_SECS`, default 45 min).
    pub handle_ttl: Duration,
    /// How long a download link is valid (`SLUICE_LINK_TTL_SECS`, default 5 min).
    pub link_ttl: Duration,
    /// How long an upload link is valid (`SLUICE_UPLOAD_TTL_SECS`, default 15 min).
    pub upload_ttl: Duration,
    /// The largest file accepted (`SLUICE_MAX_UPLOAD_BYTES`, default 5 GiB,
    /// S3's limit for one PUT).
    pub max_upload_bytes: u64,
    /// Total bytes the local store may hold (`SLUICE_QUOTA_BYTES`, default 20 GiB).
    pub quota_bytes: u64,
    /// The `iss` bearer tokens must carry (`SLUICE_AUTH_ISSUER`, default `sluice-local`).
    pub auth_issuer: String,
    /// The `aud` bearer tokens must carry (`SLUICE_AUTH_AUDIENCE`). Unset:
    /// with an authorization server's JWKS, the MCP URL itself (RFC 8707);
    /// for local development tokens, `sluice`.
    pub auth_audience: Option<String>,
    /// Client ids whose access tokens are accepted without an `aud`
    /// (`SLUICE_AUTH_CLIENT_IDS`, comma-separated): Cognito's shape, where an
    /// access token names its `client_id` and says `token_use: access`.
    pub auth_client_ids: Vec<String>,
    /// A prefix that scopes carry at the authorization server
    /// (`SLUICE_AUTH_SCOPE_PREFIX`, e.g. Cognito's `sluice/` for
    /// `sluice/files:read`); stripped before the scope is read.
    pub auth_scope_prefix: Option<String>,
    /// Whether locally minted HS256 bearer tokens are accepted in aws mode
    /// (`SLUICE_DEV_TOKENS=true`): for development without an
    /// authorization server, never a silent fallback.
    pub dev_tokens: bool,
    /// The MCP endpoint's URL, when it is not `SLUICE_PUBLIC_URL` + `/mcp`
    /// (`SLUICE_MCP_URL`, ending in `/mcp`): one prefix per function under
    /// `cargo lambda watch`, say. It is the RFC 8707 resource.
    pub mcp_url: Option<Url>,
    /// Authorization servers listed in the protected-resource metadata
    /// (`SLUICE_AUTH_SERVERS`, comma-separated URLs; default: the issuer, if
    /// it is a URL).
    pub auth_servers: Vec<Url>,
    /// The authorization server's JWKS (`SLUICE_AUTH_JWKS_URL`): when set,
    /// bearer tokens are RS256/ES256 tokens verified with its keys, and local
    /// development tokens are refused.
    pub auth_jwks_url: Option<Url>,
    /// The least time between two JWKS fetches for unknown key ids
    /// (`SLUICE_AUTH_JWKS_REFRESH_SECS`, default 30).
    pub auth_jwks_refresh: Duration,
    /// The largest MCP request body (`SLUICE_MCP_MAX_BODY_BYTES`, default 256 KiB).
    pub mcp_max_body_bytes: u64,
    /// Lifetime of locally minted bearer tokens (`SLUICE_DEV_TOKEN_TTL_SECS`, default 30 days).
    pub dev_token_ttl: Duration,
    /// What to log (`SLUICE_LOG`, default `info`): a level, or targets with
    /// levels such as `sluice=debug,info`.
    pub log: Targets,
    /// Uploads and downloads through sluice at once (`SLUICE_MAX_TRANSFERS`,
    /// default 256); more are answered 503 at once.
    pub max_transfers: usize,
    /// Open connections at once (`SLUICE_MAX_CONNECTIONS`, default 1024);
    /// more wait to be accepted.
    pub max_connections: usize,
    /// How long a client may take to send a request's headers
    /// (`SLUICE_HEADER_READ_TIMEOUT_SECS`, default 10).
    pub header_read_timeout: Duration,
    /// How long an upload's body may go without a byte
    /// (`SLUICE_BODY_IDLE_TIMEOUT_SECS`, default 30).
    pub body_idle_timeout: Duration,
    /// Files one user may have issued (uploads requested, small files
    /// stored) per minute, sustained (`SLUICE_ISSUE_RATE_PER_MINUTE`,
    /// default 120), and at once after a quiet spell (`SLUICE_ISSUE_BURST`,
    /// default 60). More are answered 429 with `Retry-After`. Counted per
    /// process: on Lambda, per warm instance.
    pub issue_rate: crate::rate::IssueRate,
    /// Files one user may have waiting for their bytes
    /// (`SLUICE_MAX_PENDING_FILES`, default 100) and the bytes they may
    /// declare in all (`SLUICE_MAX_PENDING_BYTES`, default 50 GiB); more are
    /// answered 429 until some are uploaded or expire.
    pub pending_caps: crate::records::PendingCaps,
    /// Where the actions catalog comes from (`SLUICE_ACTIONS_FILE`, or in
    /// aws mode `SLUICE_ACTIONS_S3_KEY`); `None`: no configured actions.
    pub actions: Option<ActionsSource>,
    /// Whether the local binary serves its example upstream and actions
    /// (`SLUICE_EXAMPLE_ACTIONS`); unset: on in local mode when no catalog
    /// is configured.
    pub example_actions: Option<bool>,
    /// How actions run (`SLUICE_ACTION_MAX_CONCURRENT_READS`, default 4;
    /// `SLUICE_ACTION_READ_TIMEOUT_SECS`, default 15;
    /// `SLUICE_ACTION_MAX_BYTES`, default 64 MiB).
    pub action_limits: ActionLimits,
}

/// Where the actions catalog (TOML) is read from, once, at start.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ActionsSource {
    /// A file (`SLUICE_ACTIONS_FILE`).
    File(PathBuf),
    /// An object in the aws bucket (`SLUICE_ACTIONS_S3_KEY`): Lambda's
    /// environment holds 4 KB, a catalog often more.
    S3Key(String),
}

impl Config {
    /// Reads and validates the process environment.
    pub fn from_env() -> Result<Self, ConfigError> {
        Self::from_vars(std::env::vars())
    }

    /// Reads and validates the given variables (the environment, in production).
    pub fn from_vars(
        vars: impl IntoIterator<Item = (String, String)>,
    ) -> Result<Self, ConfigError> {
        let env: HashMap<String, String> = vars
            .into_iter()
            .filter(|(k, v)| {
                (k.starts_with("SLUICE_") || k == "AWS_LAMBDA_RUNTIME_API") && !v.is_empty()
            })
            .collect();
        let get = |var: &'static str| env.get(var).map(String::as_str);

        let previous = match (
            get("SLUICE_PREVIOUS_KEY_ID"),
            get("SLUICE_PREVIOUS_MASTER_SECRET"),
        ) {
            (None, None) => None,
            (Some(id), Some(secret)) => Some((
                KeyId::new(id).map_err(|e| invalid("SLUICE_PREVIOUS_KEY_ID", e))?,
                MasterSecret::new(secret)
                    .map_err(|e| invalid("SLUICE_PREVIOUS_MASTER_SECRET", e))?,
            )),
            (None, Some(_)) => {
                return Err(invalid(
                    "SLUICE_PREVIOUS_KEY_ID",
                    "must be set with SLUICE_PREVIOUS_MASTER_SECRET",
                ));
            }
            (Some(_), None) => {
                return Err(invalid(
                    "SLUICE_PREVIOUS_MASTER_SECRET",
                    "must be set with SLUICE_PREVIOUS_KEY_ID",
                ));
            }
        };
        let key_id = KeyId::new(get("SLUICE_KEY_ID").unwrap_or("k1"))
            .map_err(|e| invalid("SLUICE_KEY_ID", e))?;
        if previous.as_ref().is_some_and(|(id, _)| *id == key_id) {
            return Err(invalid(
                "SLUICE_PREVIOUS_KEY_ID",
                "must differ from SLUICE_KEY_ID",
            ));
        }

        let lambda = get("AWS_LAMBDA_RUNTIME_API").is_some();
        let backend = match get("SLUICE_BACKEND").unwrap_or("local") {
            "local" => Backend::Local,
            "aws" => {
                let required = |var: &'static str| {
                    get(var)
                        .map(str::to_owned)
                        .ok_or_else(|| invalid(var, "required when SLUICE_BACKEND=aws"))
                };
                let endpoint = |var: &'static str| get(var).map(|u| origin_url(var, u)).transpose();
                Backend::Aws(Box::new(AwsConfig {
                    bucket: required("SLUICE_S3_BUCKET")?,
                    table: required("SLUICE_DYNAMODB_TABLE")?,
                    region: get("SLUICE_AWS_REGION").map(str::to_owned),
                    s3_endpoint: endpoint("SLUICE_S3_ENDPOINT_URL")?,
                    dynamodb_endpoint: endpoint("SLUICE_DYNAMODB_ENDPOINT_URL")?,
                    master_secret_id: get("SLUICE_MASTER_SECRET_ID").map(str::to_owned),
                }))
            }
            other => {
                return Err(invalid(
                    "SLUICE_BACKEND",
                    format!("must be local or aws, got {other:?}"),
                ));
            }
        };
        if let Backend::Aws(aws) = &backend
            && get("SLUICE_MASTER_SECRET").is_none()
            && aws.master_secret_id.is_none()
        {
            return Err(invalid(
                "SLUICE_MASTER_SECRET",
                "required when SLUICE_BACKEND=aws (or set SLUICE_MASTER_SECRET_ID)",
            ));
        }
        let actions = match (get("SLUICE_ACTIONS_FILE"), get("SLUICE_ACTIONS_S3_KEY")) {
            (None, None) => None,
            (Some(path), None) => Some(ActionsSource::File(PathBuf::from(path))),
            (None, Some(key)) => {
                if !matches!(backend, Backend::Aws(_)) {
                    return Err(invalid(
                        "SLUICE_ACTIONS_S3_KEY",
                        "needs SLUICE_BACKEND=aws (locally, use SLUICE_ACTIONS_FILE)",
                    ));
                }
                if key.starts_with("files/") || key.starts_with("records/") {
                    return Err(invalid(
                        "SLUICE_ACTIONS_S3_KEY",
                        "must not be under files/ or records/, where uploads and records live",
                    ));
                }
                Some(ActionsSource::S3Key(key.trim_start_matches('/').to_owned()))
            }
            (Some(_), Some(_)) => {
                return Err(invalid(
                    "SLUICE_ACTIONS_S3_KEY",
                    "set SLUICE_ACTIONS_FILE or SLUICE_ACTIONS_S3_KEY, not both",
                ));
            }
        };
        let example_actions = match get("SLUICE_EXAMPLE_ACTIONS") {
            None => None,
            Some("true" | "1" | "on") => Some(true),
            Some("false" | "0" | "off") => Some(false),
            Some(other) => {
                return Err(invalid(
                    "SLUICE_EXAMPLE_ACTIONS",
                    format!("must be true or false, got {other:?}"),
                ));
            }
        };
        let defaults = ActionLimits::default();
        let action_limits = ActionLimits {
            max_concurrent_reads: usize::try_from(positive(
                &get,
                "SLUICE_ACTION_MAX_CONCURRENT_READS",
                defaults.max_concurrent_reads as u64,
            )?)
            .unwrap_or(usize::MAX),
            read_timeout: secs(
                &get,
                "SLUICE_ACTION_READ_TIMEOUT_SECS",
                defaults.read_timeout.as_secs(),
            )?,
            max_bytes: positive(&get, "SLUICE_ACTION_MAX_BYTES", defaults.max_bytes)?,
        };
        let mcp_url = get("SLUICE_MCP_URL")
            .map(|u| origin_url("SLUICE_MCP_URL", u))
            .transpose()?;
        if let Some(url) = &mcp_url
            && !url.path().ends_with("/mcp")
        {
            return Err(invalid(
                "SLUICE_MCP_URL",
                "must be the MCP endpoint itself, ending in /mcp",
            ));
        }
        let auth_client_ids: Vec<String> = get("SLUICE_AUTH_CLIENT_IDS")
            .map(|list| {
                list.split(',')
                    .map(str::trim)
                    .filter(|s| !s.is_empty())
                    .map(str::to_owned)
                    .collect()
            })
            .unwrap_or_default();
        let jwks = get("SLUICE_AUTH_JWKS_URL").is_some();
        if !auth_client_ids.is_empty() && !jwks {
            return Err(invalid(
                "SLUICE_AUTH_CLIENT_IDS",
                "needs SLUICE_AUTH_JWKS_URL: client ids are checked on an authorization server's tokens",
            ));
        }
        if get("SLUICE_AUTH_SCOPE_PREFIX").is_some() && !jwks {
            return Err(invalid(
                "SLUICE_AUTH_SCOPE_PREFIX",
                "needs SLUICE_AUTH_JWKS_URL: the prefix is read off an authorization server's scopes",
            ));
        }
        let dev_tokens = match get("SLUICE_DEV_TOKENS") {
            None | Some("false" | "0" | "off") => false,
            Some("true" | "1" | "on") => true,
            Some(other) => {
                return Err(invalid(
                    "SLUICE_DEV_TOKENS",
                    format!("must be true or false, got {other:?}"),
                ));
            }
        };
        if matches!(backend, Backend::Aws(_)) && !jwks && !dev_tokens {
            return Err(invalid(
                "SLUICE_AUTH_JWKS_URL",
                "required when SLUICE_BACKEND=aws: name your authorization server's JWKS \
                 (or, for development only, set SLUICE_DEV_TOKENS=true to accept tokens from `sluice token`)",
            ));
        }
        if jwks && dev_tokens {
            return Err(invalid(
                "SLUICE_DEV_TOKENS",
                "cannot be set with SLUICE_AUTH_JWKS_URL: bearer tokens come from one place",
            ));
        }
        let download_url_ttl = secs(&get, "SLUICE_DOWNLOAD_URL_TTL_SECS", 60)?;
        if download_url_ttl > Duration::from_secs(60) {
            return Err(invalid(
                "SLUICE_DOWNLOAD_URL_TTL_SECS",
                "must be at most 60",
            ));
        }

        Ok(Self {
            backend,
            lambda,
            download_url_ttl,
            host: match get("SLUICE_HOST") {
                None => IpAddr::from([127, 0, 0, 1]),
                Some(h) => h.parse().map_err(|_| {
                    invalid("SLUICE_HOST", "must be an IP address such as 127.0.0.1")
                })?,
            },
            port: match get("SLUICE_PORT") {
                None => 8787,
                Some(p) => p
                    .parse()
                    .map_err(|_| invalid("SLUICE_PORT", "must be a port number from 0 to 65535"))?,
            },
            public_url: get("SLUICE_PUBLIC_URL")
                .map(|u| origin_url("SLUICE_PUBLIC_URL", u))
                .transpose()?,
            data_dir: PathBuf::from(get("SLUICE_DATA_DIR").unwrap_or(".sluice")),
            master_secret: get("SLUICE_MASTER_SECRET")
                .map(|s| MasterSecret::new(s).map_err(|e| invalid("SLUICE_MASTER_SECRET", e)))
                .transpose()?,
            key_id,
            previous,
            handle_ttl: secs(&get, "SLUICE_HANDLE_TTL_SECS", 45 * 60)?,
            link_ttl: secs(&get, "SLUICE_LINK_TTL_SECS", 5 * 60)?,
            upload_ttl: secs(&get, "SLUICE_UPLOAD_TTL_SECS", 15 * 60)?,
            max_upload_bytes: positive(&get, "SLUICE_MAX_UPLOAD_BYTES", 5 << 30)?,
            quota_bytes: positive(&get, "SLUICE_QUOTA_BYTES", 20 << 30)?,
            auth_issuer: get("SLUICE_AUTH_ISSUER")
                .unwrap_or("sluice-local")
                .to_owned(),
            auth_audience: get("SLUICE_AUTH_AUDIENCE").map(str::to_owned),
            auth_client_ids,
            auth_scope_prefix: get("SLUICE_AUTH_SCOPE_PREFIX").map(str::to_owned),
            dev_tokens,
            mcp_url,
            auth_servers: match get("SLUICE_AUTH_SERVERS") {
                Some(list) => list
                    .split(',')
                    .map(str::trim)
                    .filter(|s| !s.is_empty())
                    .map(|u| origin_url("SLUICE_AUTH_SERVERS", u))
                    .collect::<Result<_, _>>()?,
                None => get("SLUICE_AUTH_ISSUER")
                    .and_then(|i| Url::parse(i).ok())
                    .filter(|u| matches!(u.scheme(), "http" | "https"))
                    .into_iter()
                    .collect(),
            },
            auth_jwks_url: get("SLUICE_AUTH_JWKS_URL")
                .map(|u| {
                    let url = Url::parse(u)
                        .map_err(|e| invalid("SLUICE_AUTH_JWKS_URL", format!("not a URL ({e})")))?;
                    // Keys that decide who may do what come over TLS; plain
                    // HTTP only from this machine (a local authorization server).
                    if url.scheme() == "https" && url.host().is_some()
                        || url.scheme() == "http" && crate::actions::upstream_url_allowed(&url)
                    {
                        Ok(url)
                    } else {
                        Err(invalid(
                            "SLUICE_AUTH_JWKS_URL",
                            "must be an https:// URL (http:// only on a loopback address)",
                        ))
                    }
                })
                .transpose()?,
            auth_jwks_refresh: secs(&get, "SLUICE_AUTH_JWKS_REFRESH_SECS", 30)?,
            mcp_max_body_bytes: positive(&get, "SLUICE_MCP_MAX_BODY_BYTES", 256 * 1024)?,
            dev_token_ttl: secs(&get, "SLUICE_DEV_TOKEN_TTL_SECS", 30 * 24 * 3600)?,
            log: get("SLUICE_LOG").unwrap_or("info").parse().map_err(|e| {
                invalid(
                    "SLUICE_LOG",
                    format!("not a level or target=level list ({e})"),
                )
            })?,
            actions,
            example_actions,
            action_limits,
            max_transfers: usize::try_from(positive(&get, "SLUICE_MAX_TRANSFERS", 256)?)
                .unwrap_or(usize::MAX),
            max_connections: usize::try_from(positive(&get, "SLUICE_MAX_CONNECTIONS", 1024)?)
                .unwrap_or(usize::MAX),
            header_read_timeout: secs(&get, "SLUICE_HEADER_READ_TIMEOUT_SECS", 10)?,
            body_idle_timeout: secs(&get, "SLUICE_BODY_IDLE_TIMEOUT_SECS", 30)?,
            pending_caps: crate::records::PendingCaps {
                files: positive(&get, "SLUICE_MAX_PENDING_FILES", 100)?,
                bytes: positive(&get, "SLUICE_MAX_PENDING_BYTES", 50 << 30)?,
            },
            issue_rate: crate::rate::IssueRate {
                per_minute: u32::try_from(positive(&get, "SLUICE_ISSUE_RATE_PER_MINUTE", 120)?)
                    .unwrap_or(u32::MAX),
                burst: u32::try_from(positive(&get, "SLUICE_ISSUE_BURST", 60)?).unwrap_or(u32::MAX),
            },
        })
    }
}

fn invalid(var: &'static str, reason: impl ToString) -> ConfigError {
    ConfigError {
        var,
        reason: reason.to_string(),
    }
}

fn positive<'a>(
    get: &impl Fn(&'static str) -> Option<&'a str>,
    var: &'static str,
    default: u64,
) -> Result<u64, ConfigError> {
    match get(var) {
        None => Ok(default),
        Some(v) => match v.trim().parse::<u64>() {
            Ok(n) if n > 0 => Ok(n),
            _ => Err(invalid(
                var,
                format!("must be a positive whole number, got {v:?}"),
            )),
        },
    }
}

fn secs<'a>(
    get: &impl Fn(&'static str) -> Option<&'a str>,
    var: &'static str,
    default: u64,
) -> Result<Duration, ConfigError> {
    positive(get, var, default).map(Duration::from_secs)
}

/// An `http`/`https` origin with an optional path prefix, no query or fragment.
fn origin_url(var: &'static str, value: &str) -> Result<Url, ConfigError> {
    let url = Url::parse(value).map_err(|e| invalid(var, format!("not a URL ({e})")))?;
    if !matches!(url.scheme(), "http" | "https") || url.host().is_none() {
        return Err(invalid(
            var,
            "must be an http:// or https:// URL with a host",
        ));
    }
    if url.query().is_some()
        || url.fragment().is_some()
        || !url.username().is_empty()
        || url.password().is_some()
    {
        return Err(invalid(
            var,
            "must not carry credentials, a query or a fragment",
        ));
    }
    Ok(url)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(vars: &[(&str, &str)]) -> Result<Config, ConfigError> {
        Config::from_vars(vars.iter().map(|(k, v)| (k.to_string(), v.to_string())))
    }

    #[test]
    fn defaults_need_no_variables() {
        let c = config(&[]).unwrap();
        assert_eq!(c.port, 8787);
        assert_eq!(c.handle_ttl, Duration::from_secs(2700));
        assert_eq!(c.link_ttl, Duration::from_secs(300));
        assert!(c.master_secret.is_none());
        assert_eq!(c.key_id.as_str(), "k1");
    }

    #[test]
    fn each_bad_value_is_refused_naming_its_variable() {
        let cases: &[(&str, &str)] = &[
            ("SLUICE_MASTER_SECRET", "too short"),
            ("SLUICE_PORT", "99999"),
            ("SLUICE_HOST", "localhost:80"),
            ("SLUICE_HANDLE_TTL_SECS", "0"),
            ("SLUICE_LINK_TTL_SECS", "-5"),
            ("SLUICE_MAX_UPLOAD_BYTES", "lots"),
            ("SLUICE_QUOTA_BYTES", "0"),
            ("SLUICE_PUBLIC_URL", "ftp://example.com"),
            ("SLUICE_PUBLIC_URL", "not a url"),
            ("SLUICE_PUBLIC_URL", "https://user:pw@example.com"),
            ("SLUICE_KEY_ID", "has space"),
            ("SLUICE_AUTH_SERVERS", "https://ok.example, nope"),
            ("SLUICE_MCP_MAX_BODY_BYTES", "0"),
            ("SLUICE_AUTH_JWKS_URL", "file:///etc/keys"),
            ("SLUICE_AUTH_JWKS_URL", "http://auth.example.com/jwks"),
            ("SLUICE_AUTH_JWKS_REFRESH_SECS", "soon"),
            ("SLUICE_BACKEND", "gcs"),
            ("SLUICE_DOWNLOAD_URL_TTL_SECS", "61"),
            ("SLUICE_LOG", "sluice=loud"),
            ("SLUICE_ACTIONS_S3_KEY", "config/actions.toml"),
            ("SLUICE_EXAMPLE_ACTIONS", "maybe"),
            ("SLUICE_MCP_URL", "https://files.example.com/api"),
            ("SLUICE_MCP_URL", "files.example.com/mcp"),
            ("SLUICE_AUTH_CLIENT_IDS", "abc"),
            ("SLUICE_AUTH_SCOPE_PREFIX", "sluice/"),
            ("SLUICE_DEV_TOKENS", "yes"),
            ("SLUICE_MAX_TRANSFERS", "0"),
            ("SLUICE_MAX_CONNECTIONS", "many"),
            ("SLUICE_HEADER_READ_TIMEOUT_SECS", "0"),
            ("SLUICE_BODY_IDLE_TIMEOUT_SECS", "-3"),
            ("SLUICE_ACTION_MAX_CONCURRENT_READS", "0"),
            ("SLUICE_ACTION_READ_TIMEOUT_SECS", "-1"),
            ("SLUICE_ACTION_MAX_BYTES", "lots"),
        ];
        for (var, value) in cases {
            let err = config(&[(var, value)]).unwrap_err();
            assert_eq!(err.var, *var, "{var}={value}");
            assert!(err.to_string().starts_with(var));
        }
    }

    #[test]
    fn the_log_filter_takes_levels_and_targets() {
        use tracing::Level;
        let c = config(&[("SLUICE_LOG", "sluice=debug,warn")]).unwrap();
        assert!(c.log.would_enable("sluice::service", &Level::DEBUG));
        assert!(!c.log.would_enable("hyper", &Level::INFO));
        assert!(c.log.would_enable("hyper", &Level::WARN));
        let c = config(&[]).unwrap();
        assert!(c.log.would_enable("sluice", &Level::INFO));
        assert!(!c.log.would_enable("sluice", &Level::DEBUG));
    }

    #[test]
    fn the_aws_backend_names_what_it_lacks() {
        let secret = "s".repeat(32);
        let base = [("SLUICE_BACKEND", "aws")];
        assert_eq!(config(&base).unwrap_err().var, "SLUICE_S3_BUCKET");
        let with_bucket = [("SLUICE_BACKEND", "aws"), ("SLUICE_S3_BUCKET", "b")];
        assert_eq!(
            config(&with_bucket).unwrap_err().var,
            "SLUICE_DYNAMODB_TABLE"
        );
        let no_secret = [
            ("SLUICE_BACKEND", "aws"),
            ("SLUICE_S3_BUCKET", "b"),
            ("SLUICE_DYNAMODB_TABLE", "t"),
            ("SLUICE_DEV_TOKENS", "true"),
        ];
        assert_eq!(config(&no_secret).unwrap_err().var, "SLUICE_MASTER_SECRET");
        let bad_endpoint = [
            ("SLUICE_BACKEND", "aws"),
            ("SLUICE_S3_BUCKET", "b"),
            ("SLUICE_DYNAMODB_TABLE", "t"),
            ("SLUICE_MASTER_SECRET", secret.as_str()),
            ("SLUICE_DEV_TOKENS", "true"),
            ("SLUICE_S3_ENDPOINT_URL", "localhost:9000"),
        ];
        assert_eq!(
            config(&bad_endpoint).unwrap_err().var,
            "SLUICE_S3_ENDPOINT_URL"
        );
        let ok = config(&bad_endpoint[..5]).unwrap();
        assert!(matches!(ok.backend, Backend::Aws(ref a) if a.bucket == "b" && a.table == "t"));
    }

    #[test]
    fn the_actions_catalog_comes_from_one_place() {
        assert_eq!(config(&[]).unwrap().actions, None);
        let c = config(&[("SLUICE_ACTIONS_FILE", "/etc/sluice/actions.toml")]).unwrap();
        assert_eq!(
            c.actions,
            Some(ActionsSource::File("/etc/sluice/actions.toml".into()))
        );
        let secret = "s".repeat(32);
        let aws = [
            ("SLUICE_BACKEND", "aws"),
            ("SLUICE_S3_BUCKET", "b"),
            ("SLUICE_DYNAMODB_TABLE", "t"),
            ("SLUICE_MASTER_SECRET", secret.as_str()),
            ("SLUICE_DEV_TOKENS", "true"),
        ];
        let with = |extra: &[(&'static str, &'static str)]| {
            let mut vars = aws.to_vec();
            vars.extend_from_slice(extra);
            config(&vars)
        };
        assert_eq!(
            with(&[("SLUICE_ACTIONS_S3_KEY", "config/actions.toml")])
                .unwrap()
                .actions,
            Some(ActionsSource::S3Key("config/actions.toml".into()))
        );
        for bad in [
            &[("SLUICE_ACTIONS_S3_KEY", "files/x.toml")][..],
            &[
                ("SLUICE_ACTIONS_S3_KEY", "a.toml"),
                ("SLUICE_ACTIONS_FILE", "a.toml"),
            ],
        ] {
            assert_eq!(with(bad).unwrap_err().var, "SLUICE_ACTIONS_S3_KEY");
        }
        let limits = config(&[
            ("SLUICE_ACTION_MAX_CONCURRENT_READS", "2"),
            ("SLUICE_ACTION_READ_TIMEOUT_SECS", "3"),
        ])
        .unwrap()
        .action_limits;
        assert_eq!(limits.max_concurrent_reads, 2);
        assert_eq!(limits.read_timeout, Duration::from_secs(3));
        assert_eq!(limits.max_bytes, 64 << 20);
    }

    /// In aws mode, tokens come from an authorization server unless
    /// development tokens are asked for by name: never a silent fallback.
    #[test]
    fn aws_mode_needs_an_authorization_server_or_an_explicit_dev_switch() {
        let secret = "s".repeat(32);
        let base = vec![
            ("SLUICE_BACKEND", "aws"),
            ("SLUICE_S3_BUCKET", "b"),
            ("SLUICE_DYNAMODB_TABLE", "t"),
            ("SLUICE_MASTER_SECRET", secret.as_str()),
        ];
        let err = config(&base).unwrap_err();
        assert_eq!(err.var, "SLUICE_AUTH_JWKS_URL");
        assert!(err.reason.contains("SLUICE_DEV_TOKENS=true"), "{err}");
        let mut dev = base.clone();
        dev.push(("SLUICE_DEV_TOKENS", "true"));
        assert!(config(&dev).unwrap().dev_tokens);
        let mut jwks = base.clone();
        jwks.push(("SLUICE_AUTH_JWKS_URL", "https://auth.example.com/jwks"));
        let c = config(&jwks).unwrap();
        assert!(!c.dev_tokens);
        assert_eq!(c.auth_audience, None, "the MCP URL, known at run time");
        jwks.push(("SLUICE_DEV_TOKENS", "true"));
        assert_eq!(config(&jwks).unwrap_err().var, "SLUICE_DEV_TOKENS");
    }

    #[test]
    fn cognito_settings_are_read_with_a_jwks() {
        let c = config(&[
            ("SLUICE_AUTH_JWKS_URL", "https://cognito.example/jwks"),
            ("SLUICE_AUTH_CLIENT_IDS", "abc, def,"),
            ("SLUICE_AUTH_SCOPE_PREFIX", "sluice/"),
            (
                "SLUICE_MCP_URL",
                "https://x.example/lambda-url/sluice-mcp/mcp",
            ),
        ])
        .unwrap();
        assert_eq!(c.auth_client_ids, ["abc", "def"]);
        assert_eq!(c.auth_scope_prefix.as_deref(), Some("sluice/"));
        assert_eq!(
            c.mcp_url.unwrap().as_str(),
            "https://x.example/lambda-url/sluice-mcp/mcp"
        );
    }

    #[test]
    fn lambda_is_detected_from_the_runtime_api_variable() {
        assert!(
            config(&[("AWS_LAMBDA_RUNTIME_API", "127.0.0.1:9001")])
                .unwrap()
                .lambda
        );
        assert!(!config(&[]).unwrap().lambda);
    }

    #[test]
    fn a_previous_key_needs_both_halves_and_a_new_id() {
        let secret = "x".repeat(32);
        assert_eq!(
            config(&[("SLUICE_PREVIOUS_MASTER_SECRET", &secret)])
                .unwrap_err()
                .var,
            "SLUICE_PREVIOUS_KEY_ID"
        );
        assert_eq!(
            config(&[
                ("SLUICE_PREVIOUS_MASTER_SECRET", &secret),
                ("SLUICE_PREVIOUS_KEY_ID", "k1")
            ])
            .unwrap_err()
            .var,
            "SLUICE_PREVIOUS_KEY_ID"
        );
        let c = config(&[
            ("SLUICE_MASTER_SECRET", &"y".repeat(32)),
            ("SLUICE_KEY_ID", "k2"),
            ("SLUICE_PREVIOUS_MASTER_SECRET", &secret),
            ("SLUICE_PREVIOUS_KEY_ID", "k1"),
        ])
        .unwrap();
        assert_eq!(c.previous.unwrap().0.as_str(), "k1");
    }

    #[test]
    fn the_secret_never_appears_in_an_error() {
        let err = config(&[("SLUICE_MASTER_SECRET", "hunter2-hunter2")]).unwrap_err();
        assert!(!err.to_string().contains("hunter2"));
    }
}
