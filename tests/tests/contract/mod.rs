//! One contract suite for each storage trait, run against both
//! implementations: the local directory + SQLite, and S3 (s3s-fs) +
//! DynamoDB (dynalite). It covers every behaviour the handlers rely on, a
//! file a trait: the objects ([`objects`]), the ledger ([`ledger`]), and
//! the record store's concerns: a file's record ([`files`]), what a user's
//! files take ([`usage`]), batches ([`batches`]) and imports
//! ([`imports`]). What only DynamoDB must do besides is [`dynamodb`].

mod batches;
mod dynamodb;
mod files;
mod imports;
mod ledger;
mod objects;
mod usage;

use std::sync::Arc;

use bytes::Bytes;
use futures_util::TryStreamExt as _;
use sluice::ledger::{Ledger, Spend, SqliteLedger};
use sluice::records::{
    Cursor, FileRecord, FileRecords as _, PendingCaps, RecordStore, SqliteRecords, Usage as _,
};
use sluice::store::{ByteStream, LocalStore, ObjectStore, StoreError};
use sluice::{FileId, FileMeta, ObjectKey, Sha256};

use crate::util::Emulators;

pub(crate) fn file(owner: &str, name: &str, data: &[u8]) -> FileMeta {
    FileMeta {
        id: FileId::random(),
        owner: owner.into(),
        filename: name.into(),
        content_type: "application/octet-stream".into(),
        size: data.len() as u64,
        sha256: Sha256::of(data),
    }
}

pub(crate) fn body(data: &[u8]) -> ByteStream {
    let chunks: Vec<std::io::Result<Bytes>> = data
        .chunks(1000)
        .map(|c| Ok(Bytes::copy_from_slice(c)))
        .collect();
    Box::pin(futures_util::stream::iter(chunks))
}

pub(crate) async fn read(store: &dyn ObjectStore, key: &ObjectKey) -> Option<Vec<u8>> {
    let stream = store.get(key).await.unwrap()?;
    let chunks: Vec<Bytes> = stream.try_collect().await.unwrap();
    Some(chunks.concat())
}

pub(crate) fn record(owner: &str, created_ms: i64, expires_at: i64) -> FileRecord {
    FileRecord {
        file: file(
            owner,
            &format!("f{created_ms}.bin"),
            &created_ms.to_be_bytes(),
        ),
        created_ms,
        expires_at,
        ready: false,
        proof: None,
        scan: None,
        trace: None,
        copy: false,
    }
}

/// What the service relies on of a record store, each concern in turn
/// (some read what an earlier one wrote).
async fn records_contract(records: &dyn RecordStore) {
    let listed = files::listed(records).await;
    usage::counted(records, &listed).await;
    files::found(records).await;
    files::deleted(records).await;
    files::declared(records).await;
    files::scan_notes(records).await;
    batches::contract(records).await;
    imports::contract(records).await;
}

pub(crate) fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap()
}

#[test]
fn the_local_backends_keep_the_contract() {
    let dir = tempfile::tempdir().unwrap();
    runtime().block_on(async {
        let store = LocalStore::open(dir.path(), 1 << 30, 8).unwrap();
        objects::contract(&store).await;
        let ledger = SqliteLedger::open(&dir.path().join("ledger.sqlite3")).unwrap();
        ledger::contract(Arc::new(ledger)).await;
        let records = SqliteRecords::open(&dir.path().join("files.sqlite3")).unwrap();
        records_contract(&records).await;
    });
}

#[test]
fn the_aws_backends_keep_the_contract() {
    let emulators = Emulators::start();
    runtime().block_on(async {
        let (store, ledger) = emulators.provision("contract").await;
        objects::contract(&store).await;
        let records = sluice_aws::DynamoRecords::beside(&ledger);
        ledger::contract(Arc::new(ledger)).await;
        records_contract(&records).await;
    });
}
