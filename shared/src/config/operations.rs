//! Events to the team's backend, metrics and logs, one group.

use std::path::PathBuf;
use std::time::Duration;

use tracing_subscriber::filter::Targets;
use url::Url;

use super::ConfigError;
use super::read::{Vars, invalid};
use super::refuse;
use super::settings::Default::{Unset, Value};
use super::settings::Group;
use super::settings::{Parse, Setting, s};
use crate::keys::MasterSecret;

/// Webhooks, metrics and the log filter.
#[derive(Debug, Clone)]
pub struct Operations {
    /// Where events go (`SLUICE_WEBHOOK_URL` with `SLUICE_WEBHOOK_SECRET`,
    /// or `SLUICE_WEBHOOKS_FILE`); `None`: no webhooks.
    pub webhooks: Option<WebhookSource>,
    /// The waits before each retry of a webhook delivery
    /// (`SLUICE_WEBHOOK_RETRY_SECS`).
    pub webhook_retry: Vec<Duration>,
    /// Whether metrics are counted and served (`SLUICE_METRICS`, default
    /// on).
    pub metrics: bool,
    /// The bearer token `GET /metrics` asks for (`SLUICE_METRICS_TOKEN`);
    /// `None`: it answers loopback peers only.
    pub metrics_token: Option<MasterSecret>,
    /// The CloudWatch namespace of the functions' metrics
    /// (`SLUICE_METRICS_NAMESPACE`, default `sluice`).
    pub metrics_namespace: String,
    /// What to log (`SLUICE_LOG`, default `info`): a level, or targets with
    /// levels such as `sluice=debug,info`.
    pub log: Targets,
}

impl Operations {
    pub(super) fn read(vars: &Vars) -> Result<Self, ConfigError> {
        Ok(Self {
            webhooks: webhook_source(vars)?,
            webhook_retry: webhook_retry(vars)?,
            metrics: vars.flag("SLUICE_METRICS")?.unwrap_or(true),
            metrics_token: vars.secret("SLUICE_METRICS_TOKEN")?,
            metrics_namespace: vars
                .value("SLUICE_METRICS_NAMESPACE")
                .unwrap_or_default()
                .to_owned(),
            log: log_filter(vars)?,
        })
    }
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

/// Where webhooks go: one endpoint (a URL and its secret together) or a
/// file, not both. Locally the server's worker delivers them; on AWS the
/// events function, from the records table's stream.
pub(super) fn rules(vars: &Vars, shared: bool) -> Result<(), ConfigError> {
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

/// This group's settings (its variables, parsers, defaults and one line of
/// doc each), beside the code that reads them: the configuration page and
/// the start's checks take them from [`super::table`].
pub(super) const ROWS: &[Setting] = &[
    s(
        "SLUICE_LOG",
        Group::Core,
        Parse::LogFilter,
        Value("info"),
        "what to log: a level (`debug`), or targets with levels (`sluice=debug,warn`); rmcp's own lines only at `warn` unless it names `rmcp`",
    ),
    s(
        "SLUICE_WEBHOOK_URL",
        Group::Operations,
        Parse::Url,
        Unset("—"),
        "where every event (`file.ready`, `file.downloaded`, `file.deleted`, `file.expired`, `file.rejected`) is POSTed, signed as Standard Webhooks says ([operations](operations.md)); `https`, or `http` to a loopback receiver only; needs `SLUICE_WEBHOOK_SECRET` or `SLUICE_WEBHOOK_SECRET_ID`. Locally the server delivers them; on AWS the events function, from the table's stream (the template's `WebhookUrl`)",
    ),
    s(
        "SLUICE_WEBHOOK_SECRET",
        Group::Operations,
        Parse::Text,
        Unset("—"),
        "its secret, `whsec_` and the base64 of 24 to 64 random bytes; while one rotates, the new and the old, space-separated (each signs)",
    ),
    s(
        "SLUICE_WEBHOOK_SECRET_ID",
        Group::Operations,
        Parse::Text,
        Unset("—"),
        "aws mode: a Secrets Manager secret holding `SLUICE_WEBHOOK_SECRET`'s value, read at start instead of it (the template's way: the secret is no plaintext variable of the function)",
    ),
    s(
        "SLUICE_WEBHOOKS_FILE",
        Group::Operations,
        Parse::Text,
        Unset("—"),
        "several endpoints, each with its own secret and events (TOML `[[endpoint]]`: `url`, `secret` or `secrets`, `name`, `events`), read at start; instead of `SLUICE_WEBHOOK_URL`",
    ),
    s(
        "SLUICE_WEBHOOK_RETRY_SECS",
        Group::Operations,
        Parse::Text,
        Value("5,300,1800,7200,18000,36000,36000"),
        "the waits before each retry of a delivery that failed (comma-separated seconds); past the last, the event is given up, logged",
    ),
    s(
        "SLUICE_METRICS",
        Group::Operations,
        Parse::Flag,
        Value("true"),
        "`true`/`false`: count metrics (locally `GET /metrics`; on Lambda EMF lines in the log)",
    ),
    s(
        "SLUICE_METRICS_TOKEN",
        Group::Operations,
        Parse::Secret,
        Unset("—"),
        "local: the bearer token `GET /metrics` asks for (at least 32 bytes); unset, it answers loopback peers only ([operations](operations.md))",
    ),
    s(
        "SLUICE_METRICS_NAMESPACE",
        Group::Operations,
        Parse::Text,
        Value("sluice"),
        "aws: the CloudWatch namespace of the functions' metrics (Embedded Metric Format lines in their logs; the template's alarms read them)",
    ),
];
