//! One contract suite for the storage traits, run against both
//! implementations: the local directory + SQLite, and S3 (s3s-fs) +
//! DynamoDB (dynalite). It covers every behaviour the handlers rely on.

use std::sync::Arc;

use bytes::Bytes;
use futures_util::TryStreamExt as _;
use sluice::ledger::{Ledger, Spend, SqliteLedger};
use sluice::store::{ByteStream, LocalStore, ObjectStore, StoreError};
use sluice::{FileId, FileMeta, ObjectKey, Sha256};

use crate::emulators::Emulators;

fn file(owner: &str, name: &str, data: &[u8]) -> FileMeta {
    FileMeta {
        id: FileId::random(),
        owner: owner.into(),
        filename: name.into(),
        content_type: "application/octet-stream".into(),
        size: data.len() as u64,
        sha256: Sha256::of(data),
    }
}

fn body(data: &[u8]) -> ByteStream {
    let chunks: Vec<std::io::Result<Bytes>> = data
        .chunks(1000)
        .map(|c| Ok(Bytes::copy_from_slice(c)))
        .collect();
    Box::pin(futures_util::stream::iter(chunks))
}

async fn read(store: &dyn ObjectStore, key: &ObjectKey) -> Option<Vec<u8>> {
    let stream = store.get(key).await.unwrap()?;
    let chunks: Vec<Bytes> = stream.try_collect().await.unwrap();
    Some(chunks.concat())
}

async fn store_contract(store: &dyn ObjectStore) {
    let data = crate::util::bytes(5000, 1);
    let f = file("alice", "a.bin", &data);
    let key = f.object_key();

    // Absent objects are absent, not errors.
    assert!(store.head(&key).await.unwrap().is_none());
    assert!(store.get(&key).await.unwrap().is_none());

    // A body of another size or digest stores nothing.
    let err = store
        .put(&key, f.size, f.sha256, body(&data[..4999]))
        .await
        .unwrap_err();
    assert!(matches!(err, StoreError::Mismatch(_)), "{err:?}");
    let mut wrong = data.clone();
    wrong[0] ^= 1;
    let err = store
        .put(&key, f.size, f.sha256, body(&wrong))
        .await
        .unwrap_err();
    assert!(matches!(err, StoreError::Mismatch(_)), "{err:?}");
    assert!(store.head(&key).await.unwrap().is_none());

    // The exact body is stored, read back whole, and described by head.
    store
        .put(&key, f.size, f.sha256, body(&data))
        .await
        .unwrap();
    let info = store.head(&key).await.unwrap().unwrap();
    assert_eq!(info.size, 5000);
    assert!(info.sha256.is_none_or(|d| d == f.sha256));
    assert_eq!(read(store, &key).await.unwrap(), data);

    // A key is written once.
    let err = store
        .put(&key, f.size, f.sha256, body(&data))
        .await
        .unwrap_err();
    assert!(matches!(err, StoreError::AlreadyExists), "{err:?}");

    // Empty objects are objects.
    let empty = file("alice", "empty", b"");
    store
        .put(&empty.object_key(), 0, empty.sha256, body(b""))
        .await
        .unwrap();
    assert_eq!(
        store.head(&empty.object_key()).await.unwrap().unwrap().size,
        0
    );
    assert_eq!(read(store, &empty.object_key()).await.unwrap(), b"");

    // Small objects: written whole, replaced, read, listed by owner prefix.
    let (r1, r2) = (
        ObjectKey::record("alice", &f.id),
        ObjectKey::record("alice", &empty.id),
    );
    let other = ObjectKey::record("bob", &FileId::random());
    assert!(store.get_small(&r1).await.unwrap().is_none());
    store
        .put_small(&r1, Bytes::from_static(b"{\"v\":1}"))
        .await
        .unwrap();
    store
        .put_small(&r1, Bytes::from_static(b"{\"v\":2}"))
        .await
        .unwrap();
    store
        .put_small(&r2, Bytes::from_static(b"{}"))
        .await
        .unwrap();
    store
        .put_small(&other, Bytes::from_static(b"{}"))
        .await
        .unwrap();
    assert_eq!(
        store.get_small(&r1).await.unwrap().unwrap(),
        Bytes::from_static(b"{\"v\":2}")
    );
    let mut listed: Vec<String> = store
        .list(&ObjectKey::records_prefix("alice"))
        .await
        .unwrap()
        .into_iter()
        .map(|k| k.as_str().to_owned())
        .collect();
    listed.sort();
    let mut expected = vec![r1.as_str().to_owned(), r2.as_str().to_owned()];
    expected.sort();
    assert_eq!(listed, expected);
}

async fn ledger_contract(ledger: Arc<dyn Ledger>) {
    let exp = sluice::time::now_unix() + 300;
    let jti = FileId::random().to_string();
    assert_eq!(ledger.spend(&jti, exp).await.unwrap(), Spend::Fresh);
    assert_eq!(ledger.spend(&jti, exp).await.unwrap(), Spend::AlreadySpent);

    // Of many concurrent spends of one token, exactly one wins.
    let jti = FileId::random().to_string();
    let tasks: Vec<_> = (0..16)
        .map(|_| {
            let (ledger, jti) = (ledger.clone(), jti.clone());
            tokio::spawn(async move { ledger.spend(&jti, exp).await.unwrap() })
        })
        .collect();
    let mut fresh = 0;
    for t in tasks {
        if t.await.unwrap() == Spend::Fresh {
            fresh += 1;
        }
    }
    assert_eq!(fresh, 1);
}

fn runtime() -> tokio::runtime::Runtime {
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
        store_contract(&store).await;
        let ledger = SqliteLedger::open(&dir.path().join("ledger.sqlite3")).unwrap();
        ledger_contract(Arc::new(ledger)).await;
    });
}

#[test]
fn the_aws_backends_keep_the_contract() {
    let emulators = Emulators::start();
    runtime().block_on(async {
        let (store, ledger) = emulators.provision("contract").await;
        store_contract(&store).await;
        ledger_contract(Arc::new(ledger)).await;
    });
}
