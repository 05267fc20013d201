//! The master secret and its rotation, one group.

use super::ConfigError;
use super::read::{Vars, invalid};
use super::refuse;
use super::settings::Default::{Unset, Value};
use super::settings::Group;
use super::settings::{Parse, Setting, s};
use crate::keys::{KeyId, MasterSecret};

/// The keys every token is signed and verified with.
#[derive(Debug, Clone)]
pub struct KeySettings {
    /// The master secret (`SLUICE_MASTER_SECRET`, at least 32 bytes). With
    /// the records here, one is generated and kept in the data directory
    /// when unset.
    pub master_secret: Option<MasterSecret>,
    /// The master secret's id (`SLUICE_KEY_ID`, default `k1`).
    pub key_id: KeyId,
    /// The secret being rotated out, still accepted for verification
    /// (`SLUICE_PREVIOUS_MASTER_SECRET` with `SLUICE_PREVIOUS_KEY_ID`).
    pub previous: Option<(KeyId, MasterSecret)>,
}

impl KeySettings {
    pub(super) fn read(vars: &Vars) -> Result<Self, ConfigError> {
        Ok(Self {
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
        })
    }
}

/// The master secret and its rotation.
pub(super) fn rules(vars: &Vars, shared: bool) -> Result<(), ConfigError> {
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

/// This group's settings (its variables, parsers, defaults and one line of
/// doc each), beside the code that reads them: the configuration page and
/// the start's checks take them from [`super::table`].
pub(super) const ROWS: &[Setting] = &[
    s(
        "SLUICE_MASTER_SECRET",
        Group::Core,
        Parse::Secret,
        Unset("generated into `<data dir>/master.key`"),
        "the master secret, at least 32 bytes",
    ),
    s(
        "SLUICE_KEY_ID",
        Group::Core,
        Parse::KeyId,
        Value("k1"),
        "the secret's id (`kid` of every token)",
    ),
    s(
        "SLUICE_PREVIOUS_MASTER_SECRET",
        Group::Core,
        Parse::Secret,
        Unset("—"),
        "a rotated-out secret, still accepted for verification (with `SLUICE_PREVIOUS_KEY_ID`)",
    ),
    s(
        "SLUICE_PREVIOUS_KEY_ID",
        Group::Core,
        Parse::KeyId,
        Unset("—"),
        "the rotated-out secret's id (with `SLUICE_PREVIOUS_MASTER_SECRET`)",
    ),
    s(
        "SLUICE_MASTER_SECRET_ID",
        Group::Aws,
        Parse::Text,
        Unset("—"),
        "a Secrets Manager secret holding the master secret, read at cold start (instead of `SLUICE_MASTER_SECRET`)",
    ),
];
