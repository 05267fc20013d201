//! Sluice assembled from the config: the MCP URL, the bearer-token
//! verifier, the actions catalog, and the local backends.

#[cfg(feature = "local")]
use std::io;
use std::path::Path;
use std::sync::Arc;

use url::Url;

use sluice::actions::Catalog;
use sluice::auth::AccessVerifier;
use sluice::config::Config;
use sluice::keys::Keyring;
#[cfg(feature = "local")]
use sluice::ledger::SqliteLedger;
use sluice::service::Sluice;
#[cfg(feature = "local")]
use sluice::store::LocalStore;

use super::StartError;
use super::error::io_error;
#[cfg(feature = "local")]
use super::local_keyring;

/// Bearer-token validation for `config`, for the MCP endpoint at `mcp_url`.
/// With an authorization server the audience is `SLUICE_AUTH_AUDIENCE`, or
/// the MCP URL itself (RFC 8707), or, where client ids are configured
/// (Cognito), none.
pub fn access_verifier(config: &Config, keys: Keyring, mcp_url: &Url) -> AccessVerifier {
    let issuer = config.auth.issuer.clone();
    match &config.auth.jwks_url {
        Some(url) => {
            let jwks = sluice::auth::Jwks::new(url.clone(), config.auth.jwks_refresh);
            let verifier = if config.auth.client_ids.is_empty() {
                let audience = config
                    .auth
                    .audience
                    .clone()
                    .unwrap_or_else(|| mcp_url.as_str().to_owned());
                AccessVerifier::with_jwks(jwks, issuer, audience)
            } else {
                AccessVerifier::with_jwks_for_clients(
                    jwks,
                    issuer,
                    config.auth.client_ids.clone(),
                    config.auth.audience.clone(),
                )
            };
            verifier.with_scope_prefix(config.auth.scope_prefix.clone())
        }
        None => AccessVerifier::new(
            keys,
            issuer,
            config
                .auth
                .audience
                .clone()
                .unwrap_or_else(|| "sluice".to_owned()),
        ),
    }
}

/// Parses a TOML actions catalog read from `origin` (for messages).
pub fn parse_catalog(origin: &str, text: &str) -> Result<Catalog, StartError> {
    Catalog::from_toml(text).map_err(|error| StartError::Actions {
        origin: origin.to_owned(),
        error,
    })
}

/// Reads and validates the actions catalog file at `path`.
pub fn read_catalog_file(path: &Path) -> Result<Catalog, StartError> {
    let text = std::fs::read_to_string(path).map_err(io_error(format!(
        "reading the actions catalog {}",
        path.display()
    )))?;
    parse_catalog(&path.display().to_string(), &text)
}

/// Assembles sluice from its parts and the config.
pub fn assemble(
    config: &Config,
    public_url: Url,
    keys: Keyring,
    store: Arc<dyn sluice::store::ObjectStore>,
    ledger: Arc<dyn sluice::ledger::Ledger>,
    records: Arc<dyn sluice::records::RecordStore>,
    catalog: Catalog,
) -> Sluice {
    assemble_parts(
        config,
        public_url,
        Parts {
            keys,
            store,
            ledger,
            records,
            catalog,
            imports_dispatch: None,
            scanner: None,
            receipt_signer: None,
        },
    )
}

pub use sluice::service::Parts;

/// [`assemble`] from its [`Parts`].
pub fn assemble_parts(config: &Config, public_url: Url, parts: Parts) -> Sluice {
    let endpoints = config.urls.resolve(public_url);
    if config.auth.dev_tokens && !config.records_here() {
        tracing::warn!(
            "SLUICE_DEV_TOKENS=true: bearer tokens minted from the master secret are accepted; \
             for development only, never in production"
        );
    }
    let access = access_verifier(config, parts.keys.clone(), &endpoints.mcp);
    // Where this machine keeps its records, its data directory keeps the
    // receipt key; on AWS a KMS key signs, where one is named.
    let receipt_signer = if config.records_here() {
        match super::open_receipt_keys(&config.data.path) {
            Ok(keys) => Some(Arc::new(keys) as Arc<dyn sluice::receipts::Signer>),
            Err(e) => {
                tracing::error!(error = %e, "no receipt key: receipts are not signed");
                None
            }
        }
    } else {
        parts.receipt_signer
    };
    Sluice::new(
        config,
        endpoints,
        access,
        Parts {
            receipt_signer,
            ..parts
        },
    )
}

/// What this machine keeps in its data directory: the file records, the
/// ledger and the outbox in SQLite, and, when the bytes are here too, the
/// directory of objects. The local binary sweeps them and delivers the
/// outbox's events.
#[cfg(feature = "local")]
#[derive(Debug, Clone)]
pub struct LocalBackends {
    /// The objects, when they are in the data directory (`SLUICE_STORE=dir`).
    pub store: Option<LocalStore>,
    /// Spent tokens.
    pub ledger: Arc<SqliteLedger>,
    /// File records.
    pub records: sluice::records::SqliteRecords,
}

/// Opens the directory of objects in the data directory.
#[cfg(feature = "local")]
pub fn local_store(config: &Config) -> Result<LocalStore, StartError> {
    Ok(LocalStore::open(
        &config.data.path,
        config.data.quota_bytes,
        config.data.max_transfers,
    )
    .map_err(|e| StartError::Io {
        what: format!("opening the store in {}", config.data.path.display()),
        source: io::Error::other(e),
    })?
    .with_user_share(config.data.max_transfers_per_user))
}

/// Opens the records, the ledger and the outbox in the data directory,
/// beside `store` when the bytes are here too.
#[cfg(feature = "local")]
pub fn local_records(
    config: &Config,
    store: Option<LocalStore>,
) -> Result<LocalBackends, StartError> {
    // Made here too: with the bytes in a bucket, no store makes it.
    sluice::store::private_dir(&config.data.path).map_err(|source| StartError::Io {
        what: format!("creating the data directory {}", config.data.path.display()),
        source,
    })?;
    let ledger = SqliteLedger::open(&config.data.path.join("ledger.sqlite3"))?;
    let mut records = sluice::records::SqliteRecords::open(&config.data.path.join("files.sqlite3"))
        .map_err(|e| StartError::Io {
            what: format!("opening the file records in {}", config.data.path.display()),
            source: io::Error::other(e),
        })?;
    // Events are kept only for a worker to deliver them.
    if config.operations.webhooks.is_some() {
        records = records.with_events();
    }
    Ok(LocalBackends {
        store,
        ledger: Arc::new(ledger),
        records,
    })
}

/// Assembles sluice on the local backends (a directory and an SQLite ledger).
#[cfg(feature = "local")]
pub fn local_sluice(
    config: &Config,
    public_url: Url,
) -> Result<(Sluice, LocalBackends), StartError> {
    let keys = local_keyring(config)?;
    let store = local_store(config)?;
    let local = local_records(config, Some(store.clone()))?;
    let sluice = assemble(
        config,
        public_url,
        keys,
        Arc::new(store),
        local.ledger.clone(),
        Arc::new(local.records.clone()),
        Catalog::default(),
    );
    Ok((sluice, local))
}

/// The webhook endpoints `config` names (checked: each secret, each entry
/// of a file), with the retry schedule; `None` without webhooks.
pub fn webhooks(config: &Config) -> Result<Option<sluice::webhooks::Webhooks>, StartError> {
    use sluice::config::WebhookSource;
    use sluice::webhooks::{Endpoint, Webhooks};
    let endpoints = match &config.operations.webhooks {
        None => return Ok(None),
        Some(WebhookSource::One { url, secrets }) => {
            vec![
                Endpoint::new(&Endpoint::name_of(url), url.clone(), secrets, None).map_err(
                    |reason| StartError::Webhooks {
                        origin: "SLUICE_WEBHOOK_URL".into(),
                        reason,
                    },
                )?,
            ]
        }
        Some(WebhookSource::Stored { .. }) => {
            return Err(StartError::Webhooks {
                origin: "SLUICE_WEBHOOK_SECRET_ID".into(),
                reason: "was not read from Secrets Manager: only the events function reads it"
                    .into(),
            });
        }
        Some(WebhookSource::File(path)) => {
            let origin = path.display().to_string();
            let text = std::fs::read_to_string(path).map_err(|e| StartError::Webhooks {
                origin: origin.clone(),
                reason: format!("could not be read: {e}"),
            })?;
            Endpoint::from_toml(&text).map_err(|reason| StartError::Webhooks { origin, reason })?
        }
    };
    Ok(Some(Webhooks::new(
        endpoints,
        config.operations.webhook_retry.clone(),
    )))
}
