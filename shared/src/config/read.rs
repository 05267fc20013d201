//! Reading variables through the settings table (gathered from the groups'
//! rows by [`super::table`]): each value is parsed by its setting's
//! [`Parse`], and an unset variable reads as its default. A name that is not
//! in the table cannot be read.

use std::collections::HashMap;
use std::time::Duration;

use url::Url;

use super::ConfigError;
use super::settings::{Default, Parse, Setting};
use crate::keys::{KeyId, MasterSecret};

/// The process's `SLUICE_*` variables (and `AWS_LAMBDA_RUNTIME_API`), empty
/// ones dropped.
#[derive(Debug)]
pub(super) struct Vars(HashMap<String, String>, Vec<&'static Setting>);

pub(super) fn invalid(var: &'static str, reason: impl ToString) -> ConfigError {
    ConfigError {
        var,
        reason: reason.to_string(),
    }
}

/// What Lambda sets that the configuration reads.
const LAMBDA_VARS: [&str; 2] = ["AWS_LAMBDA_RUNTIME_API", "AWS_LAMBDA_FUNCTION_MEMORY_SIZE"];

impl Vars {
    /// The variables among `vars` that the configuration reads, read
    /// through `table`.
    pub(super) fn new(
        vars: impl IntoIterator<Item = (String, String)>,
        table: impl IntoIterator<Item = &'static Setting>,
    ) -> Self {
        Self(
            vars.into_iter()
                .filter(|(k, v)| {
                    (k.starts_with("SLUICE_") || LAMBDA_VARS.contains(&k.as_str())) && !v.is_empty()
                })
                .collect(),
            table.into_iter().collect(),
        )
    }

    /// The setting of variable `name`.
    fn setting(&self, name: &str) -> Option<&'static Setting> {
        self.1.iter().find(|s| s.name == name).copied()
    }

    /// Checks every set variable with its setting's parser, in the table's order.
    pub(super) fn check(&self) -> Result<(), ConfigError> {
        for s in &self.1 {
            if let Some(value) = self.0.get(s.name) {
                parse_one(s.name, s.parse, value)?;
            }
        }
        Ok(())
    }

    /// One line for each `SLUICE_*` variable set that is not a setting,
    /// with the nearest setting ([`super::typos`]).
    pub(super) fn unknown(&self) -> Vec<String> {
        super::typos::named(self.0.keys().map(String::as_str), &self.1)
    }

    /// Whether `name` is set (to something not empty).
    pub(super) fn is_set(&self, name: &'static str) -> bool {
        self.raw(name).is_some()
    }

    /// `AWS_LAMBDA_RUNTIME_API`: set by Lambda, never by a person.
    pub(super) fn in_lambda(&self) -> bool {
        self.0.contains_key("AWS_LAMBDA_RUNTIME_API")
    }

    /// The function's memory in MB (`AWS_LAMBDA_FUNCTION_MEMORY_SIZE`, set
    /// by Lambda), if set.
    pub(super) fn lambda_memory_mb(&self) -> Option<u64> {
        self.0
            .get("AWS_LAMBDA_FUNCTION_MEMORY_SIZE")
            .and_then(|v| v.parse().ok())
    }

    /// The value as set, if it is.
    pub(super) fn raw(&self, name: &'static str) -> Option<&str> {
        assert!(
            self.setting(name).is_some(),
            "{name} is not in the settings table"
        );
        self.0.get(name).map(String::as_str)
    }

    /// The value as set, or the setting's default value.
    pub(super) fn value(&self, name: &'static str) -> Option<&str> {
        self.raw(name)
            .or(match self.setting(name).map(|s| s.default) {
                Some(Default::Value(v)) => Some(v),
                _ => None,
            })
    }

    /// An optional text.
    pub(super) fn text(&self, name: &'static str) -> Option<String> {
        self.value(name).map(str::to_owned)
    }

    /// A number above zero, set or by default.
    pub(super) fn positive(&self, name: &'static str) -> Result<u64, ConfigError> {
        let v = self
            .value(name)
            .ok_or_else(|| invalid(name, "has no default: set it"))?;
        positive(name, v)
    }

    /// A number above zero, if set or by default.
    pub(super) fn optional_positive(&self, name: &'static str) -> Result<Option<u64>, ConfigError> {
        self.value(name).map(|v| positive(name, v)).transpose()
    }

    /// [`Vars::positive`] as a `usize`.
    pub(super) fn count(&self, name: &'static str) -> Result<usize, ConfigError> {
        Ok(usize::try_from(self.positive(name)?).unwrap_or(usize::MAX))
    }

    /// [`Vars::positive`] as a `u32`.
    pub(super) fn count32(&self, name: &'static str) -> Result<u32, ConfigError> {
        Ok(u32::try_from(self.positive(name)?).unwrap_or(u32::MAX))
    }

    /// Seconds above zero, set or by default.
    pub(super) fn secs(&self, name: &'static str) -> Result<Duration, ConfigError> {
        self.positive(name).map(Duration::from_secs)
    }

    /// A flag, if set or defaulted.
    pub(super) fn flag(&self, name: &'static str) -> Result<Option<bool>, ConfigError> {
        self.value(name).map(|v| flag(name, v)).transpose()
    }

    /// An optional URL.
    pub(super) fn url(&self, name: &'static str) -> Result<Option<Url>, ConfigError> {
        self.raw(name).map(|v| url(name, v)).transpose()
    }

    /// An optional comma-separated list.
    pub(super) fn list(&self, name: &'static str) -> Vec<String> {
        self.raw(name)
            .map(|l| {
                l.split(',')
                    .map(str::trim)
                    .filter(|s| !s.is_empty())
                    .map(str::to_owned)
                    .collect()
            })
            .unwrap_or_default()
    }

    /// An optional master secret.
    pub(super) fn secret(&self, name: &'static str) -> Result<Option<MasterSecret>, ConfigError> {
        self.raw(name)
            .map(|s| MasterSecret::new(s).map_err(|e| invalid(name, e)))
            .transpose()
    }

    /// A key id, set or by default.
    pub(super) fn key_id(&self, name: &'static str) -> Result<Option<KeyId>, ConfigError> {
        self.value(name)
            .map(|s| KeyId::new(s).map_err(|e| invalid(name, e)))
            .transpose()
    }
}

/// Parses `value` of `var` as `how` says, for the check at start.
fn parse_one(var: &'static str, how: Parse, value: &str) -> Result<(), ConfigError> {
    match how {
        Parse::Text | Parse::List => Ok(()),
        Parse::Positive | Parse::Seconds => positive(var, value).map(drop),
        Parse::Flag => flag(var, value).map(drop),
        Parse::Ip => value
            .parse::<std::net::IpAddr>()
            .map(drop)
            .map_err(|_| invalid(var, "must be an IP address such as 127.0.0.1")),
        Parse::Port => value
            .parse::<u16>()
            .map(drop)
            .map_err(|_| invalid(var, "must be a port number from 0 to 65535")),
        Parse::Url => url(var, value).map(drop),
        Parse::Urls => value
            .split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .try_for_each(|u| url(var, u).map(drop)),
        Parse::Secret => MasterSecret::new(value)
            .map(drop)
            .map_err(|e| invalid(var, e)),
        Parse::KeyId => KeyId::new(value).map(drop).map_err(|e| invalid(var, e)),
        Parse::LogFilter => value
            .parse::<tracing_subscriber::filter::Targets>()
            .map(drop)
            .map_err(|e| invalid(var, format!("not a level or target=level list ({e})"))),
        Parse::OneOf(words) => {
            if words.contains(&value) {
                Ok(())
            } else {
                Err(invalid(
                    var,
                    format!("must be {}, got {value:?}", words.join(" or ")),
                ))
            }
        }
    }
}

fn positive(var: &'static str, v: &str) -> Result<u64, ConfigError> {
    match v.trim().parse::<u64>() {
        Ok(n) if n > 0 => Ok(n),
        _ => Err(invalid(
            var,
            format!("must be a positive whole number, got {v:?}"),
        )),
    }
}

fn flag(var: &'static str, v: &str) -> Result<bool, ConfigError> {
    match v {
        "true" | "1" | "on" => Ok(true),
        "false" | "0" | "off" => Ok(false),
        other => Err(invalid(
            var,
            format!("must be true or false, got {other:?}"),
        )),
    }
}

/// An `http`/`https` origin with an optional path prefix, no query or fragment.
pub(super) fn url(var: &'static str, value: &str) -> Result<Url, ConfigError> {
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
