use std::time::Duration;

use bytes::Bytes;
use futures_util::StreamExt as _;

use super::counted::walk;
use super::pump::BATCH;
use super::sweep::remove_each;
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
    assert_eq!(sweeper.quota.used(), 0);
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

/// A stream of `chunks`, ending in `end` (an error, where given).
fn body_of(chunks: Vec<Vec<u8>>, end: Option<io::ErrorKind>) -> ByteStream {
    let mut items: Vec<io::Result<Bytes>> =
        chunks.into_iter().map(|c| Ok(Bytes::from(c))).collect();
    if let Some(kind) = end {
        items.push(Err(io::Error::new(kind, "the client went away")));
    }
    futures_util::stream::iter(items).boxed()
}

fn streamed(store: &LocalStore) -> &dyn super::super::StreamStore {
    store.stream().expect("the local store streams")
}

/// A stream appended in three requests, the second broken off, across a
/// store reopened (a restart): every byte that arrived is kept, each
/// request takes up where the last left, and the last byte makes the
/// object, with the quota's figure the file's size.
#[tokio::test]
async fn a_stream_resumes_across_requests_and_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let data: Vec<u8> = (0..300_000u32).map(|i| (i % 251) as u8).collect();
    let (key, size, sha) = (
        meta("alice", 1).object_key(),
        data.len() as u64,
        Sha256::of(&data),
    );
    let store = LocalStore::open(dir.path(), 1 << 30, 8).unwrap();
    let s = streamed(&store);
    assert_eq!(s.offset(&key, size).await.unwrap(), 0);
    let first = s
        .append(
            &key,
            size,
            sha,
            0,
            body_of(vec![data[..1000].to_vec()], None),
        )
        .await
        .unwrap();
    assert_eq!(
        first,
        crate::store::Appended {
            offset: 1000,
            complete: false
        }
    );
    // Broken off after 100,001 more bytes: they are kept.
    let broke = s
        .append(
            &key,
            size,
            sha,
            1000,
            body_of(
                vec![data[1000..101_001].to_vec()],
                Some(io::ErrorKind::ConnectionReset),
            ),
        )
        .await;
    assert!(matches!(broke, Err(StoreError::Body(_))), "{broke:?}");
    drop(store);
    let store = LocalStore::open(dir.path(), 1 << 30, 8).unwrap();
    let s = streamed(&store);
    assert_eq!(s.offset(&key, size).await.unwrap(), 101_001);
    // Another offset: refused, nothing written.
    let wrong = s
        .append(&key, size, sha, 1000, body_of(vec![vec![0; 10]], None))
        .await;
    assert!(
        matches!(wrong, Err(StoreError::Offset { at: 101_001 })),
        "{wrong:?}"
    );
    assert!(store.head(&key).await.unwrap().is_none());
    let last = s
        .append(
            &key,
            size,
            sha,
            101_001,
            body_of(
                data[101_001..].chunks(7777).map(<[u8]>::to_vec).collect(),
                None,
            ),
        )
        .await
        .unwrap();
    assert_eq!(
        last,
        crate::store::Appended {
            offset: size,
            complete: true
        }
    );
    let mut read = Vec::new();
    let mut got = store.get(&key).await.unwrap().unwrap();
    while let Some(c) = got.next().await {
        read.extend_from_slice(&c.unwrap());
    }
    assert_eq!(Sha256::of(&read), sha);
    assert_eq!(s.offset(&key, size).await.unwrap(), size);
    assert!(
        !store.stream_paths(&key).dir.exists(),
        "the staging is gone"
    );
    assert_eq!(store.quota.used(), size);
    let again = s.append(&key, size, sha, size, body_of(vec![], None)).await;
    assert!(matches!(again, Err(StoreError::AlreadyExists)), "{again:?}");
}

/// Bytes past the pinned length: refused, and nothing of the request
/// after the last checkpoint kept; the upload goes on from there.
#[tokio::test]
async fn a_stream_keeps_nothing_past_its_length() {
    let dir = tempfile::tempdir().unwrap();
    let store = LocalStore::open(dir.path(), 1 << 30, 8).unwrap();
    let s = streamed(&store);
    let data = vec![7u8; 100];
    let (key, sha) = (meta("alice", 1).object_key(), Sha256::of(&data));
    s.append(&key, 100, sha, 0, body_of(vec![vec![7; 40]], None))
        .await
        .unwrap();
    let past = s
        .append(
            &key,
            100,
            sha,
            40,
            body_of(vec![vec![7; 30], vec![7; 31]], None),
        )
        .await;
    assert!(
        matches!(past, Err(StoreError::PastEnd { size: 100 })),
        "{past:?}"
    );
    assert_eq!(s.offset(&key, 100).await.unwrap(), 40);
    assert_eq!(
        std::fs::metadata(store.stream_paths(&key).data)
            .unwrap()
            .len(),
        40
    );
    assert_eq!(store.quota.used(), 40);
    let done = s
        .append(&key, 100, sha, 40, body_of(vec![vec![7; 60]], None))
        .await
        .unwrap();
    assert!(done.complete);
}

/// The last byte decides: another digest frees every byte of the stream,
/// and nothing is readable; the quota counts none of it.
#[tokio::test]
async fn a_stream_of_another_file_is_freed_at_its_last_byte() {
    let dir = tempfile::tempdir().unwrap();
    let store = LocalStore::open(dir.path(), 1 << 30, 8).unwrap();
    let s = streamed(&store);
    let (key, sha) = (meta("alice", 1).object_key(), Sha256::of(&[1u8; 100]));
    s.append(&key, 100, sha, 0, body_of(vec![vec![1; 50]], None))
        .await
        .unwrap();
    let wrong = s
        .append(&key, 100, sha, 50, body_of(vec![vec![2; 50]], None))
        .await;
    assert!(
        matches!(
            wrong,
            Err(StoreError::Mismatch(crate::sha::Mismatch::Digest { .. }))
        ),
        "{wrong:?}"
    );
    assert!(store.head(&key).await.unwrap().is_none());
    assert!(!store.stream_paths(&key).dir.exists());
    assert_eq!(s.offset(&key, 100).await.unwrap(), 0);
    assert_eq!(store.quota.used(), 0);
}

/// Two processes on one directory (two stores): while one appends, the
/// other's append is refused before it reads a byte, by the stream's lock;
/// and bytes written after the last checkpoint (a crash) are cut off when
/// the upload is taken up again.
#[tokio::test]
async fn one_writer_a_stream_and_a_crash_loses_only_the_unchecked_tail() {
    let dir = tempfile::tempdir().unwrap();
    let (one, two) = (
        LocalStore::open(dir.path(), 1 << 30, 8).unwrap(),
        LocalStore::open(dir.path(), 1 << 30, 8).unwrap(),
    );
    let data = vec![3u8; 1000];
    let (key, sha) = (meta("alice", 1).object_key(), Sha256::of(&data));
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel::<io::Result<Bytes>>();
    tx.send(Ok(Bytes::from(vec![3u8; 100]))).unwrap();
    let rx = futures_util::stream::unfold(rx, |mut rx| async { rx.recv().await.map(|x| (x, rx)) });
    let writing = {
        let one = one.clone();
        let key = key.clone();
        tokio::spawn(async move { streamed(&one).append(&key, 1000, sha, 0, rx.boxed()).await })
    };
    // Once the first writer holds the stream's lock (as another process
    // would see it), the second is refused.
    // (Looked for in /proc/locks: trying the lock would take it.)
    let data_path = one.stream_paths(&key).data;
    loop {
        use std::os::unix::fs::MetadataExt as _;
        let locks = std::fs::read_to_string("/proc/locks").unwrap_or_default();
        let held = std::fs::metadata(&data_path).is_ok_and(|m| {
            let inode = format!(":{} ", m.ino());
            locks
                .lines()
                .any(|l| l.contains("FLOCK") && l.contains(&inode))
        });
        if held {
            break;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let second = streamed(&two)
        .append(&key, 1000, sha, 0, body_of(vec![vec![3; 10]], None))
        .await;
    assert!(
        matches!(second, Err(StoreError::Busy(crate::store::Busy::Upload))),
        "{second:?}"
    );
    drop(tx);
    let first = writing.await.unwrap().unwrap();
    assert_eq!(first.offset, 100);
    // A crash after writing more, before a checkpoint: 50 stray bytes.
    let paths = one.stream_paths(&key);
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(&paths.data)
        .unwrap();
    std::io::Write::write_all(&mut f, &[9u8; 50]).unwrap();
    drop(f);
    assert_eq!(streamed(&two).offset(&key, 1000).await.unwrap(), 100);
    let done = streamed(&two)
        .append(&key, 1000, sha, 100, body_of(vec![vec![3; 900]], None))
        .await
        .unwrap();
    assert!(done.complete, "{done:?}");
}

/// A file stored whole by a PUT after part of it came as a stream: the
/// stream's bytes go, and the quota counts the file once.
#[tokio::test]
async fn a_whole_put_drops_a_stream_begun_before() {
    let dir = tempfile::tempdir().unwrap();
    let store = LocalStore::open(dir.path(), 1 << 30, 8).unwrap();
    let (key, data, sha) = file(4);
    streamed(&store)
        .append(&key, 100, sha, 0, body_of(vec![data[..40].to_vec()], None))
        .await
        .unwrap();
    assert_eq!(store.quota.used(), 40);
    let body: ByteStream = futures_util::stream::once(async move { Ok(data) }).boxed();
    store.put(&key, 100, sha, body).await.unwrap();
    assert!(!store.stream_paths(&key).dir.exists());
    assert_eq!(store.quota.used(), 100);
}

/// A body fed by the test: what is sent arrives, and the body stays open
/// until the sender is dropped.
fn fed() -> (
    tokio::sync::mpsc::UnboundedSender<io::Result<Bytes>>,
    ByteStream,
) {
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel::<io::Result<Bytes>>();
    let body =
        futures_util::stream::unfold(rx, |mut rx| async { rx.recv().await.map(|x| (x, rx)) });
    (tx, body.boxed())
}

/// Waits until the stream of `key` holds at least `bytes` on disk.
async fn written(store: &LocalStore, key: &ObjectKey, bytes: u64) {
    let data = store.stream_paths(key).data;
    while std::fs::metadata(&data).map_or(0, |m| m.len()) < bytes {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// An append under way: a stream of 4 MiB kept at its checkpoint of 1000
/// bytes, then a second append whose first batch is written (a batch is
/// written once full), its body still open (send on the sender, or drop
/// it, to end it).
struct UnderWay {
    key: ObjectKey,
    size: u64,
    body: tokio::sync::mpsc::UnboundedSender<io::Result<Bytes>>,
    appending: tokio::task::JoinHandle<Result<crate::store::Appended, StoreError>>,
}

async fn append_under_way(store: &LocalStore) -> UnderWay {
    let size = 4 * 1024 * 1024;
    let (key, sha) = (meta("alice", 1).object_key(), Sha256::of(b"never"));
    streamed(store)
        .append(&key, size, sha, 0, body_of(vec![vec![1; 1000]], None))
        .await
        .unwrap();
    let (tx, body) = fed();
    tx.send(Ok(Bytes::from(vec![1u8; BATCH + 88 * 1024])))
        .unwrap();
    let appending = {
        let (store, key) = (store.clone(), key.clone());
        tokio::spawn(async move { streamed(&store).append(&key, size, sha, 1000, body).await })
    };
    written(store, &key, 1000 + BATCH as u64).await;
    UnderWay {
        key,
        size,
        body: tx,
        appending,
    }
}

/// A delete wins over an append under way: the append ends at once
/// (`Gone`, no more body needed), its stream is removed, and the quota
/// counts nothing of it, neither its bytes nor its reservation: only
/// the other file stored.
#[tokio::test]
async fn a_delete_during_an_append_gives_back_exactly_what_it_counted() {
    let dir = tempfile::tempdir().unwrap();
    let store = LocalStore::open(dir.path(), 1 << 30, 8).unwrap();
    put(&store, 9).await;
    assert_eq!(store.quota.used(), 100);
    let UnderWay {
        key,
        body: tx,
        appending,
        ..
    } = append_under_way(&store).await;
    store.delete(&key).await.unwrap();
    let ended = tokio::time::timeout(Duration::from_secs(10), appending)
        .await
        .expect("the append ends without more body")
        .unwrap();
    assert!(matches!(ended, Err(StoreError::Gone)), "{ended:?}");
    assert!(!store.stream_paths(&key).dir.exists(), "its stream is gone");
    assert_eq!(store.quota.used(), 100, "only the other file is counted");
    drop(tx);
}

/// An append cut off (its future dropped: its link's expiry, a dropped
/// connection) is cut back to its last checkpoint and keeps exactly what
/// that holds: the quota counts what is on disk, no more, no less, and
/// the sweep gives back only that.
#[tokio::test]
async fn an_append_cut_off_keeps_exactly_its_checkpoint() {
    let dir = tempfile::tempdir().unwrap();
    let store = LocalStore::open(dir.path(), 1 << 30, 8).unwrap();
    let other = put(&store, 9).await;
    let UnderWay {
        key,
        size,
        body: tx,
        appending,
    } = append_under_way(&store).await;
    appending.abort();
    let _ = appending.await;
    // The stream's lock goes with the last write: then it is settled.
    let data = store.stream_paths(&key).data;
    let on_disk = || std::fs::metadata(&data).map_or(0, |m| m.len());
    for _ in 0..200 {
        if on_disk() == 1000 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(on_disk(), 1000, "cut back to its checkpoint");
    assert_eq!(streamed(&store).offset(&key, size).await.unwrap(), 1000);
    assert_eq!(
        store.quota.used(),
        100 + 1000,
        "the checkpoint's bytes, no more"
    );
    drop(tx);
    // The sweep (its record gone) gives back what the figure counted.
    let keep = other.as_str().split('/').nth(2).unwrap().to_owned();
    store
        .sweep(Duration::ZERO, |_| Ok([keep].into_iter().collect()))
        .unwrap();
    assert_eq!(store.quota.used(), 100, "the other file alone");
}

/// A stream shorter than its checkpoint (a restore, disk trouble): `HEAD`
/// answers the offset a `PATCH` takes (0), never one it refuses.
#[tokio::test]
async fn a_stream_shorter_than_its_checkpoint_stands_at_zero() {
    let dir = tempfile::tempdir().unwrap();
    let store = LocalStore::open(dir.path(), 1 << 30, 8).unwrap();
    let data = vec![5u8; 300];
    let (key, sha) = (meta("alice", 1).object_key(), Sha256::of(&data));
    let s = streamed(&store);
    s.append(&key, 300, sha, 0, body_of(vec![vec![5; 100]], None))
        .await
        .unwrap();
    std::fs::OpenOptions::new()
        .write(true)
        .open(store.stream_paths(&key).data)
        .unwrap()
        .set_len(50)
        .unwrap();
    let at = s.offset(&key, 300).await.unwrap();
    assert_eq!(at, 0, "HEAD answers what PATCH takes");
    let done = s
        .append(&key, 300, sha, at, body_of(vec![data.clone()], None))
        .await
        .unwrap();
    assert!(done.complete, "{done:?}");
}

/// An empty append changes nothing: no sync, no new checkpoint (the
/// checkpoint is written aside and renamed over, so a new one is a new
/// file).
#[tokio::test]
async fn an_empty_append_writes_no_checkpoint() {
    use std::os::unix::fs::MetadataExt as _;
    let dir = tempfile::tempdir().unwrap();
    let store = LocalStore::open(dir.path(), 1 << 30, 8).unwrap();
    let (key, sha) = (meta("alice", 1).object_key(), Sha256::of(&[5u8; 300]));
    let s = streamed(&store);
    s.append(&key, 300, sha, 0, body_of(vec![vec![5; 100]], None))
        .await
        .unwrap();
    let at = store
        .stream_paths(&key)
        .dir
        .join(super::counted::CHECKPOINT_FILE);
    let before = std::fs::metadata(&at).unwrap().ino();
    let empty = s
        .append(&key, 300, sha, 100, body_of(vec![], None))
        .await
        .unwrap();
    assert_eq!(empty.offset, 100);
    assert_eq!(
        std::fs::metadata(&at).unwrap().ino(),
        before,
        "no checkpoint written"
    );
}

/// Frames of every size against the batch's (one byte, one short of it,
/// over two batches at once, a few bytes): a whole PUT and a stream's
/// append each store exactly the body, in order (its size and digest are
/// the pin), and a frame past an append's length still keeps nothing of it.
#[tokio::test]
async fn frames_of_any_size_are_cut_into_batches_and_kept_in_order() {
    let dir = tempfile::tempdir().unwrap();
    let store = LocalStore::open(dir.path(), 1 << 30, 8).unwrap();
    let sizes = [1, BATCH - 1, 2 * BATCH + 3, 17, BATCH, 5];
    let total: usize = sizes.iter().sum();
    let data: Vec<u8> = (0..total as u32).map(|i| (i % 253) as u8).collect();
    let mut frames = Vec::new();
    let mut at = 0;
    for n in sizes {
        frames.push(data[at..at + n].to_vec());
        at += n;
    }
    let (size, sha) = (total as u64, Sha256::of(&data));

    let whole = meta("alice", 1).object_key();
    store
        .put(&whole, size, sha, body_of(frames.clone(), None))
        .await
        .unwrap();
    let mut swapped = frames.clone();
    swapped.swap(1, 3);
    let refused = store
        .put(
            &meta("alice", 2).object_key(),
            size,
            sha,
            body_of(swapped, None),
        )
        .await;
    assert!(
        refused.is_err(),
        "the same bytes out of order are not the file"
    );

    let s = streamed(&store);
    let key = meta("alice", 3).object_key();
    let appended = s
        .append(&key, size, sha, 0, body_of(frames.clone(), None))
        .await
        .unwrap();
    assert_eq!(
        appended,
        crate::store::Appended {
            offset: size,
            complete: true
        }
    );

    let short = meta("alice", 4).object_key();
    let mut past = frames;
    past.push(vec![9; 3]);
    let cut = s.append(&short, size, sha, 0, body_of(past, None)).await;
    assert!(cut.is_err(), "a body past the length is refused: {cut:?}");
    assert_eq!(
        s.offset(&short, size).await.unwrap(),
        0,
        "nothing of it kept"
    );
}
