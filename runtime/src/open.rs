//! The backends the config names, opened once at start, each by its own
//! arm: the bytes (`open_store`: a directory, or a bucket), the records with
//! the ledger and the outbox (`open_records`: SQLite here, or a DynamoDB
//! table), the keys (`keyring`), then the actions (`load_catalog`, whose
//! catalog may be an object in the bucket).

use std::sync::Arc;

#[cfg(feature = "aws")]
use sluice::MasterSecret;
use sluice::actions::{AuthValue, Catalog, CatalogError};
use sluice::config::{ActionsSource, Records, Store};
use sluice::{Config, Keyring, Sluice};
use url::Url;

use crate::wiring as runtime;
use crate::wiring::StartError;

/// Sluice over the configured backends.
#[derive(Debug)]
pub struct Opened {
    /// The shared state.
    pub sluice: Sluice,
    /// The local backends, to sweep; `None` on AWS (S3 lifecycle rules and
    /// DynamoDB's TTL expire objects and records).
    #[cfg(feature = "local")]
    pub local: Option<runtime::LocalBackends>,
}

/// The backends, keys and actions `config` names, opened once at start.
pub struct Backends {
    keys: Keyring,
    catalog: Catalog,
    store: Arc<dyn sluice::ObjectStore>,
    ledger: Arc<dyn sluice::Ledger>,
    records: Arc<dyn sluice::records::RecordStore>,
    #[cfg(feature = "local")]
    local: Option<runtime::LocalBackends>,
    /// The importer function, where one is configured (on AWS).
    imports_dispatch: Option<Arc<dyn sluice::service::imports::Dispatch>>,
    /// GuardDuty's tags on the bucket, with `SLUICE_SCAN=guardduty`.
    scanner: Option<Arc<dyn sluice::scan::Scanner>>,
    /// The KMS key that signs receipts, with `SLUICE_RECEIPT_KMS_KEY`.
    receipt_signer: Option<Arc<dyn sluice::receipts::Signer>>,
}

impl std::fmt::Debug for Backends {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Backends")
            .field("store", &self.store)
            .finish_non_exhaustive()
    }
}

impl Backends {
    /// Sluice at `public_url` over these backends.
    pub fn sluice(&self, config: &Config, public_url: Url) -> Sluice {
        runtime::assemble_parts(
            config,
            public_url,
            runtime::Parts {
                keys: self.keys.clone(),
                store: self.store.clone(),
                ledger: self.ledger.clone(),
                records: self.records.clone(),
                catalog: self.catalog.clone(),
                imports_dispatch: self.imports_dispatch.clone(),
                scanner: self.scanner.clone(),
                receipt_signer: self.receipt_signer.clone(),
            },
        )
    }

    /// These backends with the bytes kept in `store` instead: the records
    /// and the ledger stay as they are (bytes, records and ledger are
    /// chosen separately).
    pub fn with_store(mut self, store: Arc<dyn sluice::ObjectStore>) -> Self {
        self.store = store;
        self
    }

    /// Adds actions besides the configured ones (the local binary's
    /// examples); a name already taken is refused.
    pub fn add_actions(&mut self, origin: &str, more: Catalog) -> Result<(), StartError> {
        self.catalog = std::mem::take(&mut self.catalog)
            .merge(more)
            .map_err(|error| StartError::Actions {
                origin: origin.to_owned(),
                error,
            })?;
        Ok(())
    }

    /// The local backends, to sweep; `None` on AWS.
    #[cfg(feature = "local")]
    pub fn local(&self) -> Option<runtime::LocalBackends> {
        self.local.clone()
    }
}

/// The bucket an actions catalog may be read from.
#[cfg(feature = "aws")]
type Bucket = sluice_aws::S3Store;

/// No bucket: this build has no AWS backends.
#[cfg(not(feature = "aws"))]
enum Bucket {}

#[cfg(not(feature = "aws"))]
impl Bucket {
    async fn read_whole(&self, _key: &str) -> Result<Option<Vec<u8>>, sluice::StoreError> {
        match *self {}
    }
}

/// Reads the actions catalog `config` names (a file, or an object in the
/// bucket) and the secrets its auth headers name.
async fn load_catalog(config: &Config, bucket: Option<&Bucket>) -> Result<Catalog, StartError> {
    let mut catalog = match &config.actions.source {
        None => return Ok(Catalog::default()),
        Some(ActionsSource::File(path)) => runtime::read_catalog_file(path)?,
        Some(ActionsSource::S3Key(key)) => {
            let origin = format!("s3 key {key}");
            let refuse = |reason: String| StartError::Actions {
                origin: origin.clone(),
                error: CatalogError {
                    action: None,
                    field: None,
                    reason,
                },
            };
            let bucket =
                bucket.ok_or_else(|| refuse("needs the bytes in S3 (SLUICE_STORE=s3)".into()))?;
            let bytes = bucket
                .read_whole(key)
                .await
                .map_err(|e| refuse(format!("could not be read: {e}")))?
                .ok_or_else(|| {
                    refuse("is not in the bucket: upload it, or unset SLUICE_ACTIONS_S3_KEY".into())
                })?;
            let text = String::from_utf8(bytes.to_vec())
                .map_err(|_| refuse("is not UTF-8 text".into()))?;
            runtime::parse_catalog(&origin, &text)?
        }
    };
    // Behind API Gateway an action may not outlast the request.
    if config.lambda {
        catalog
            .fit_for_api_gateway()
            .map_err(|error| StartError::Actions {
                origin: "the actions catalog".into(),
                error,
            })?;
    }
    for action in catalog.actions_mut() {
        let Some(auth) = &mut action.auth else {
            continue;
        };
        let AuthValue::SecretId(id) = &auth.value else {
            continue;
        };
        let value = read_action_secret(config, id).await.map_err(|e| {
            StartError::Secret(format!("the auth secret of action {}: {e}", action.name))
        })?;
        let value = http::HeaderValue::try_from(value.trim()).map_err(|_| {
            StartError::Secret(format!(
                "the auth secret of action {} ({id}) is not a valid header value",
                action.name
            ))
        })?;
        auth.value = AuthValue::Value(value);
    }
    Ok(catalog)
}

/// A Secrets Manager secret's string, for an action's auth header.
async fn read_action_secret(config: &Config, id: &str) -> Result<String, String> {
    #[cfg(feature = "aws")]
    return sluice_aws::read_secret(id, config.aws.region.as_deref())
        .await
        .map_err(|e| e.to_string());
    #[cfg(not(feature = "aws"))]
    return Err(format!(
        "secret_id {id:?} is read from AWS Secrets Manager, which this build leaves out ({}): give the value",
        config.backends_said()
    ));
}

/// Opens the backends `config` names, each by its own arm: the bytes
/// (`SLUICE_STORE`), the records with the ledger and the outbox
/// (`SLUICE_RECORDS`), the keys, then the actions (whose catalog may be an
/// object in the bucket).
pub async fn open_backends(config: &Config) -> Result<Backends, StartError> {
    Built::THIS.has_backends(config)?;
    #[cfg(feature = "aws")]
    let sdk = match (&config.store, &config.records) {
        (Store::Dir, Records::Sqlite) => None,
        _ => Some(sluice_aws::sdk_config(&config.aws).await),
    };
    #[cfg(not(feature = "aws"))]
    let sdk: Option<Sdk> = None;
    let bytes = open_store(config, sdk.as_ref())?;
    let opened = open_records(config, sdk.as_ref(), &bytes)?;
    let imports_dispatch = importer(config, sdk.as_ref());
    let scanner = guardduty(config, bytes.bucket.as_ref());
    let receipt_signer = kms_signer(config, sdk.as_ref());
    Ok(Backends {
        keys: keyring(config).await?,
        catalog: load_catalog(config, bytes.bucket.as_ref()).await?,
        store: bytes.store,
        ledger: opened.ledger,
        records: opened.records,
        #[cfg(feature = "local")]
        local: opened.local,
        imports_dispatch,
        scanner,
        receipt_signer,
    })
}

/// The KMS key that signs receipts, where `SLUICE_RECEIPT_KMS_KEY` names
/// one and this build reaches AWS.
fn kms_signer(config: &Config, sdk: Option<&Sdk>) -> Option<Arc<dyn sluice::receipts::Signer>> {
    let key = config.aws.receipt_kms_key.as_deref()?;
    #[cfg(feature = "aws")]
    if let Some(sdk) = sdk {
        return sluice_aws::KmsSigner::new(sdk, &config.aws).map(|s| Arc::new(s) as _);
    }
    let _ = sdk;
    tracing::warn!(%key, "SLUICE_RECEIPT_KMS_KEY is set, but the AWS clients are not: receipts are not signed");
    None
}

/// Which backends a build carries (its features): the function binaries
/// `sam build` ships have no local ones, the `sluice` binary's default
/// build no AWS ones. Asked for backends it lacks, a build says what to do
/// before it opens anything. A value, so that every build's answer is
/// tested in one test build.
#[derive(Debug, Clone, Copy)]
pub struct Built {
    /// A directory and SQLite (`--features local`).
    pub local: bool,
    /// S3 and DynamoDB (`--features aws`).
    pub aws: bool,
}

impl Built {
    /// This build.
    pub const THIS: Self = Self {
        local: cfg!(feature = "local"),
        aws: cfg!(feature = "aws"),
    };

    /// Refuses what `config` names that this build leaves out: the bytes,
    /// then the records.
    pub fn has_backends(self, config: &Config) -> Result<(), StartError> {
        let local = matches!(config.store, Store::Dir) || matches!(config.records, Records::Sqlite);
        let aws =
            matches!(config.store, Store::S3(_)) || matches!(config.records, Records::DynamoDb(_));
        if local && !self.local {
            return Err(StartError::NoLocalBackend);
        }
        if aws && !self.aws {
            return Err(StartError::NoAwsBackend);
        }
        Ok(())
    }
}

/// GuardDuty's scan-status tags on the bucket's objects, read with
/// `SLUICE_SCAN=guardduty` (the config refuses it without a bucket).
fn guardduty(config: &Config, bucket: Option<&Bucket>) -> Option<Arc<dyn sluice::scan::Scanner>> {
    if config.scan.mode != sluice::config::ScanMode::GuardDuty {
        return None;
    }
    #[cfg(feature = "aws")]
    return bucket.map(|b| Arc::new(sluice_aws::GuardDutyTags::new(b.clone())) as _);
    #[cfg(not(feature = "aws"))]
    {
        let _ = bucket;
        None
    }
}

/// The importer function imports are started in, where one is configured
/// and this build reaches AWS.
fn importer(
    config: &Config,
    sdk: Option<&Sdk>,
) -> Option<Arc<dyn sluice::service::imports::Dispatch>> {
    let function = config.imports.importer.as_deref()?;
    #[cfg(feature = "aws")]
    if let Some(sdk) = sdk {
        return Some(Arc::new(sluice_aws::LambdaImporter::new(
            sdk,
            &config.aws,
            function,
        )));
    }
    let _ = sdk;
    tracing::warn!(%function, "SLUICE_IMPORTER_FUNCTION is set, but the AWS clients are not: imports are not offered");
    None
}

/// The SDK's configuration, shared by every AWS client (none without them).
#[cfg(feature = "aws")]
type Sdk = sluice_aws::SdkConfig;
#[cfg(not(feature = "aws"))]
type Sdk = std::convert::Infallible;

/// The bytes' backend.
struct OpenedStore {
    store: Arc<dyn sluice::ObjectStore>,
    /// The bucket, when the bytes are in one (an actions catalog may be
    /// read from it).
    bucket: Option<Bucket>,
    /// The directory, when the bytes are in one (the local binary sweeps it).
    #[cfg(feature = "local")]
    dir: Option<sluice::store::LocalStore>,
}

fn open_store(config: &Config, sdk: Option<&Sdk>) -> Result<OpenedStore, StartError> {
    match &config.store {
        #[cfg(feature = "local")]
        Store::Dir => {
            let _ = sdk;
            let dir = runtime::local_store(config)?;
            Ok(OpenedStore {
                store: Arc::new(dir.clone()),
                bucket: None,
                dir: Some(dir),
            })
        }
        #[cfg(not(feature = "local"))]
        Store::Dir => Err(StartError::NoLocalBackend),
        #[cfg(feature = "aws")]
        Store::S3(s3) => {
            let bucket = sluice_aws::S3Store::new(sdk.expect("made for an S3 store"), s3);
            Ok(OpenedStore {
                store: Arc::new(bucket.clone()),
                bucket: Some(bucket),
                #[cfg(feature = "local")]
                dir: None,
            })
        }
        #[cfg(not(feature = "aws"))]
        Store::S3(_) => Err(StartError::NoAwsBackend),
    }
}

/// The records' backend, with the ledger and the outbox beside them.
struct OpenedRecords {
    records: Arc<dyn sluice::records::RecordStore>,
    ledger: Arc<dyn sluice::Ledger>,
    #[cfg(feature = "local")]
    local: Option<runtime::LocalBackends>,
}

fn open_records(
    config: &Config,
    sdk: Option<&Sdk>,
    bytes: &OpenedStore,
) -> Result<OpenedRecords, StartError> {
    let _ = bytes;
    match &config.records {
        #[cfg(feature = "local")]
        Records::Sqlite => {
            let _ = sdk;
            let local = runtime::local_records(config, bytes.dir.clone())?;
            Ok(OpenedRecords {
                records: Arc::new(local.records.clone()),
                ledger: local.ledger.clone(),
                local: Some(local),
            })
        }
        #[cfg(not(feature = "local"))]
        Records::Sqlite => Err(StartError::NoLocalBackend),
        #[cfg(feature = "aws")]
        Records::DynamoDb(table) => {
            let ledger = sluice_aws::DynamoLedger::new(sdk.expect("made for a table"), table);
            Ok(OpenedRecords {
                records: Arc::new(
                    sluice_aws::DynamoRecords::beside(&ledger).living(config.transfers.handle_ttl),
                ),
                ledger: Arc::new(ledger),
                #[cfg(feature = "local")]
                local: None,
            })
        }
        #[cfg(not(feature = "aws"))]
        Records::DynamoDb(_) => Err(StartError::NoAwsBackend),
    }
}

/// The keys: `SLUICE_MASTER_SECRET`, or the Secrets Manager secret
/// `SLUICE_MASTER_SECRET_ID` names, or (records on this machine only) the
/// secret generated and kept in the data directory.
async fn keyring(config: &Config) -> Result<Keyring, StartError> {
    if config.keys.master_secret.is_none() {
        if let Some(id) = &config.aws.master_secret_id {
            #[cfg(feature = "aws")]
            return secret_manager_keys(id, config.aws.region.as_deref()).await;
            #[cfg(not(feature = "aws"))]
            return Err(StartError::Secret(format!(
                "SLUICE_MASTER_SECRET_ID {id} is read from AWS Secrets Manager, which this build leaves out: build with `--features aws`"
            )));
        }
        if !config.records_here() {
            return Err(StartError::Secret(
                "SLUICE_MASTER_SECRET or SLUICE_MASTER_SECRET_ID is required with the records in DynamoDB"
                    .into(),
            ));
        }
    }
    // The configured secret, or the one this data directory keeps.
    runtime::local_keyring(config)
}

#[cfg(feature = "aws")]
/// The keyring of a master secret kept in Secrets Manager: its `AWSCURRENT`
/// version signs, and its `AWSPREVIOUS` version (after `put-secret-value` or
/// a rotation) still verifies, so links and handles in flight survive the
/// change. Each version's key id comes from its version id, so tokens name
/// the version that signed them.
async fn secret_manager_keys(id: &str, region: Option<&str>) -> Result<Keyring, StartError> {
    let (current, previous) = sluice_aws::read_secret_versions(id, region)
        .await
        .map_err(|e| StartError::Secret(e.to_string()))?;
    let key = |v: &sluice_aws::SecretVersion| {
        let secret = MasterSecret::new(v.value.trim().as_bytes().to_vec())
            .map_err(|e| StartError::Secret(format!("SLUICE_MASTER_SECRET_ID {id}: {e}")))?;
        Ok::<_, StartError>((version_key_id(&v.version_id), secret))
    };
    let previous = match &previous {
        Some(v) => Some(key(v)?),
        None => None,
    };
    Ok(Keyring::new(key(&current)?, previous))
}

/// A key id for a secret version: `v` and the first 12 letters and digits
/// of its version id (a UUID), within the 32 characters a key id may have.
#[cfg(feature = "aws")]
fn version_key_id(version_id: &str) -> sluice::KeyId {
    let plain: String = version_id
        .chars()
        .filter(char::is_ascii_alphanumeric)
        .take(12)
        .collect();
    sluice::KeyId::new(&format!("v{plain}")).expect("v and 1-12 ASCII alphanumerics is a key id")
}

/// Builds sluice over the backends `config` names, at `public_url`.
pub async fn open(config: &Config, public_url: Url) -> Result<Opened, StartError> {
    let backends = open_backends(config).await?;
    Ok(Opened {
        sluice: backends.sluice(config, public_url),
        #[cfg(feature = "local")]
        local: backends.local,
    })
}
