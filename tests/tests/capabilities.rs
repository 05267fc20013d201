//! The store contract over what a store may add to its core: one
//! resumable stream per upload where sluice receives the bytes (the local
//! store), uploads in parts (begin, put, list, join, abort) where the store
//! does (S3, as s3s-fs), ranged reads on both, presigned requests on S3,
//! and a store that presigns but does
//! not check SHA-256 (as Google Cloud Storage or Azure Blob sign only MD5
//! or CRC): sluice proves its files once by reading them, and refuses a
//! false one, rather than refusing every file.

use std::sync::Arc;

use sluice::multipart::Plan;
use sluice::store::{
    Access, ByteStream, DownloadAs, Joined, ObjectInfo, ObjectStore, PartStore, Presigned,
    Presigner, StoreError,
};
use sluice::{ObjectKey, Sha256};

use crate::contract::{body, file, read, runtime};
use crate::util::{Emulators, bytes, request};

const MIB: u64 = 1024 * 1024;

/// Sends part `n` of `data` (cut by `plan`) as a client would: to the
/// store's presigned URL where it has them (with exactly the signed
/// headers), else through [`PartStore::put_part`]. `Err` holds why it was
/// refused.
async fn send_part(
    store: &dyn ObjectStore,
    key: &ObjectKey,
    plan: &Plan,
    n: u32,
    data: &[u8],
) -> Result<(), String> {
    let from = (u64::from(n - 1) * plan.part_size) as usize;
    let part = data[from..from + plan.len(n).unwrap() as usize].to_vec();
    let sha256 = Sha256::of(&part);
    let len = part.len() as u64;
    match store.access() {
        Access::Direct(presigner) => {
            let ttl = std::time::Duration::from_secs(60);
            let p = presigner
                .presign_part(key, n, len, sha256, ttl)
                .await
                .map_err(|e| e.to_string())?;
            let sent = tokio::task::spawn_blocking(move || put(&p, &part))
                .await
                .unwrap();
            (sent.status == 200)
                .then_some(())
                .ok_or(format!("{}: {}", sent.status, sent.text()))
        }
        Access::Proxied => store
            .parts()
            .unwrap()
            .put_part(key, n, from as u64, len, sha256, body(&part))
            .await
            .map_err(|e| e.to_string()),
    }
}

fn put(p: &Presigned, data: &[u8]) -> crate::util::Reply {
    let headers: Vec<(&str, &str)> = p
        .headers
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    request("PUT", &p.url, &headers, Some(data))
}

async fn parts_contract(store: &dyn ObjectStore) {
    let parts = store
        .parts()
        .expect("a store that receives the bytes takes parts");
    let data = bytes(11 * MIB as usize, 71);
    let f = file("alice", "parts.bin", &data);
    let key = f.object_key();
    let plan = Plan::new(f.size, 5 * MIB);
    assert_eq!(plan.count, 3);

    // Begun twice: one upload.
    parts.begin(&key, &f.content_type).await.unwrap();
    parts.begin(&key, &f.content_type).await.unwrap();
    assert!(parts.stored_parts(&key).await.unwrap().is_empty());
    assert!(!parts.has_part(&key, 2).await.unwrap());

    // A part is stored once, checked against its own digest.
    send_part(store, &key, &plan, 2, &data).await.unwrap();
    assert!(parts.has_part(&key, 2).await.unwrap());
    assert!(!parts.has_part(&key, 1).await.unwrap());
    let wrong = Sha256::of(b"not the part");
    let refused = parts
        .put_part(
            &key,
            1,
            0,
            plan.part_size,
            wrong,
            body(&data[..(5 * MIB) as usize]),
        )
        .await
        .unwrap_err();
    assert!(matches!(refused, StoreError::Mismatch(_)), "{refused:?}");
    let again = parts
        .put_part(
            &key,
            2,
            plan.part_size,
            plan.part_size,
            Sha256::of(b"x"),
            body(b"x"),
        )
        .await
        .unwrap_err();
    assert!(matches!(again, StoreError::AlreadyExists), "{again:?}");
    assert_eq!(parts.stored_parts(&key).await.unwrap(), [2]);

    // Joined only once every part is there; nothing changes before.
    let missing = parts.join(&key, &plan, f.sha256).await.unwrap_err();
    assert!(matches!(missing, StoreError::MissingPart(1)), "{missing:?}");
    assert!(store.head(&key).await.unwrap().is_none());
    for n in [1, 3] {
        send_part(store, &key, &plan, n, &data).await.unwrap();
    }
    assert_eq!(parts.stored_parts(&key).await.unwrap(), [1, 2, 3]);
    let joined = parts.join(&key, &plan, f.sha256).await.unwrap();
    // A store that does not prove while joining gives the object's
    // entity tag, for the service's proof.
    match &joined {
        Joined::Unproven { etag } => assert!(!etag.is_empty()),
        Joined::Proven => {}
    }
    assert_eq!(parts.join(&key, &plan, f.sha256).await.unwrap(), joined);
    assert!(read(store, &key).await.unwrap() == data);

    // Ranged reads: any slice, pinned to the object.
    let info = store.head(&key).await.unwrap().unwrap();
    assert_eq!(info.size, f.size);
    reads_a_range(store, &key, &data, 5 * MIB - 3..5 * MIB + 5).await;
    let absent = file("alice", "absent.bin", b"x").object_key();
    assert!(
        store
            .get_range(&absent, 0..1, None)
            .await
            .unwrap()
            .is_none()
    );

    // Aborted: the object and its parts are gone, and the same upload can
    // begin again.
    parts.abort(&key, &plan).await.unwrap();
    assert!(store.head(&key).await.unwrap().is_none());
    assert!(parts.stored_parts(&key).await.unwrap().is_empty());
    parts.begin(&key, &f.content_type).await.unwrap();
    send_part(store, &key, &plan, 1, &data).await.unwrap();
    assert_eq!(parts.stored_parts(&key).await.unwrap(), [1]);
    parts.abort(&key, &plan).await.unwrap();

    // Parts each right whose whole is another file: a store that proves
    // refuses them and discards them; one that does not joins them (the
    // service's proof refuses them, see parts::on_s3).
    let other = file("alice", "other.bin", &data);
    let mut declared = other.clone();
    declared.sha256 = Sha256::of(b"another file");
    let key = other.object_key();
    parts.begin(&key, &other.content_type).await.unwrap();
    for n in plan.numbers() {
        send_part(store, &key, &plan, n, &data).await.unwrap();
    }
    match (
        parts.join(&key, &plan, declared.sha256).await,
        store.access(),
    ) {
        (Err(StoreError::Mismatch(_)), Access::Proxied) => {
            assert!(parts.stored_parts(&key).await.unwrap().is_empty());
            assert!(store.head(&key).await.unwrap().is_none());
        }
        (Ok(Joined::Unproven { .. }), Access::Direct(_)) => {}
        other => panic!("{other:?}"),
    }
    // Deleted: gone, and deleting again is no error.
    store.delete(&key).await.unwrap();
    assert!(store.head(&key).await.unwrap().is_none());
    store.delete(&key).await.unwrap();
}

async fn collect(stream: ByteStream) -> Vec<u8> {
    use futures_util::TryStreamExt as _;
    let chunks: Vec<bytes::Bytes> = stream.try_collect().await.unwrap();
    chunks.concat()
}

/// Presigned requests as S3 checks them: a PUT of another digest is
/// refused, the right one is stored once, and a GET serves it.
async fn presign_contract(store: &dyn ObjectStore) {
    let Access::Direct(presigner) = store.access() else {
        panic!("a direct store presigns");
    };
    let data = bytes(3000, 72);
    let f = file("alice", "signed.bin", &data);
    let key = f.object_key();
    let ttl = std::time::Duration::from_secs(60);
    let p = presigner
        .presign_put(&key, f.size, f.sha256, &f.content_type, ttl)
        .await
        .unwrap();
    // A body of another digest is refused (on a key of its own: s3s-fs
    // keeps the bytes of a PUT it refused, without a checksum, where S3
    // stores nothing).
    let mut wrong = data.clone();
    wrong[7] ^= 1;
    let elsewhere = file("alice", "wrong.bin", &data);
    let w = presigner
        .presign_put(
            &elsewhere.object_key(),
            f.size,
            f.sha256,
            &f.content_type,
            ttl,
        )
        .await
        .unwrap();
    let refused = tokio::task::spawn_blocking(move || put(&w, &wrong))
        .await
        .unwrap();
    assert!(refused.status >= 400, "{}", refused.status);
    let kept = store.head(&elsewhere.object_key()).await.unwrap();
    assert!(kept.as_ref().is_none_or(|i| i.sha256.is_none()), "{kept:?}");
    let (p2, d) = (p.clone(), data.clone());
    let stored = tokio::task::spawn_blocking(move || put(&p2, &d))
        .await
        .unwrap();
    assert_eq!(stored.status, 200, "{}", stored.text());
    let (p2, d) = (p.clone(), data.clone());
    let twice = tokio::task::spawn_blocking(move || put(&p2, &d))
        .await
        .unwrap();
    assert_eq!(twice.status, 412, "{}", twice.text());
    let info = store.head(&key).await.unwrap().unwrap();
    assert_eq!(info.sha256, Some(f.sha256));
    let as_ = DownloadAs {
        content_disposition: "attachment; filename=\"signed.bin\"",
        content_type: "application/octet-stream",
    };
    let url = presigner.presign_get(&key, &info, as_, ttl).await.unwrap();
    let got = tokio::task::spawn_blocking(move || request("GET", &url, &[], None))
        .await
        .unwrap();
    assert_eq!(got.status, 200);
    assert!(got.body == data);
}

/// `range` of the object at `key`, read pinned to its entity tag, is that
/// range of `data`.
async fn reads_a_range(
    store: &dyn ObjectStore,
    key: &ObjectKey,
    data: &[u8],
    range: std::ops::Range<u64>,
) {
    let info = store.head(key).await.unwrap().unwrap();
    let slice = collect(
        store
            .get_range(key, range.clone(), info.etag.as_deref())
            .await
            .unwrap()
            .unwrap(),
    )
    .await;
    assert!(slice == data[range.start as usize..range.end as usize]);
}

/// One resumable stream per upload: appended at the offset it stands at
/// (any other refused, nothing written), kept across a store opened again,
/// nothing past its length, the last byte making the object (readable,
/// ranged) or freeing the bytes; a store that streams takes no parts.
async fn stream_contract(store: &dyn ObjectStore, again: &dyn ObjectStore) {
    use sluice::store::Appended;
    assert!(
        store.parts().is_none(),
        "a store that streams takes no parts"
    );
    let streams = store.stream().expect("the local store streams");
    let data = bytes(3 * MIB as usize + 5, 72);
    let f = file("alice", "stream.bin", &data);
    let (key, size) = (f.object_key(), f.size);
    assert_eq!(streams.offset(&key, size).await.unwrap(), 0);
    let first = streams
        .append(&key, size, f.sha256, 0, body(&data[..MIB as usize]))
        .await
        .unwrap();
    assert_eq!(
        first,
        Appended {
            offset: MIB,
            complete: false
        }
    );
    let wrong = streams
        .append(&key, size, f.sha256, 0, body(b"x"))
        .await
        .unwrap_err();
    assert!(
        matches!(wrong, StoreError::Offset { at } if at == MIB),
        "{wrong:?}"
    );
    let past = streams
        .append(
            &key,
            size,
            f.sha256,
            MIB,
            body(&[data[MIB as usize..].to_vec(), vec![0]].concat()),
        )
        .await
        .unwrap_err();
    assert!(matches!(past, StoreError::PastEnd { .. }), "{past:?}");
    assert!(
        store.head(&key).await.unwrap().is_none(),
        "nothing readable yet"
    );
    // Another store on the same place (a restart) goes on from there.
    let streams = again.stream().unwrap();
    assert_eq!(streams.offset(&key, size).await.unwrap(), MIB);
    let done = streams
        .append(&key, size, f.sha256, MIB, body(&data[MIB as usize..]))
        .await
        .unwrap();
    assert_eq!(
        done,
        Appended {
            offset: size,
            complete: true
        }
    );
    assert!(read(again, &key).await.unwrap() == data);
    reads_a_range(again, &key, &data, MIB - 3..MIB + 5).await;

    // Every byte in, and not the file declared: freed, nothing readable.
    let liar = file("alice", "liar.bin", &data);
    let mut declared = liar.clone();
    declared.sha256 = Sha256::of(b"another file");
    let refused = streams
        .append(&liar.object_key(), size, declared.sha256, 0, body(&data))
        .await
        .unwrap_err();
    assert!(matches!(refused, StoreError::Mismatch(_)), "{refused:?}");
    assert!(again.head(&liar.object_key()).await.unwrap().is_none());
    assert_eq!(streams.offset(&liar.object_key(), size).await.unwrap(), 0);
}

#[test]
fn the_local_store_keeps_the_stream_contract() {
    let dir = tempfile::tempdir().unwrap();
    runtime().block_on(async {
        let store = sluice::store::LocalStore::open(dir.path(), 1 << 30, 8).unwrap();
        let again = sluice::store::LocalStore::open(dir.path(), 1 << 30, 8).unwrap();
        stream_contract(&store, &again).await;
    });
}

/// s3s-fs ignores `If-Match` on GET (0.14.1 checks no condition there), so
/// a ranged read pinned to an object that changed is refused only on AWS.
#[test]
fn s3_keeps_the_parts_and_presigning_contract() {
    let emulators = Emulators::start();
    runtime().block_on(async {
        let (store, _) = emulators.provision("capabilities").await;
        parts_contract(&store).await;
        presign_contract(&store).await;
    });
}

/// S3 presigning PUTs without their SHA-256: a store that cannot check a
/// body's digest. Everything else is S3's.
#[derive(Debug)]
struct Unchecked(sluice_aws::S3Store);

#[async_trait::async_trait]
impl ObjectStore for Unchecked {
    async fn head(&self, key: &ObjectKey) -> Result<Option<ObjectInfo>, StoreError> {
        self.0.head(key).await
    }
    async fn put(
        &self,
        key: &ObjectKey,
        size: u64,
        sha256: Sha256,
        body: ByteStream,
    ) -> Result<(), StoreError> {
        self.0.put(key, size, sha256, body).await
    }
    async fn get(&self, key: &ObjectKey) -> Result<Option<ByteStream>, StoreError> {
        self.0.get(key).await
    }
    async fn get_range(
        &self,
        key: &ObjectKey,
        range: std::ops::Range<u64>,
        etag: Option<&str>,
    ) -> Result<Option<ByteStream>, StoreError> {
        self.0.get_range(key, range, etag).await
    }
    async fn delete(&self, key: &ObjectKey) -> Result<(), StoreError> {
        self.0.delete(key).await
    }
    fn access(&self) -> Access<'_> {
        Access::Direct(self)
    }
    fn parts(&self) -> Option<&dyn PartStore> {
        self.0.parts()
    }
}

#[async_trait::async_trait]
impl Presigner for Unchecked {
    fn checks_sha256(&self) -> bool {
        false
    }
    async fn presign_put(
        &self,
        key: &ObjectKey,
        size: u64,
        _sha256: Sha256,
        content_type: &str,
        ttl: std::time::Duration,
    ) -> Result<Presigned, StoreError> {
        let config = aws_sdk_s3::presigning::PresigningConfig::expires_in(ttl).unwrap();
        let request = self
            .0
            .client()
            .put_object()
            .bucket(self.0.bucket())
            .key(key.as_str())
            .content_length(size as i64)
            .content_type(content_type)
            .if_none_match("*")
            .presigned(config)
            .await
            .unwrap();
        Ok(Presigned {
            url: request.uri().to_owned(),
            headers: request
                .headers()
                .filter(|(k, _)| !k.eq_ignore_ascii_case("host"))
                .map(|(k, v)| (k.to_owned(), v.to_owned()))
                .collect(),
        })
    }
    async fn presign_part(
        &self,
        key: &ObjectKey,
        n: u32,
        size: u64,
        sha256: Sha256,
        ttl: std::time::Duration,
    ) -> Result<Presigned, StoreError> {
        self.0.presign_part(key, n, size, sha256, ttl).await
    }
    async fn presign_get(
        &self,
        key: &ObjectKey,
        info: &ObjectInfo,
        download: DownloadAs<'_>,
        ttl: std::time::Duration,
    ) -> Result<String, StoreError> {
        self.0.presign_get(key, info, download, ttl).await
    }
}

/// A store that presigns but does not check digests takes any body of the
/// right size: sluice proves each file once by reading it (the proof kept
/// in its record), so the right file turns ready and a false one is
/// refused and deleted. (Before: every such file was a mismatch.)
#[test]
fn a_store_that_does_not_check_digests_has_its_files_proven_by_sluice() {
    let emulators = Emulators::start();
    runtime().block_on(async {
        let (store, ledger) = emulators.provision("unchecked").await;
        let dir = tempfile::tempdir().unwrap();
        let mut vars: Vec<(String, String)> = emulators
            .env("unchecked")
            .into_iter()
            .map(|(k, v)| (k.to_owned(), v))
            .collect();
        vars.push(("SLUICE_DATA_DIR".into(), dir.path().display().to_string()));
        let config = sluice::Config::from_vars(vars).unwrap();
        // Bytes, records and ledger chosen separately: the records and the
        // ledger are DynamoDB's, the bytes the unchecking store's.
        let sluice = sluice_runtime::assemble(
            &config,
            "http://127.0.0.1:8787".parse().unwrap(),
            sluice_runtime::local_keyring(&config).unwrap(),
            Arc::new(Unchecked(store)),
            Arc::new(ledger.clone()),
            Arc::new(sluice_aws::DynamoRecords::beside(&ledger)),
            Default::default(),
        );
        let data = bytes(200_000, 73);
        let mut false_bytes = data.clone();
        false_bytes[100_000] ^= 1;
        for (sent, ready) in [(data.clone(), true), (false_bytes, false)] {
            let ticket = sluice
                .uploads()
                .issue_upload(
                    "alice",
                    sluice::service::uploads::issue::UploadRequest {
                        filename: "u.bin".into(),
                        size: data.len() as u64,
                        sha256: Sha256::of(&data),
                        content_type: None,
                    },
                )
                .await
                .unwrap();
            // Where the issuer sends the short link's PUT: a URL the
            // unchecking store presigned, with the headers it signed.
            let token = ticket.upload.url.rsplit('/').next().unwrap();
            let target = Presigned {
                url: sluice.uploads().upload_location(token).await.unwrap(),
                headers: ticket
                    .upload
                    .headers
                    .iter()
                    .filter(|(k, _)| !k.eq_ignore_ascii_case("content-length"))
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect(),
            };
            let put = tokio::task::spawn_blocking(move || put(&target, &sent))
                .await
                .unwrap();
            assert_eq!(put.status, 200, "the store takes any body: {}", put.text());
            let record = sluice
                .records()
                .get("alice", &ticket.file_id)
                .await
                .unwrap()
                .unwrap();
            let stored = sluice.files().stored(&record.file).await.unwrap();
            let key = record.file.object_key();
            if ready {
                assert!(
                    matches!(stored, sluice::service::files::stored::Stored::Ready(_)),
                    "{stored:?}"
                );
                // Proven once: the record says so, for this object.
                let record = sluice
                    .records()
                    .get("alice", &ticket.file_id)
                    .await
                    .unwrap()
                    .unwrap();
                assert!(record.proof.unwrap().contains("\"proven\":true"));
                assert!(matches!(
                    sluice.files().stored(&record.file).await.unwrap(),
                    sluice::service::files::stored::Stored::Ready(_)
                ));
            } else {
                assert_eq!(stored, sluice::service::files::stored::Stored::Mismatch);
                assert!(
                    sluice.store().head(&key).await.unwrap().is_none(),
                    "deleted"
                );
            }
        }
    });
}
