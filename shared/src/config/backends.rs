//! The backends, one group: where the bytes live (`SLUICE_STORE`) and where
//! the records live (`SLUICE_RECORDS`), chosen separately; `SLUICE_BACKEND`
//! names the two usual pairs at once (`local`: a directory and SQLite;
//! `aws`: S3 and DynamoDB), and either choice overrides its half.
//!
//! The records carry the file records, batches, usage, the spent-link
//! ledger and the event outbox together: the outbox is written in the same
//! transaction as the change it reports (SQLite), or is the table's stream
//! (DynamoDB), and the ledger keeps the events no record carries, so the
//! four cannot live apart.

use url::Url;

use super::ConfigError;
use super::read::{Vars, invalid};
use super::settings::Default::{Unset, Value};
use super::settings::Group;
use super::settings::{Parse, Setting, s};

/// Where the bytes live (`SLUICE_STORE`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Store {
    /// A directory under `SLUICE_DATA_DIR`; sluice receives every byte.
    Dir,
    /// An S3 bucket (AWS, or any S3-compatible endpoint); the bytes go
    /// straight to it through presigned requests.
    S3(S3Config),
}

/// Where the records, the ledger and the outbox live (`SLUICE_RECORDS`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Records {
    /// SQLite files under `SLUICE_DATA_DIR`: one machine.
    Sqlite,
    /// One DynamoDB table, shared by every replica.
    DynamoDb(DynamoConfig),
}

/// The bucket (`SLUICE_STORE=s3`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct S3Config {
    /// `SLUICE_S3_BUCKET`: objects (and the actions catalog, if kept there).
    pub bucket: String,
    /// `SLUICE_S3_ENDPOINT_URL`: an S3-compatible endpoint (an emulator,
    /// MinIO, R2, B2), path-style.
    pub endpoint: Option<Url>,
}

/// The table (`SLUICE_RECORDS=dynamodb`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DynamoConfig {
    /// `SLUICE_DYNAMODB_TABLE`: file records and spent tokens (partition
    /// key `pk`, TTL `expires_at`).
    pub table: String,
    /// `SLUICE_DYNAMODB_ENDPOINT_URL`: a DynamoDB emulator.
    pub endpoint: Option<Url>,
}

/// What every AWS client shares, whichever backends are on AWS.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct AwsConfig {
    /// `SLUICE_AWS_REGION`; otherwise the SDK's chain (`AWS_REGION`).
    pub region: Option<String>,
    /// `SLUICE_MASTER_SECRET_ID`: a Secrets Manager secret holding the master
    /// secret, read at start (instead of `SLUICE_MASTER_SECRET`).
    pub master_secret_id: Option<String>,
    /// `SLUICE_EVENT_BUS`: the EventBridge bus the events function puts
    /// each event on.
    pub event_bus: Option<String>,
    /// `SLUICE_EVENTBRIDGE_ENDPOINT_URL`: an EventBridge emulator.
    pub eventbridge_endpoint: Option<Url>,
    /// `SLUICE_LAMBDA_ENDPOINT_URL`: the Lambda API of an emulator (where
    /// the importer function is invoked, under `cargo lambda watch`).
    pub lambda_endpoint: Option<Url>,
    /// `SLUICE_RECEIPT_KMS_KEY`: the KMS key (ECC_NIST_P256, SIGN_VERIFY)
    /// that signs receipts of custody where the records are in DynamoDB.
    pub receipt_kms_key: Option<String>,
    /// `SLUICE_RECEIPT_KMS_RETIRED`: KMS keys that signed receipts before
    /// it, whose public keys the JWKS keeps.
    pub receipt_kms_retired: Vec<String>,
}

/// The two choices, as the variables say them (each refused by its own
/// parser already, `rules` checks the pair).
pub(super) fn chosen(vars: &Vars) -> (&str, &str) {
    let aws = vars.value("SLUICE_BACKEND") == Some("aws");
    let store = vars
        .value("SLUICE_STORE")
        .unwrap_or(if aws { "s3" } else { "dir" });
    let records = vars
        .value("SLUICE_RECORDS")
        .unwrap_or(if aws { "dynamodb" } else { "sqlite" });
    (store, records)
}

/// Whether the records are in DynamoDB: the serverless shape, where
/// replicas share every secret and no process keeps anything of its own.
pub(super) fn shared_records(vars: &Vars) -> bool {
    chosen(vars).1 == "dynamodb"
}

/// Whether the bytes are in a bucket.
pub(super) fn in_bucket(vars: &Vars) -> bool {
    chosen(vars).0 == "s3"
}

/// The bytes' backend.
pub(super) fn store(vars: &Vars) -> Result<Store, ConfigError> {
    if !in_bucket(vars) {
        return Ok(Store::Dir);
    }
    Ok(Store::S3(S3Config {
        bucket: vars.text("SLUICE_S3_BUCKET").ok_or_else(|| {
            invalid(
                "SLUICE_S3_BUCKET",
                "required when the bytes are in S3 (SLUICE_STORE=s3 or SLUICE_BACKEND=aws)",
            )
        })?,
        endpoint: vars.url("SLUICE_S3_ENDPOINT_URL")?,
    }))
}

/// The records' backend.
pub(super) fn records(vars: &Vars) -> Result<Records, ConfigError> {
    if !shared_records(vars) {
        return Ok(Records::Sqlite);
    }
    Ok(Records::DynamoDb(DynamoConfig {
        table: vars.text("SLUICE_DYNAMODB_TABLE").ok_or_else(|| {
            invalid(
                "SLUICE_DYNAMODB_TABLE",
                "required when the records are in DynamoDB (SLUICE_RECORDS=dynamodb or SLUICE_BACKEND=aws)",
            )
        })?,
        endpoint: vars.url("SLUICE_DYNAMODB_ENDPOINT_URL")?,
    }))
}

/// What the AWS clients share.
pub(super) fn aws(vars: &Vars) -> Result<AwsConfig, ConfigError> {
    Ok(AwsConfig {
        region: vars.text("SLUICE_AWS_REGION"),
        master_secret_id: vars.text("SLUICE_MASTER_SECRET_ID"),
        event_bus: vars.text("SLUICE_EVENT_BUS"),
        eventbridge_endpoint: vars.url("SLUICE_EVENTBRIDGE_ENDPOINT_URL")?,
        lambda_endpoint: vars.url("SLUICE_LAMBDA_ENDPOINT_URL")?,
        receipt_kms_key: vars.text("SLUICE_RECEIPT_KMS_KEY"),
        receipt_kms_retired: vars.list("SLUICE_RECEIPT_KMS_RETIRED"),
    })
}

/// The pair that cannot work: a directory's objects are swept against the
/// records on the same machine (an object no record names is removed), so
/// bytes in a directory need records in SQLite beside them.
pub(super) fn rules(vars: &Vars) -> Result<(), ConfigError> {
    if chosen(vars) == ("dir", "dynamodb") {
        return Err(invalid(
            "SLUICE_STORE",
            "dir needs SLUICE_RECORDS=sqlite: a directory's objects are swept against the records beside them; with records in DynamoDB keep the bytes in S3 (SLUICE_STORE=s3)",
        ));
    }
    Ok(())
}

impl super::Config {
    /// Whether the records (and so the ledger and the outbox) are in this
    /// machine's data directory.
    pub fn records_here(&self) -> bool {
        matches!(self.records, Records::Sqlite)
    }

    /// Whether the bytes are in this machine's data directory.
    pub fn bytes_here(&self) -> bool {
        matches!(self.store, Store::Dir)
    }

    /// The backends in a few words, for the start's announcement.
    pub fn backends_said(&self) -> String {
        let bytes = match &self.store {
            Store::Dir => format!("{}/objects", self.data.path.display()),
            Store::S3(s3) => match &s3.endpoint {
                None => format!("s3://{}", s3.bucket),
                Some(endpoint) => format!("s3://{} at {endpoint}", s3.bucket),
            },
        };
        let records = match &self.records {
            Records::Sqlite => format!("SQLite in {}", self.data.path.display()),
            Records::DynamoDb(d) => format!("DynamoDB table {}", d.table),
        };
        format!("bytes in {bytes}, records in {records}")
    }
}

/// This group's settings (its variables, parsers, defaults and one line of
/// doc each), beside the code that reads them: the configuration page and
/// the start's checks take them from [`super::table`].
pub(super) const ROWS: &[Setting] = &[
    s(
        "SLUICE_BACKEND",
        Group::Core,
        Parse::OneOf(&["local", "aws"]),
        Value("local"),
        "the usual pair of backends: `local` (bytes in a directory, records in SQLite) or `aws` (bytes in S3, records in DynamoDB); `SLUICE_STORE` and `SLUICE_RECORDS` choose each half apart",
    ),
    s(
        "SLUICE_STORE",
        Group::Core,
        Parse::OneOf(&["dir", "s3"]),
        Unset("`SLUICE_BACKEND`'s: `dir` for `local`, `s3` for `aws`"),
        "where the bytes live: `dir` (`SLUICE_DATA_DIR`/objects; sluice receives them) or `s3` (`SLUICE_S3_BUCKET` on AWS or any S3-compatible endpoint, `SLUICE_S3_ENDPOINT_URL`; the bytes go straight to it)",
    ),
    s(
        "SLUICE_RECORDS",
        Group::Core,
        Parse::OneOf(&["sqlite", "dynamodb"]),
        Unset("`SLUICE_BACKEND`'s: `sqlite` for `local`, `dynamodb` for `aws`"),
        "where file records, batches, usage, spent links and events live: `sqlite` (in `SLUICE_DATA_DIR`, one machine) or `dynamodb` (`SLUICE_DYNAMODB_TABLE`, shared by replicas); `dir` bytes need `sqlite`",
    ),
    s(
        "SLUICE_S3_BUCKET",
        Group::Aws,
        Parse::Text,
        Unset("— (required with `s3`)"),
        "the bucket for objects",
    ),
    s(
        "SLUICE_DYNAMODB_TABLE",
        Group::Aws,
        Parse::Text,
        Unset("— (required with `dynamodb`)"),
        "the table of spent tokens and file records",
    ),
    s(
        "SLUICE_AWS_REGION",
        Group::Aws,
        Parse::Text,
        Unset("the SDK's chain (`AWS_REGION`)"),
        "the region",
    ),
    s(
        "SLUICE_S3_ENDPOINT_URL",
        Group::Aws,
        Parse::Url,
        Unset("AWS"),
        "an S3-compatible endpoint (an emulator, MinIO, R2, B2), path-style",
    ),
    s(
        "SLUICE_DYNAMODB_ENDPOINT_URL",
        Group::Aws,
        Parse::Url,
        Unset("AWS"),
        "a DynamoDB emulator's endpoint",
    ),
    s(
        "SLUICE_EVENTBRIDGE_ENDPOINT_URL",
        Group::Aws,
        Parse::Url,
        Unset("AWS"),
        "an EventBridge emulator's endpoint (the events function's bus)",
    ),
    s(
        "SLUICE_LAMBDA_ENDPOINT_URL",
        Group::Aws,
        Parse::Url,
        Unset("AWS"),
        "the Lambda API of an emulator where the importer function is invoked (`cargo lambda watch`'s invoke address)",
    ),
    s(
        "SLUICE_RECEIPT_KMS_KEY",
        Group::Aws,
        Parse::Text,
        Unset("— (no receipts on AWS)"),
        "aws mode: the KMS key (`ECC_NIST_P256`, `SIGN_VERIFY`; an id, ARN or alias) that signs receipts of custody (the mcp and issuer functions' receipts, the events function's events of custody, which then also needs `SLUICE_PUBLIC_URL`); the functions that sign are granted `kms:Sign` and `kms:GetPublicKey` on it only (the template's `ReceiptKey`)",
    ),
    s(
        "SLUICE_RECEIPT_KMS_RETIRED",
        Group::Aws,
        Parse::List,
        Unset("none"),
        "aws mode: KMS keys that signed receipts before `SLUICE_RECEIPT_KMS_KEY`, comma-separated; the JWKS keeps their public keys, so what they signed still verifies (keep them enabled: `GetPublicKey` reads them)",
    ),
    s(
        "SLUICE_EVENT_BUS",
        Group::Operations,
        Parse::Text,
        Unset("—"),
        "aws mode: the EventBridge bus the events function puts every event on (source `sluice`, detail-type the event's type, detail the webhook's body with its `id`), beside or instead of webhooks (the template's `EventBusName`; [operations](operations.md))",
    ),
];
