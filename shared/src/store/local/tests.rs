use std::sync::atomic::Ordering;
use std::time::Duration;

use bytes::Bytes;
use futures_util::StreamExt as _;

use super::sweep::{remove_each, walk};
use super::*;
use crate::file::{FileId, FileMeta};

/// A file of `owner`'s: 100 bytes of `n`.
fn meta(owner: &str, n: u8) -> FileMeta {
    FileMeta {
        id: FileId::random(),
        owner: owner.into(),
        filename: format!("f{n}.bin"),
        content_type: "application/octet-stream".into(),
        size: 100,
        sha256: Sha256::of(&[n; 100]),
    }
}

fn file(n: u8) -> (ObjectKey, Bytes, Sha256) {
    let meta = meta("alice", n);
    (meta.object_key(), Bytes::from(vec![n; 100]), meta.sha256)
}

async fn put(store: &LocalStore, n: u8) -> ObjectKey {
    let (key, data, sha256) = file(n);
    let body: ByteStream = futures_util::stream::once(async move { Ok(data) }).boxed();
    store.put(&key, 100, sha256, body).await.unwrap();
    key
}

/// Two processes on one data directory (two stores here): one sweeps
/// what the other stored, bytes it never counted. Its figure stays at
/// zero instead of wrapping round to "full", so it still takes uploads.
#[tokio::test]
async fn sweeping_what_another_process_stored_never_wraps_the_usage() {
    let dir = tempfile::tempdir().unwrap();
    let sweeper = LocalStore::open(dir.path(), 1000, 8).unwrap();
    let other = LocalStore::open(dir.path(), 1000, 8).unwrap();
    put(&other, 1).await;
    assert_eq!(
        sweeper
            .sweep(Duration::ZERO, |_| Ok(Default::default()))
            .unwrap(),
        1
    );
    assert_eq!(sweeper.used.load(Ordering::SeqCst), 0);
    put(&sweeper, 2).await;
}

/// A deduplicated copy is a hard link with its original's time: the sweep
/// keeps it while its record lives, however old its time, and takes the
/// original, whose record is gone. (Before, both went by time, and the
/// copy's record said ready over no bytes.)
#[tokio::test]
async fn the_sweep_keeps_an_object_whose_record_lives() {
    let dir = tempfile::tempdir().unwrap();
    let store = LocalStore::open(dir.path(), 1 << 20, 8).unwrap();
    let original = put(&store, 1).await;
    let info = store.head(&original).await.unwrap().unwrap();
    let copy = meta("alice", 1);
    store
        .copy(&original, &copy.object_key(), &info)
        .await
        .unwrap()
        .unwrap();
    let copy_id = copy.id.to_string();
    let asked = std::sync::Mutex::new(Vec::new());
    let removed = store
        .sweep(Duration::ZERO, |ids| {
            asked.lock().unwrap().extend(ids.iter().cloned());
            Ok(ids.iter().filter(|id| **id == copy_id).cloned().collect())
        })
        .unwrap();
    assert_eq!(removed, 1, "the original only");
    assert_eq!(asked.lock().unwrap().len(), 2, "both ids asked about");
    assert!(store.head(&original).await.unwrap().is_none());
    let kept = store.head(&copy.object_key()).await.unwrap().unwrap();
    assert_eq!(kept.size, 100);
}

fn key_of(owner: &str) -> ObjectKey {
    meta(owner, 1).object_key()
}

/// Uploads whose bodies never come hold their slots; a user with their
/// share taken is refused, and everyone else is still served.
#[tokio::test]
async fn one_user_cannot_take_every_transfer_slot() {
    let dir = tempfile::tempdir().unwrap();
    let store = LocalStore::open(dir.path(), 1 << 20, 8)
        .unwrap()
        .with_user_share(2);
    let stalled: Vec<_> = (0..2)
        .map(|_| {
            let (store, key) = (store.clone(), key_of("mallory"));
            tokio::spawn(async move {
                let body: ByteStream = futures_util::stream::pending().boxed();
                store.put(&key, 100, Sha256::of(&[1u8; 100]), body).await
            })
        })
        .collect();
    // Until both hold their slots.
    let mallory = key_of("mallory").owner_part().to_owned();
    while store.per_owner.lock().unwrap().get(&mallory) != Some(&2) {
        tokio::task::yield_now().await;
    }
    let body: ByteStream = futures_util::stream::pending().boxed();
    let third = store
        .put(&key_of("mallory"), 100, Sha256::of(&[1u8; 100]), body)
        .await;
    assert!(
        matches!(
            third,
            Err(StoreError::Busy(super::super::Busy::YourTransfers))
        ),
        "{third:?}"
    );
    // Another user uploads and reads back as usual.
    let key = put(&store, 7).await;
    assert!(store.get(&key).await.unwrap().is_some());
    for task in stalled {
        task.abort();
    }
}

/// A file that is gone before the sweep reaches it (another process
/// deleted it) does not stop the sweep: the rest are deleted.
#[tokio::test]
async fn one_failing_delete_does_not_stop_the_sweep() {
    let dir = tempfile::tempdir().unwrap();
    let store = LocalStore::open(dir.path(), 10_000, 8).unwrap();
    for n in 0..4 {
        put(&store, n).await;
    }
    let listed = walk(&store.objects).unwrap();
    assert_eq!(listed.len(), 4);
    std::fs::remove_file(&listed[0].0).unwrap();
    assert_eq!(remove_each(&listed, |_| {}), 3);
    assert!(walk(&store.objects).unwrap().is_empty());
}

/// The proof runs while the parts arrive: the whole file's hash is carried
/// over each part that continues it in order (a part that arrives early
/// waits), so that joining reads nothing more; and the carried hash proves
/// the right file and refuses another. (Before: joining read the whole
/// file after the last part.)
#[tokio::test]
async fn the_whole_is_hashed_while_the_parts_arrive() {
    use crate::store::{Joined, PartStore as _};
    let dir = tempfile::tempdir().unwrap();
    let store = LocalStore::open(dir.path(), 1 << 30, 8).unwrap();
    let mib = 1024 * 1024;
    let data: Vec<u8> = (0..(5 * mib / 2)).map(|i| (i % 251) as u8).collect();
    let plan = crate::multipart::Plan::new(data.len() as u64, mib as u64);
    assert_eq!(plan.count, 3);
    let hashed = |store: &LocalStore, key: &ObjectKey| {
        store.running.lock().unwrap()[&key.parts_prefix()].hashed
    };
    for (declared, ready) in [(Sha256::of(&data), true), (Sha256::of(b"another"), false)] {
        let meta = FileMeta {
            id: FileId::random(),
            owner: "alice".into(),
            filename: "p.bin".into(),
            content_type: "application/octet-stream".into(),
            size: data.len() as u64,
            sha256: declared,
        };
        let key = meta.object_key();
        for (n, carried) in [(2u32, 0u64), (1, 2 * mib as u64), (3, data.len() as u64)] {
            let from = (u64::from(n - 1) * plan.part_size) as usize;
            let part = Bytes::copy_from_slice(&data[from..from + plan.len(n).unwrap() as usize]);
            let sha = Sha256::of(&part);
            let len = part.len() as u64;
            let body: ByteStream = futures_util::stream::once(async move { Ok(part) }).boxed();
            store
                .put_part(&key, n, from as u64, len, sha, body)
                .await
                .unwrap();
            assert_eq!(hashed(&store, &key), carried, "after part {n}");
        }
        let joined = store.join(&key, &plan, declared).await;
        match joined {
            Ok(Joined::Proven) => assert!(ready),
            Err(StoreError::Mismatch(_)) => assert!(!ready),
            other => panic!("{other:?}"),
        }
        assert!(
            store.running.lock().unwrap().is_empty(),
            "taken by the join"
        );
    }
}
