//! GuardDuty Malware Protection for S3, as sluice reads it: the real
//! `sluice_aws::GuardDutyTags` reading `GuardDutyMalwareScanStatus` through
//! aws-sdk-s3 from moto's S3 (which keeps object tags; s3s-fs 0.14.1 has
//! none), behind the gate of a sluice in this process. What the emulators
//! do not do, and how the test stands in:
//! - nothing scans: the test tags each object as GuardDuty does once its
//!   scan ends (`NO_THREATS_FOUND`, `THREATS_FOUND`, `UNSUPPORTED`);
//! - moto keeps no SHA-256 checksum of an object (it answers none to a HEAD
//!   asking for it), so sluice's S3 store could never vouch for its
//!   objects: the bytes are in the data directory, and the test puts each
//!   file's object in moto's bucket under the same key, where GuardDuty
//!   would find it.

use std::sync::Arc;

use sluice::service::files::FileState;
use sluice::{Error, FileMeta};

use super::*;

const BUCKET: &str = "scanned";

/// Puts `file`'s object in the bucket, as GuardDuty would find it, and
/// tags it with `status` unless `None`.
async fn in_bucket(s3: &aws_sdk_s3::Client, file: &FileMeta, data: &[u8], status: Option<&str>) {
    let key = file.object_key();
    s3.put_object()
        .bucket(BUCKET)
        .key(key.as_str())
        .body(data.to_vec().into())
        .send()
        .await
        .unwrap();
    if let Some(status) = status {
        tag(s3, file, status).await;
    }
}

/// Tags `file`'s object as GuardDuty does when its scan ends.
async fn tag(s3: &aws_sdk_s3::Client, file: &FileMeta, status: &str) {
    let tagging = aws_sdk_s3::types::Tagging::builder()
        .tag_set(
            aws_sdk_s3::types::Tag::builder()
                .key(sluice_aws::SCAN_STATUS_TAG)
                .value(status)
                .build()
                .unwrap(),
        )
        .build()
        .unwrap();
    s3.put_object_tagging()
        .bucket(BUCKET)
        .key(file.object_key().as_str())
        .tagging(tagging)
        .send()
        .await
        .unwrap();
}

/// A sluice over the local backends in `dir` whose gate reads
/// GuardDuty's tags from `bucket`.
fn sluice_reading_tags(
    dir: &Path,
    bucket: &sluice_aws::S3Store,
    allow_unscanned: bool,
) -> sluice::Sluice {
    scanning_in_process(
        dir,
        Arc::new(sluice_aws::GuardDutyTags::new(bucket.clone())),
        &[],
        |scan| scan.allow_unscanned = allow_unscanned,
    )
}

async fn stored(sluice: &sluice::Sluice, name: &str, data: &[u8]) -> FileMeta {
    let small = sluice
        .uploads()
        .upload_small(
            "alice",
            name.into(),
            data.to_vec(),
            sluice::Sha256::of(data),
            None,
        )
        .await
        .unwrap();
    sluice
        .files()
        .find_file("alice", &small.file_id)
        .await
        .unwrap()
}

async fn state(sluice: &sluice::Sluice, file: &FileMeta) -> (FileState, Option<String>) {
    let page = sluice
        .files()
        .list_files("alice", None, None)
        .await
        .unwrap();
    let entry = page
        .files
        .into_iter()
        .find(|f| f.file_id == file.id.to_string())
        .unwrap();
    (entry.state, entry.reason)
}

#[test]
fn guarddutys_tag_decides_whether_a_file_is_used() {
    let (mut moto, port) = crate::util::start_moto();
    let bucket = sluice::config::S3Config {
        bucket: BUCKET.into(),
        endpoint: Some(format!("http://127.0.0.1:{port}").parse().unwrap()),
    };
    let runtime = crate::contract::runtime();
    runtime.block_on(async {
        let tags = sluice_aws::S3Store::new(&sluice_testkit::emulators::sdk_config(), &bucket);
        let s3 = tags.client().clone();
        s3.create_bucket().bucket(BUCKET).send().await.unwrap();
        let dir = tempfile::tempdir().unwrap();
        let sluice = sluice_reading_tags(dir.path(), &tags, false);

        // Not tagged yet: scanning, and no link is issued.
        let clean = bytes(9000, 31);
        let file = stored(&sluice, "clean.bin", &clean).await;
        in_bucket(&s3, &file, &clean, None).await;
        assert_eq!(state(&sluice, &file).await.0, FileState::Scanning);
        assert!(matches!(
            sluice.downloads().issue_download("alice", &file).await,
            Err(Error::Scanning)
        ));
        // No threat found: ready, and a link is issued.
        tag(&s3, &file, "NO_THREATS_FOUND").await;
        assert_eq!(state(&sluice, &file).await.0, FileState::Ready);
        sluice
            .downloads()
            .issue_download("alice", &file)
            .await
            .unwrap();

        // A threat: rejected, its bytes deleted, no link ever.
        let bad = bytes(7000, 32);
        let file = stored(&sluice, "bad.bin", &bad).await;
        in_bucket(&s3, &file, &bad, Some("THREATS_FOUND")).await;
        let (got, reason) = state(&sluice, &file).await;
        assert_eq!(got, FileState::Rejected);
        assert!(reason.unwrap().starts_with("malware: "));
        use sluice::store::ObjectStore as _;
        let local = sluice_runtime::local_store(
            &sluice::Config::from_vars([(
                "SLUICE_DATA_DIR".to_owned(),
                dir.path().display().to_string(),
            )])
            .unwrap(),
        )
        .unwrap();
        assert!(
            local.head(&file.object_key()).await.unwrap().is_none(),
            "its bytes are gone"
        );
        assert!(matches!(
            sluice.downloads().issue_download("alice", &file).await,
            Err(Error::ScanRejected(_))
        ));

        // Not scanned (over GuardDuty's size limit, say): refused by
        // default …
        let big = bytes(8000, 33);
        let file = stored(&sluice, "big.bin", &big).await;
        in_bucket(&s3, &file, &big, Some("UNSUPPORTED")).await;
        assert_eq!(
            state(&sluice, &file).await,
            (
                FileState::Rejected,
                Some("unscanned: GuardDuty did not scan it (UNSUPPORTED)".into())
            )
        );
        // … and let through where the operator allows it.
        let allowing_dir = tempfile::tempdir().unwrap();
        let allowing = sluice_reading_tags(allowing_dir.path(), &tags, true);
        let big = bytes(8001, 34);
        let file = stored(&allowing, "big.bin", &big).await;
        in_bucket(&s3, &file, &big, Some("UNSUPPORTED")).await;
        assert_eq!(state(&allowing, &file).await.0, FileState::Ready);
        allowing
            .downloads()
            .issue_download("alice", &file)
            .await
            .unwrap();
    });
    let _ = moto.kill();
    let _ = moto.wait();
}
