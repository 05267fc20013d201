//! Actions and their upstreams, one group.

use std::path::PathBuf;

use super::ConfigError;
use super::read::Vars;
use super::refuse;
use super::settings::Default::{Unset, Value};
use super::settings::Group;
use super::settings::{Parse, Setting, s};
use crate::actions::ActionLimits;

/// Where the actions come from and how they run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ActionsSettings {
    /// Where the actions catalog comes from (`SLUICE_ACTIONS_FILE`, or with
    /// the bytes in S3 `SLUICE_ACTIONS_S3_KEY`); `None`: no configured actions.
    pub source: Option<ActionsSource>,
    /// Whether the local binary serves its example upstream and actions
    /// (`SLUICE_EXAMPLE_ACTIONS`); unset: on with the records here when no
    /// catalog is configured.
    pub examples: Option<bool>,
    /// How actions run (`SLUICE_ACTION_MAX_CONCURRENT_READS`, default 4;
    /// `SLUICE_ACTION_READ_TIMEOUT_SECS`, default 15;
    /// `SLUICE_ACTION_MAX_BYTES`, default 64 MiB).
    pub limits: ActionLimits,
}

impl ActionsSettings {
    pub(super) fn read(vars: &Vars) -> Result<Self, ConfigError> {
        Ok(Self {
            source: actions_source(vars),
            examples: vars.flag("SLUICE_EXAMPLE_ACTIONS")?,
            limits: action_limits(vars)?,
        })
    }
}

/// Where the actions catalog (TOML) is read from, once, at start.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ActionsSource {
    /// A file (`SLUICE_ACTIONS_FILE`).
    File(PathBuf),
    /// An object in the bucket (`SLUICE_ACTIONS_S3_KEY`): Lambda's
    /// environment holds 4 KB, a catalog often more.
    S3Key(String),
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

/// Where the actions catalog comes from.
pub(super) fn rules(vars: &Vars, in_bucket: bool) -> Result<(), ConfigError> {
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

/// This group's settings (its variables, parsers, defaults and one line of
/// doc each), beside the code that reads them: the configuration page and
/// the start's checks take them from [`super::table`].
pub(super) const ROWS: &[Setting] = &[
    s(
        "SLUICE_ACTIONS_FILE",
        Group::Actions,
        Parse::Text,
        Unset("—"),
        "the actions catalog (TOML), read at start",
    ),
    s(
        "SLUICE_ACTIONS_S3_KEY",
        Group::Actions,
        Parse::Text,
        Unset("—"),
        "aws: the catalog as an object in the bucket (e.g. `config/actions.toml`), read at start; not under `files/`",
    ),
    s(
        "SLUICE_EXAMPLE_ACTIONS",
        Group::Actions,
        Parse::Flag,
        Unset("on in local mode without a catalog"),
        "`true`/`false`: the example upstream and its two actions",
    ),
    s(
        "SLUICE_ACTION_MAX_CONCURRENT_READS",
        Group::Actions,
        Parse::Positive,
        Value("4"),
        "stored files checked or read at once for actions, process-wide",
    ),
    s(
        "SLUICE_ACTION_READ_TIMEOUT_SECS",
        Group::Actions,
        Parse::Seconds,
        Value("15"),
        "how long one such read may wait (for its object, or its next chunk)",
    ),
    s(
        "SLUICE_ACTION_MAX_BYTES",
        Group::Actions,
        Parse::Positive,
        Value("67108864"),
        "the most bytes of files one `data-uri` action sends, and of an upstream answer read",
    ),
];
