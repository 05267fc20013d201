//! Configuration: read from the environment once, at start, into a typed
//! struct of groups, through one table of settings
//! ([`settings::SETTINGS`]: each variable once, with its default, parser,
//! group and doc). Each group is a file of its own that reads it whole
//! (`serve`, `urls`, `auth`, `keys`, `data_dir`, `backends`, `transfers`,
//! `limits`, `actions`, `operations`), with the rules that tie its
//! settings together; whoever uses a group holds it as it is. Every
//! refusal names the variable. Nothing else reads the environment.

mod actions;
mod auth;
mod backends;
mod data_dir;
mod imports;
mod keys;
mod limits;
mod operations;
mod read;
mod scan;
mod serve;
pub mod settings;
#[cfg(test)]
mod tests;
mod transfers;
mod typos;
mod urls;

pub use actions::{ActionsSettings, ActionsSource};
pub use auth::AuthSettings;
pub use backends::{AwsConfig, DynamoConfig, Records, S3Config, Store};
pub use data_dir::DataDir;
pub use imports::Imports;
pub use keys::KeySettings;
pub use limits::{Kind, Rate, Rates, UserLimits};
pub use operations::{Operations, WebhookSource, webhook_secrets};
pub use scan::{ClamdAddress, Scan, ScanMode, TypeCheck};
pub use serve::Serve;
pub use transfers::Transfers;
pub use urls::{Endpoints, Urls};

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

/// The validated configuration: one struct per group.
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
    /// The listener and its limits.
    pub serve: Serve,
    /// Where clients reach sluice.
    pub urls: Urls,
    /// Bearer tokens and the authorization server.
    pub auth: AuthSettings,
    /// The master secret and its rotation.
    pub keys: KeySettings,
    /// The data directory and its store's limits.
    pub data: DataDir,
    /// What one user may ask for.
    pub limits: UserLimits,
    /// Actions and their upstreams.
    pub actions: ActionsSettings,
    /// Webhooks, metrics and logs.
    pub operations: Operations,
    /// How files move: lifetimes, sizes and time limits of transfers.
    pub transfers: Transfers,
    /// Files fetched from a URL.
    pub imports: Imports,
    /// Malware scanning.
    pub scan: Scan,
    /// Each `SLUICE_*` variable set that is not a setting, in a line that
    /// names the nearest one: logged at start ([`Config::refuse_unknown`]
    /// refuses them instead).
    pub unknown: Vec<String>,
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
        let vars = Vars::new(vars, table());
        vars.check()?;
        let unknown = vars.unknown();
        let store = backends::store(&vars)?;
        let records = backends::records(&vars)?;
        rules(&vars)?;
        let in_dir = matches!(store, Store::Dir);
        let data = DataDir::read(&vars)?;
        Self {
            store,
            records,
            aws: backends::aws(&vars)?,
            lambda: vars.in_lambda(),
            serve: Serve::read(&vars)?,
            urls: Urls::read(&vars)?,
            auth: AuthSettings::read(&vars)?,
            keys: KeySettings::read(&vars)?,
            imports: Imports::read(&vars, &data)?,
            data,
            limits: UserLimits::read(&vars, in_dir)?,
            actions: ActionsSettings::read(&vars)?,
            operations: Operations::read(&vars)?,
            transfers: Transfers::read(&vars, in_dir)?,
            scan: Scan::read(&vars)?,
            unknown,
        }
        .strict(vars.flag("SLUICE_STRICT")?.unwrap_or(false))
    }

    /// Refuses to start if any `SLUICE_*` variable set is not a setting
    /// (`SLUICE_STRICT`, `sluice serve --strict`), naming each.
    pub fn refuse_unknown(&self) -> Result<(), ConfigError> {
        if self.unknown.is_empty() {
            return Ok(());
        }
        Err(invalid(
            "SLUICE_STRICT",
            format!("refused to start: {}", self.unknown.join("; ")),
        ))
    }

    /// `self`, or its refusal where `strict` and a variable is no setting.
    fn strict(self, strict: bool) -> Result<Self, ConfigError> {
        if strict {
            self.refuse_unknown()?;
        }
        Ok(self)
    }
}

/// The rules that tie settings together, each group's in its file, each
/// refusal naming the variable to change. Every value has passed its own
/// parser by now.
fn rules(vars: &Vars) -> Result<(), ConfigError> {
    backends::rules(vars)?;
    let shared = backends::shared_records(vars);
    keys::rules(vars, shared)?;
    actions::rules(vars, backends::in_bucket(vars))?;
    operations::rules(vars, shared)?;
    auth::rules(vars, shared)?;
    urls::rules(vars)?;
    imports::rules(vars, shared)?;
    scan::rules(vars, backends::in_bucket(vars))?;
    transfers::rules(vars)
}

/// The refusal of `var`'s value, `why` in words.
fn refuse(var: &'static str, why: &str) -> Result<(), ConfigError> {
    Err(invalid(var, why))
}

/// Every setting: each group's rows, kept in the file that reads them
/// (`config/<group>.rs`, its `ROWS`), so a setting is one file.
pub fn table() -> impl Iterator<Item = &'static settings::Setting> + Clone {
    [
        self::backends::ROWS,
        self::serve::ROWS,
        self::urls::ROWS,
        self::auth::ROWS,
        self::data_dir::ROWS,
        self::keys::ROWS,
        self::operations::ROWS,
        self::transfers::ROWS,
        self::limits::ROWS,
        self::imports::ROWS,
        self::scan::ROWS,
        self::actions::ROWS,
    ]
    .into_iter()
    .flatten()
}

/// The setting of variable `name`, if the table has it.
pub fn setting(name: &str) -> Option<&'static settings::Setting> {
    table().find(|s| s.name == name)
}
