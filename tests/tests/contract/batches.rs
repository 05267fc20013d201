//! Files issued together (`BatchRecords`).

use super::*;

/// A batch reads back as written, once.
pub(super) async fn contract(records: &dyn RecordStore) {
    let now = sluice::time::now_unix();
    let later = now + 3600;
    let kept = record("carol", now * 1000 + 7, later);
    let batch = sluice::records::Batch {
        id: Some(FileId::random()),
        owner: "carol".into(),
        expires_at: later,
        files: vec![sluice::records::BatchFile {
            id: kept.file.id.to_string(),
            path: "a/b.txt".into(),
            size: kept.file.size,
            sha256: kept.file.sha256,
        }],
    };
    records.put_batch(&batch).await.unwrap();
    let id = batch.id.clone().unwrap();
    assert_eq!(records.get_batch(&id).await.unwrap(), Some(batch));
    assert_eq!(records.get_batch(&FileId::random()).await.unwrap(), None);
}
