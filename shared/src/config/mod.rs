//! Configuration: read from the environment once, at start, into a typed
//! struct, through one table of settings ([`settings::SETTINGS`]: each
//! variable once, with its default, parser, group and doc). Every refusal
//! names the variable. The rules that tie settings together live in one
//! place (`rules`). Nothing else reads the environment.

mod backends;
mod read;
pub mod settings;
#[cfg(test)]
mod tests;
mod transfers;

use std::net::IpAddr;
use std::path::PathBuf;
use std::time::Duration;

pub use backends::{AwsConfig, DynamoConfig, Records, S3Config, Store};
pub use transfers::Transfers;

use tracing_subscriber::filter::Targets;
use url::Url;

use crate::actions::ActionLimits;
use crate::keys::{KeyId, MasterSecret};
use read::{Vars, invalid};

/// Why the configuration was refused. The message names the variable.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{var}: {reason}")]
pub struct ConfigError {
    /// The environment variable at fault.
    pub var: &'static str,
    /// What is wrong with its value.
    pub reason: String,
}

/// The validated configuration.
#[derive(Debug, Clone)]
pub struct Config {
    /// Where the bytes live (`SLUICE_STORE`; `SLUICE_BACKEND` names a pair).
    pub store: Store,
    /// Where the records, the ledger and the outbox live (`SLUICE_RECORDS`).
    pub records: Records,
    /// What the AWS clients share (region, secrets, the event bus).
    pub aws: AwsConfig,
    /// Whether the process runs inside AWS Lambda (`AWS_LAMBDA_RUNTIME_API` is set).
    pub lambda: bool,
    /// Address to listen on (`SLUICE_HOST`, default `127.0.0.1`).
    pub host: IpAddr,
    /// Port to listen on (`SLUICE_PORT`, default 8787; 0 picks a free one).
    pub port: u16,
    /// The origin clients reach sluice at (`SLUICE_PUBLIC_URL`); by default
    /// the address it listens on.
    pub public_url: Option<Url>,
    /// The issuer's base (`SLUICE_ISSUER_URL`): upload links and browser
    /// pages; by default the public URL.
    pub issuer_url: Option<Url>,
    /// The resolver's base (`SLUICE_RESOLVER_URL`): download links; by
    /// default the public URL.
    pub resolver_url: Option<Url>,
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
    /// The origins the in-chat widget runs on (`SLUICE_WIDGET_ORIGINS`;
    /// empty: claude.ai's for this connector, derived from the MCP URL).
    pub widget_origins: Vec<String>,
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
    /// Of those, one user's at once (`SLUICE_MAX_TRANSFERS_PER_USER`, default 16).
    pub max_transfers_per_user: usize,
    /// Open connections at once (`SLUICE_MAX_CONNECTIONS`, default 1024);
    /// more wait to be accepted.
    pub max_connections: usize,
    /// How long a client may take to send a request's headers
    /// (`SLUICE_HEADER_READ_TIMEOUT_SECS`, default 10).
    pub header_read_timeout: Duration,
    /// How long a write to a client may wait (`SLUICE_WRITE_TIMEOUT_SECS`,
    /// default 30).
    pub write_timeout: Duration,
    /// How long a request body other than an upload's may take to arrive
    /// (`SLUICE_BODY_READ_TIMEOUT_SECS`, default 30).
    pub body_read_timeout: Duration,
    /// Per-user rates (`SLUICE_ISSUE_*`, `SLUICE_LINK_*`,
    /// `SLUICE_RESOLVE_*`, `SLUICE_ACTION_RATE_*`/`SLUICE_ACTION_BURST`)
    /// and the per-page rate of browser page starts
    /// (`SLUICE_PAGE_START_*`): more are answered 429 with `Retry-After`.
    /// Counted per process: on Lambda, per warm instance.
    pub rates: crate::rate::Rates,
    /// Files one user may have waiting for their bytes
    /// (`SLUICE_MAX_PENDING_FILES`, default 1000, one batch) and the bytes they may
    /// declare in all (`SLUICE_MAX_PENDING_BYTES`, default 50 GiB); more are
    /// answered 429 until some are uploaded or expire. And the bytes all of
    /// one user's files may declare (`SLUICE_MAX_STORED_BYTES_PER_USER`,
    /// default half the local quota; none on S3).
    pub pending_caps: crate::records::PendingCaps,
    /// Where the actions catalog comes from (`SLUICE_ACTIONS_FILE`, or in
    /// aws mode `SLUICE_ACTIONS_S3_KEY`); `None`: no configured actions.
    pub actions: Option<ActionsSource>,
    /// Whether the local binary serves its example upstream and actions
    /// (`SLUICE_EXAMPLE_ACTIONS`); unset: on in local mode when no catalog
    /// is configured.
    pub example_actions: Option<bool>,
    /// Where events go (`SLUICE_WEBHOOK_URL` with `SLUICE_WEBHOOK_SECRET`,
    /// or `SLUICE_WEBHOOKS_FILE`); `None`: no webhooks.
    pub webhooks: Option<WebhookSource>,
    /// Whether metrics are counted and served (`SLUICE_METRICS`, default
    /// on).
    pub metrics: bool,
    /// The bearer token `GET /metrics` asks for (`SLUICE_METRICS_TOKEN`);
    /// `None`: it answers loopback peers only.
    pub metrics_token: Option<MasterSecret>,
    /// The CloudWatch namespace of the functions' metrics
    /// (`SLUICE_METRICS_NAMESPACE`, default `sluice`).
    pub metrics_namespace: String,
    /// The waits before each retry of a webhook delivery
    /// (`SLUICE_WEBHOOK_RETRY_SECS`).
    pub webhook_retry: Vec<Duration>,
    /// How actions run (`SLUICE_ACTION_MAX_CONCURRENT_READS`, default 4;
    /// `SLUICE_ACTION_READ_TIMEOUT_SECS`, default 15;
    /// `SLUICE_ACTION_MAX_BYTES`, default 64 MiB).
    pub action_limits: ActionLimits,
    /// How files move: lifetimes, sizes and time limits of transfers
    /// (the service holds this group as it is).
    pub transfers: Transfers,
}

/// Where the webhook endpoints come from.
#[derive(Clone, PartialEq, Eq)]
pub enum WebhookSource {
    /// One endpoint and its secrets (`SLUICE_WEBHOOK_URL`,
    /// `SLUICE_WEBHOOK_SECRET`), checked when the worker starts.
    One {
        /// Where events are POSTed.
        url: Url,
        /// Its secrets, the new first while one rotates.
        secrets: Vec<String>,
    },
    /// One endpoint whose secrets are in Secrets Manager
    /// (`SLUICE_WEBHOOK_URL`, `SLUICE_WEBHOOK_SECRET_ID`): read at start by
    /// the events function, which then has [`WebhookSource::One`].
    Stored {
        /// Where events are POSTed.
        url: Url,
        /// The secret's id or ARN.
        secret_id: String,
    },
    /// A TOML file of endpoints (`SLUICE_WEBHOOKS_FILE`), read at start.
    File(PathBuf),
}

impl std::fmt::Debug for WebhookSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            WebhookSource::One { url, secrets } => f
                .debug_struct("One")
                .field("url", &url.as_str())
                .field("secrets", &secrets.len())
                .finish(),
            WebhookSource::Stored { url, secret_id } => f
                .debug_struct("Stored")
                .field("url", &url.as_str())
                .field("secret_id", secret_id)
                .finish(),
            WebhookSource::File(path) => f.debug_tuple("File").field(path).finish(),
        }
    }
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
        let vars = Vars::new(vars);
        vars.check()?;
        let store = backends::store(&vars)?;
        let records = backends::records(&vars)?;
        rules(&vars)?;
        let local = matches!(store, Store::Dir);
        let config = Self {
            store,
            records,
            aws: backends::aws(&vars)?,
            lambda: vars.in_lambda(),
            host: vars
                .value("SLUICE_HOST")
                .and_then(|h| h.parse().ok())
                .ok_or_else(|| invalid("SLUICE_HOST", "must be an IP address"))?,
            port: vars
                .value("SLUICE_PORT")
                .and_then(|p| p.parse().ok())
                .ok_or_else(|| invalid("SLUICE_PORT", "must be a port number"))?,
            public_url: vars.url("SLUICE_PUBLIC_URL")?,
            issuer_url: vars.url("SLUICE_ISSUER_URL")?,
            resolver_url: vars.url("SLUICE_RESOLVER_URL")?,
            data_dir: PathBuf::from(vars.value("SLUICE_DATA_DIR").unwrap_or(".sluice")),
            master_secret: vars.secret("SLUICE_MASTER_SECRET")?,
            key_id: vars
                .key_id("SLUICE_KEY_ID")?
                .ok_or_else(|| invalid("SLUICE_KEY_ID", "must be set"))?,
            previous: match (
                vars.key_id("SLUICE_PREVIOUS_KEY_ID")?,
                vars.secret("SLUICE_PREVIOUS_MASTER_SECRET")?,
            ) {
                (Some(id), Some(secret)) => Some((id, secret)),
                _ => None,
            },
            quota_bytes: vars.positive("SLUICE_QUOTA_BYTES")?,
            auth_issuer: vars.text("SLUICE_AUTH_ISSUER").unwrap_or_default(),
            auth_audience: vars.text("SLUICE_AUTH_AUDIENCE"),
            auth_client_ids: vars.list("SLUICE_AUTH_CLIENT_IDS"),
            auth_scope_prefix: vars.text("SLUICE_AUTH_SCOPE_PREFIX"),
            dev_tokens: vars.flag("SLUICE_DEV_TOKENS")?.unwrap_or(false),
            mcp_url: vars.url("SLUICE_MCP_URL")?,
            widget_origins: widget_origins(&vars)?,
            auth_servers: auth_servers(&vars)?,
            auth_jwks_url: vars.url("SLUICE_AUTH_JWKS_URL")?,
            auth_jwks_refresh: vars.secs("SLUICE_AUTH_JWKS_REFRESH_SECS")?,
            mcp_max_body_bytes: vars.positive("SLUICE_MCP_MAX_BODY_BYTES")?,
            dev_token_ttl: vars.secs("SLUICE_DEV_TOKEN_TTL_SECS")?,
            log: log_filter(&vars)?,
            actions: actions_source(&vars),
            webhooks: webhook_source(&vars)?,
            webhook_retry: webhook_retry(&vars)?,
            metrics: vars.flag("SLUICE_METRICS")?.unwrap_or(true),
            metrics_token: vars.secret("SLUICE_METRICS_TOKEN")?,
            metrics_namespace: vars
                .value("SLUICE_METRICS_NAMESPACE")
                .unwrap_or_default()
                .to_owned(),
            example_actions: vars.flag("SLUICE_EXAMPLE_ACTIONS")?,
            action_limits: action_limits(&vars)?,
            max_transfers: vars.count("SLUICE_MAX_TRANSFERS")?,
            max_transfers_per_user: vars.count("SLUICE_MAX_TRANSFERS_PER_USER")?,
            max_connections: vars.count("SLUICE_MAX_CONNECTIONS")?,
            header_read_timeout: vars.secs("SLUICE_HEADER_READ_TIMEOUT_SECS")?,
            write_timeout: vars.secs("SLUICE_WRITE_TIMEOUT_SECS")?,
            body_read_timeout: vars.secs("SLUICE_BODY_READ_TIMEOUT_SECS")?,
            pending_caps: pending_caps(&vars, local)?,
            rates: rates(&vars)?,

            transfers: Transfers {
                download_url_ttl: vars.secs("SLUICE_DOWNLOAD_URL_TTL_SECS")?,
                handle_ttl: vars.secs("SLUICE_HANDLE_TTL_SECS")?,
                link_ttl: vars.secs("SLUICE_LINK_TTL_SECS")?,
                upload_ttl: vars.secs("SLUICE_UPLOAD_TTL_SECS")?,
                max_upload_bytes: match vars.optional_positive("SLUICE_MAX_UPLOAD_BYTES")? {
                    Some(max) => max,
                    None if local => vars.positive("SLUICE_QUOTA_BYTES")?,
                    None => crate::multipart::MAX_PARTS * crate::multipart::MAX_PART_BYTES,
                },
                part_bytes: part_bytes(&vars)?,
                single_put_max_bytes: single_put_max_bytes(&vars)?,
                proof_budget: Duration::from_millis(vars.positive("SLUICE_PROOF_MILLIS")?),
                body_idle_timeout: vars.secs("SLUICE_BODY_IDLE_TIMEOUT_SECS")?,
                status_wait: if vars.in_lambda() {
                    transfers::STATUS_WAIT_ON_LAMBDA
                } else {
                    transfers::STATUS_WAIT
                },
            },
        };
        Ok(config)
    }
}

/// `SLUICE_SINGLE_PUT_MAX_BYTES`, at most what S3 takes in one PUT.
fn single_put_max_bytes(vars: &Vars) -> Result<u64, ConfigError> {
    use crate::multipart::MAX_PART_BYTES;
    let bytes = vars.positive("SLUICE_SINGLE_PUT_MAX_BYTES")?;
    if bytes > MAX_PART_BYTES {
        return Err(invalid(
            "SLUICE_SINGLE_PUT_MAX_BYTES",
            format!("must be at most {MAX_PART_BYTES} (5 GiB), S3's limit for one PUT"),
        ));
    }
    Ok(bytes)
}

/// `SLUICE_PART_BYTES`, within what S3 takes for a part.
fn part_bytes(vars: &Vars) -> Result<u64, ConfigError> {
    use crate::multipart::{MAX_PART_BYTES, MIN_PART_BYTES};
    let bytes = vars.positive("SLUICE_PART_BYTES")?;
    if !(MIN_PART_BYTES..=MAX_PART_BYTES).contains(&bytes) {
        return Err(invalid(
            "SLUICE_PART_BYTES",
            format!(
                "must be from {MIN_PART_BYTES} (5 MiB) to {MAX_PART_BYTES} (5 GiB) bytes, S3's bounds for a part"
            ),
        ));
    }
    Ok(bytes)
}

/// The caps on one user's pending files and on all their bytes: half the
/// local quota by default, so one user cannot fill the disk for everyone;
/// none by default on S3.
fn pending_caps(vars: &Vars, local: bool) -> Result<crate::records::PendingCaps, ConfigError> {
    let stored = match vars.optional_positive("SLUICE_MAX_STORED_BYTES_PER_USER")? {
        Some(cap) => Some(cap),
        None if local => Some(vars.positive("SLUICE_QUOTA_BYTES")? / 2),
        None => None,
    };
    Ok(crate::records::PendingCaps {
        files: vars.positive("SLUICE_MAX_PENDING_FILES")?,
        bytes: vars.positive("SLUICE_MAX_PENDING_BYTES")?,
        stored,
    })
}

/// The per-user rates, and the per-page rate of page starts.
fn rates(vars: &Vars) -> Result<crate::rate::Rates, ConfigError> {
    let rate = |per_minute, burst| {
        Ok::<_, ConfigError>(crate::rate::Rate {
            per_minute: vars.count32(per_minute)?,
            burst: vars.count32(burst)?,
        })
    };
    Ok(crate::rate::Rates {
        issue: rate("SLUICE_ISSUE_RATE_PER_MINUTE", "SLUICE_ISSUE_BURST")?,
        links: rate("SLUICE_LINK_RATE_PER_MINUTE", "SLUICE_LINK_BURST")?,
        resolve: rate("SLUICE_RESOLVE_RATE_PER_MINUTE", "SLUICE_RESOLVE_BURST")?,
        actions: rate("SLUICE_ACTION_RATE_PER_MINUTE", "SLUICE_ACTION_BURST")?,
        page_starts: rate(
            "SLUICE_PAGE_START_RATE_PER_MINUTE",
            "SLUICE_PAGE_START_BURST",
        )?,
        download_bytes_per_hour: vars.positive("SLUICE_DOWNLOAD_BYTES_PER_HOUR")?,
    })
}

/// How actions run.
fn action_limits(vars: &Vars) -> Result<ActionLimits, ConfigError> {
    let max_bytes = vars.positive("SLUICE_ACTION_MAX_BYTES")?;
    Ok(ActionLimits {
        max_concurrent_reads: vars.count("SLUICE_ACTION_MAX_CONCURRENT_READS")?,
        read_timeout: vars.secs("SLUICE_ACTION_READ_TIMEOUT_SECS")?,
        max_bytes,
        max_answer: match vars.lambda_memory_mb() {
            Some(mb) => max_bytes.min((mb << 20) / 6),
            None => max_bytes,
        },
    })
}

/// What to log. rmcp's own lines stay at `warn` unless the filter names
/// rmcp: served statelessly, each request is a session of its own to rmcp,
/// which logs it at `info` under a client it made up (itself); sluice logs
/// the real client (`functions/mcp`).
fn log_filter(vars: &Vars) -> Result<Targets, ConfigError> {
    let filter = vars.value("SLUICE_LOG").unwrap_or("info");
    let filter = if filter.contains("rmcp") {
        filter.to_owned()
    } else {
        format!("{filter},rmcp=warn")
    };
    filter.parse().map_err(|e| {
        invalid(
            "SLUICE_LOG",
            format!("not a level or target=level list ({e})"),
        )
    })
}

/// Where the actions catalog comes from ([`rules`] has refused both at once).
fn actions_source(vars: &Vars) -> Option<ActionsSource> {
    match (
        vars.raw("SLUICE_ACTIONS_FILE"),
        vars.raw("SLUICE_ACTIONS_S3_KEY"),
    ) {
        (Some(path), _) => Some(ActionsSource::File(PathBuf::from(path))),
        (None, Some(key)) => Some(ActionsSource::S3Key(key.trim_start_matches('/').to_owned())),
        (None, None) => None,
    }
}

/// `SLUICE_AUTH_SERVERS`, or the issuer if it is a URL.
/// `SLUICE_WIDGET_ORIGINS`, each an origin: a scheme, a host and a port,
/// nothing after.
fn widget_origins(vars: &Vars) -> Result<Vec<String>, ConfigError> {
    const VAR: &str = "SLUICE_WIDGET_ORIGINS";
    vars.list(VAR)
        .iter()
        .map(|o| {
            let url = read::url(VAR, o)?;
            let origin = url.origin().ascii_serialization();
            if o.trim_end_matches('/') != origin {
                return Err(read::invalid(
                    VAR,
                    format!("{o} is not an origin (scheme://host[:port], no path)"),
                ));
            }
            Ok(origin)
        })
        .collect()
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

/// The rules that tie settings together, each refusal naming the variable
/// to change. Every value has passed its own parser by now.
fn rules(vars: &Vars) -> Result<(), ConfigError> {
    backends::rules(vars)?;
    let shared = backends::shared_records(vars);
    key_rules(vars, shared)?;
    actions_rules(vars, backends::in_bucket(vars))?;
    webhook_rules(vars, shared)?;
    auth_rules(vars, shared)?;
    public_url_rules(vars)?;
    lifetime_rules(vars)
}

/// The refusal of `var`'s value, `why` in words.
fn refuse(var: &'static str, why: &str) -> Result<(), ConfigError> {
    Err(invalid(var, why))
}

/// The master secret and its rotation.
fn key_rules(vars: &Vars, shared: bool) -> Result<(), ConfigError> {
    let set = |var| vars.is_set(var);
    match (
        set("SLUICE_PREVIOUS_KEY_ID"),
        set("SLUICE_PREVIOUS_MASTER_SECRET"),
    ) {
        (false, true) => {
            return refuse(
                "SLUICE_PREVIOUS_KEY_ID",
                "must be set with SLUICE_PREVIOUS_MASTER_SECRET",
            );
        }
        (true, false) => {
            return refuse(
                "SLUICE_PREVIOUS_MASTER_SECRET",
                "must be set with SLUICE_PREVIOUS_KEY_ID",
            );
        }
        _ => {}
    }
    if set("SLUICE_PREVIOUS_KEY_ID")
        && vars.value("SLUICE_PREVIOUS_KEY_ID") == vars.value("SLUICE_KEY_ID")
    {
        return refuse("SLUICE_PREVIOUS_KEY_ID", "must differ from SLUICE_KEY_ID");
    }
    // Replicas sharing a table must share the secret: none is generated.
    if shared && !set("SLUICE_MASTER_SECRET") && !set("SLUICE_MASTER_SECRET_ID") {
        return refuse(
            "SLUICE_MASTER_SECRET",
            "required when the records are in DynamoDB (SLUICE_BACKEND=aws): every replica signs with it (or set SLUICE_MASTER_SECRET_ID)",
        );
    }
    Ok(())
}

/// Where webhooks go: one endpoint (a URL and its secret together) or a
/// file, not both. Locally the server's worker delivers them; on AWS the
/// events function, from the records table's stream.
fn webhook_rules(vars: &Vars, shared: bool) -> Result<(), ConfigError> {
    let set = |var| vars.is_set(var);
    if set("SLUICE_WEBHOOK_SECRET_ID") {
        if set("SLUICE_WEBHOOK_SECRET") {
            return refuse(
                "SLUICE_WEBHOOK_SECRET_ID",
                "set SLUICE_WEBHOOK_SECRET or SLUICE_WEBHOOK_SECRET_ID, not both",
            );
        }
        if !set("SLUICE_WEBHOOK_URL") {
            return refuse("SLUICE_WEBHOOK_SECRET_ID", "set without SLUICE_WEBHOOK_URL");
        }
        if !shared {
            return refuse(
                "SLUICE_WEBHOOK_SECRET_ID",
                "is read from Secrets Manager by the events function, with the records in DynamoDB only: set SLUICE_WEBHOOK_SECRET",
            );
        }
        return Ok(());
    }
    match (
        set("SLUICE_WEBHOOK_URL"),
        set("SLUICE_WEBHOOK_SECRET"),
        set("SLUICE_WEBHOOKS_FILE"),
    ) {
        (true, _, true) => refuse(
            "SLUICE_WEBHOOKS_FILE",
            "set SLUICE_WEBHOOK_URL or SLUICE_WEBHOOKS_FILE, not both",
        ),
        (true, false, _) => refuse(
            "SLUICE_WEBHOOK_SECRET",
            "required with SLUICE_WEBHOOK_URL (or SLUICE_WEBHOOK_SECRET_ID, in aws mode): whsec_ and the base64 of 24 to 64 random bytes",
        ),
        (false, true, _) => refuse(
            "SLUICE_WEBHOOK_SECRET",
            "set without SLUICE_WEBHOOK_URL (a file's endpoints carry their own secrets)",
        ),
        _ => Ok(()),
    }
}

/// The webhook endpoints' source ([`rules`] has checked the combination).
fn webhook_source(vars: &Vars) -> Result<Option<WebhookSource>, ConfigError> {
    if let Some(path) = vars.raw("SLUICE_WEBHOOKS_FILE") {
        return Ok(Some(WebhookSource::File(PathBuf::from(path))));
    }
    let Some(url) = vars.url("SLUICE_WEBHOOK_URL")? else {
        return Ok(None);
    };
    if let Some(secret_id) = vars.raw("SLUICE_WEBHOOK_SECRET_ID") {
        return Ok(Some(WebhookSource::Stored {
            url,
            secret_id: secret_id.to_owned(),
        }));
    }
    let secrets = webhook_secrets(vars.raw("SLUICE_WEBHOOK_SECRET").unwrap_or_default());
    Ok(Some(WebhookSource::One { url, secrets }))
}

/// An endpoint's secrets as `SLUICE_WEBHOOK_SECRET` (or the Secrets Manager
/// secret `SLUICE_WEBHOOK_SECRET_ID` names) says them: space- or
/// comma-separated (a stored value may end in a line break), the new first
/// while one rotates.
pub fn webhook_secrets(value: &str) -> Vec<String> {
    value
        .split([' ', ','])
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
        .collect()
}

/// `SLUICE_WEBHOOK_RETRY_SECS`: seconds, comma-separated.
fn webhook_retry(vars: &Vars) -> Result<Vec<Duration>, ConfigError> {
    const VAR: &str = "SLUICE_WEBHOOK_RETRY_SECS";
    vars.value(VAR)
        .unwrap_or_default()
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|s| {
            s.parse::<u64>()
                .ok()
                .filter(|n| (1..=7 * 24 * 3600).contains(n))
                .map(Duration::from_secs)
                .ok_or_else(|| invalid(VAR, "must be seconds (1 to a week each), comma-separated"))
        })
        .collect()
}

/// Where the actions catalog comes from.
fn actions_rules(vars: &Vars, in_bucket: bool) -> Result<(), ConfigError> {
    let set = |var| vars.is_set(var);
    if let Some(key) = vars.raw("SLUICE_ACTIONS_S3_KEY") {
        if set("SLUICE_ACTIONS_FILE") {
            return refuse(
                "SLUICE_ACTIONS_S3_KEY",
                "set SLUICE_ACTIONS_FILE or SLUICE_ACTIONS_S3_KEY, not both",
            );
        }
        if !in_bucket {
            return refuse(
                "SLUICE_ACTIONS_S3_KEY",
                "needs the bytes in S3 (SLUICE_STORE=s3 or SLUICE_BACKEND=aws; otherwise, use SLUICE_ACTIONS_FILE)",
            );
        }
        if key.starts_with("files/") || key.starts_with("records/") {
            return refuse(
                "SLUICE_ACTIONS_S3_KEY",
                "must not be under files/ or records/, where uploads and records live",
            );
        }
    }
    Ok(())
}

/// The URLs sluice hands out carry single-use links that whoever sees them
/// on the way could use first, and the upload line runs the script it
/// fetches from them: TLS, or this machine.
fn public_url_rules(vars: &Vars) -> Result<(), ConfigError> {
    for var in [
        "SLUICE_PUBLIC_URL",
        "SLUICE_ISSUER_URL",
        "SLUICE_RESOLVER_URL",
        "SLUICE_MCP_URL",
    ] {
        if let Some(url) = vars.url(var)?
            && !crate::actions::upstream_url_allowed(&url)
        {
            return refuse(
                var,
                "must be an https:// URL (http:// only on a loopback address: the links sluice hands out would cross the network in the clear)",
            );
        }
    }
    Ok(())
}

/// Where bearer tokens come from.
fn auth_rules(vars: &Vars, shared: bool) -> Result<(), ConfigError> {
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

/// Lifetimes that bound one another.
fn lifetime_rules(vars: &Vars) -> Result<(), ConfigError> {
    if vars.secs("SLUICE_DOWNLOAD_URL_TTL_SECS")? > Duration::from_secs(60) {
        return refuse("SLUICE_DOWNLOAD_URL_TTL_SECS", "must be at most 60");
    }
    if vars.secs("SLUICE_UPLOAD_TTL_SECS")? > vars.secs("SLUICE_HANDLE_TTL_SECS")? {
        return refuse(
            "SLUICE_UPLOAD_TTL_SECS",
            "must be at most SLUICE_HANDLE_TTL_SECS: an upload finishing after its handle expired would store a file nobody can use",
        );
    }
    Ok(())
}
