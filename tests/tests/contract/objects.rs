//! The object store: absent objects, bodies checked as they are stored,
//! written once, read whole and in ranges.

use super::*;

pub(super) async fn contract(store: &dyn ObjectStore) {
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

    // A large body already in memory, in one chunk (a file in an action's
    // answer), is stored whole. (Before: S3 refused any over 16 MiB.)
    let large = crate::util::bytes(20 << 20, 2);
    let big = file("alice", "large.bin", &large);
    let one: ByteStream = Box::pin(futures_util::stream::once({
        let large = Bytes::from(large.clone());
        async move { Ok(large) }
    }));
    store
        .put(&big.object_key(), big.size, big.sha256, one)
        .await
        .unwrap();
    assert_eq!(read(store, &big.object_key()).await.unwrap(), large);

    // A copy inside the store: the same bytes under a new key; each is
    // removed on its own.
    let twin = file("alice", "a copy.bin", &data);
    let copied = store
        .copy(&key, &twin.object_key(), &info)
        .await
        .unwrap()
        .expect("both stores copy");
    assert_eq!(copied.size, 5000);
    assert!(copied.sha256.is_none_or(|d| d == f.sha256));
    assert_eq!(read(store, &twin.object_key()).await.unwrap(), data);
    // (Never over an object there: the local store's hard link cannot;
    // S3 is asked `If-None-Match: *`, which s3s-fs 0.14 ignores on
    // CopyObject, so it is not checked here. The service copies only to
    // a new file's key.)
    store.delete(&key).await.unwrap();
    assert_eq!(read(store, &twin.object_key()).await.unwrap(), data);
}
