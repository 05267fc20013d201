//! A file's record (`FileRecords`): written once, read back whole, listed
//! a page at a time, pending until ready, found by its digest, deleted,
//! and what a scan notes in it.

use super::*;

/// Alice's files as [`listed`] wrote them (one ready, one expired), and
/// the times they were written against.
pub(super) struct Listed {
    pub(super) alice: Vec<FileRecord>,
    pub(super) now: i64,
    pub(super) later: i64,
}

/// What the service relies on of a record store: a record reads back as
/// written; pages are one owner's unexpired files, newest first, each file
/// exactly once across pages however many there are, continued by the
/// cursor; marking ready is seen by reads and leaves the pending set.
pub(super) async fn listed(records: &dyn RecordStore) -> Listed {
    let now = sluice::time::now_unix();
    let later = now + 3600;
    // 23 files of alice's, one expired, two of bob's.
    let mut alice: Vec<FileRecord> = (0..23)
        // Milliseconds: several within one second, and two issued at once.
        .map(|i| {
            record(
                "alice",
                now * 1000 - 5000 + i * 300 - i64::from(i == 9) * 300,
                later,
            )
        })
        .collect();
    alice[5].expires_at = now - 1;
    for r in &alice {
        records.put(r).await.unwrap();
    }
    for i in 0..2 {
        records
            .put(&record("bob", now * 1000 - 2000 + i, later))
            .await
            .unwrap();
    }

    // A record is written once: a second under the same id is refused and
    // the first kept (two starts of one browser page at once).
    let mut twin = alice[3].clone();
    twin.file.sha256 = sluice::Sha256::of(b"another file");
    assert!(matches!(
        records.put(&twin).await,
        Err(sluice::records::RecordError::AlreadyExists)
    ));

    // A record reads back whole; another owner's id is not found.
    let got = records.get("alice", &alice[3].file.id).await.unwrap();
    assert_eq!(got.as_ref(), Some(&alice[3]));
    assert_eq!(records.get("bob", &alice[3].file.id).await.unwrap(), None);
    assert_eq!(records.get("alice", &FileId::random()).await.unwrap(), None);

    // Pages of 5: newest first, the expired one left out, nobody else's,
    // every file once.
    let mut seen = Vec::new();
    let mut after: Option<Cursor> = None;
    let mut pages = 0;
    loop {
        let page = records.page("alice", 5, after.as_ref(), now).await.unwrap();
        assert!(page.records.len() <= 5);
        seen.extend(
            page.records
                .iter()
                .map(|r| (r.created_ms, r.file.id.to_string())),
        );
        pages += 1;
        assert!(pages < 20, "the cursor must advance");
        match page.next {
            Some(next) => after = Some(next),
            None => break,
        }
    }
    // Newest first (files issued in the same millisecond in either order),
    // each unexpired file exactly once.
    assert!(seen.windows(2).all(|w| w[0].0 >= w[1].0), "{seen:?}");
    let mut got: Vec<(i64, String)> = seen.clone();
    got.sort();
    got.dedup();
    assert_eq!(got.len(), seen.len(), "no file twice");
    let mut expected: Vec<(i64, String)> = alice
        .iter()
        .filter(|r| r.expires_at > now)
        .map(|r| (r.created_ms, r.file.id.to_string()))
        .collect();
    expected.sort();
    assert_eq!(got, expected);

    // Pending: all of alice's unexpired files, up to the count asked for.
    assert_eq!(records.pending("alice", now, 100).await.unwrap().len(), 22);
    assert_eq!(records.pending("alice", now, 4).await.unwrap().len(), 4);
    records
        .mark_ready("alice", &alice[7].file.id)
        .await
        .unwrap();
    let ready = records
        .get("alice", &alice[7].file.id)
        .await
        .unwrap()
        .unwrap();
    assert!(ready.ready);
    let pending = records.pending("alice", now, 100).await.unwrap();
    assert_eq!(pending.len(), 21);
    assert!(
        pending
            .iter()
            .all(|r| r.file.id != alice[7].file.id && !r.ready)
    );
    let first = records.page("alice", 100, None, now).await.unwrap();
    assert!(first.next.is_none());
    assert_eq!(first.records.iter().filter(|r| r.ready).count(), 1);
    // Marking a file that is not there is not an error.
    records
        .mark_ready("alice", &FileId::random())
        .await
        .unwrap();
    assert_eq!(records.pending("bob", now, 100).await.unwrap().len(), 2);
    Listed { alice, now, later }
}

/// A ready file is found by its owner's digest and size, and only so.
pub(super) async fn found(records: &dyn RecordStore) {
    let now = sluice::time::now_unix();
    let later = now + 3600;
    // A ready file is found by its owner's digest and size, and only so:
    // not pending, not another size, never another owner's.
    let mut kept = record("carol", now * 1000 + 7, later);
    let (size, sha) = (kept.file.size, kept.file.sha256);
    kept.ready = true;
    records.put(&kept).await.unwrap();
    let found = records.find_ready("carol", size, sha, now).await.unwrap();
    assert_eq!(found.map(|r| r.file.id), Some(kept.file.id.clone()));
    assert_eq!(
        records
            .find_ready("carol", size + 1, sha, now)
            .await
            .unwrap(),
        None
    );
    assert_eq!(
        records.find_ready("dave", size, sha, now).await.unwrap(),
        None
    );
    assert_eq!(
        records
            .find_ready("carol", size, sha, later + 1)
            .await
            .unwrap(),
        None
    );
    let pending = record("erin", now * 1000 + 8, later);
    records.put(&pending).await.unwrap();
    let (size, sha) = (pending.file.size, pending.file.sha256);
    assert_eq!(
        records.find_ready("erin", size, sha, now).await.unwrap(),
        None
    );
    records.mark_ready("erin", &pending.file.id).await.unwrap();
    assert!(
        records
            .find_ready("erin", size, sha, now)
            .await
            .unwrap()
            .is_some()
    );
}

/// A digest to come is declared once: the first stands, found by its
/// digest once ready; a file issued with its digest keeps it; another
/// owner's or a missing record is not there.
pub(super) async fn declared(records: &dyn RecordStore) {
    let now = sluice::time::now_unix();
    let mut to_come = record("ivan", now * 1000 + 20, now + 3600);
    to_come.file.sha256 = Sha256::TO_COME;
    records.put(&to_come).await.unwrap();
    let id = to_come.file.id.clone();
    let (first, second) = (Sha256::of(b"first"), Sha256::of(b"second"));
    assert_eq!(records.declare("judy", &id, first).await.unwrap(), None);
    let declared = records.declare("ivan", &id, first).await.unwrap().unwrap();
    assert_eq!(declared.file.sha256, first);
    assert_eq!(
        declared,
        FileRecord {
            file: sluice::FileMeta {
                sha256: first,
                ..to_come.file.clone()
            },
            ..to_come.clone()
        },
        "nothing else of the record changes"
    );
    let again = records.declare("ivan", &id, second).await.unwrap().unwrap();
    assert_eq!(again.file.sha256, first, "the first declared stands");
    records.mark_ready("ivan", &id).await.unwrap();
    let found = records
        .find_ready("ivan", to_come.file.size, first, now)
        .await
        .unwrap();
    assert_eq!(found.map(|r| r.file.id), Some(id));
    let pinned = record("ivan", now * 1000 + 21, now + 3600);
    records.put(&pinned).await.unwrap();
    let kept = records
        .declare("ivan", &pinned.file.id, second)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(kept.file.sha256, pinned.file.sha256);
    assert_eq!(
        records
            .declare("ivan", &sluice::FileId::random(), first)
            .await
            .unwrap(),
        None
    );
}

/// Deleting leaves a tombstone.
pub(super) async fn deleted(records: &dyn RecordStore) {
    let now = sluice::time::now_unix();
    let later = now + 3600;
    // Deleting: only the owner's record goes, once, and leaves a tombstone
    // that keeps its id from being written again; the owner's pending files
    // and bytes no longer count it; another owner's delete writes nothing.
    let gone = record("frank", now * 1000 + 9, later);
    records.put(&gone).await.unwrap();
    let before = records.stored_bytes("frank", now).await.unwrap();
    assert_eq!(records.delete("grace", &gone.file.id).await.unwrap(), None);
    assert!(records.find(&gone.file.id).await.unwrap().is_some());
    assert_eq!(records.deleted(&gone.file.id).await.unwrap(), None);
    let deleted = records.delete("frank", &gone.file.id).await.unwrap();
    assert_eq!(deleted.map(|r| r.file), Some(gone.file.clone()));
    assert_eq!(records.find(&gone.file.id).await.unwrap(), None);
    assert_eq!(records.get("frank", &gone.file.id).await.unwrap(), None);
    assert_eq!(
        records
            .deleted(&gone.file.id)
            .await
            .unwrap()
            .map(|r| r.file),
        Some(gone.file.clone())
    );
    assert_eq!(records.delete("frank", &gone.file.id).await.unwrap(), None);
    assert!(matches!(
        records.put(&gone).await,
        Err(sluice::records::RecordError::AlreadyExists)
    ));
    assert_eq!(records.find(&gone.file.id).await.unwrap(), None, "not back");
    assert_eq!(records.pending("frank", now, 10).await.unwrap().len(), 0);
    assert_eq!(
        records.stored_bytes("frank", now).await.unwrap(),
        before - gone.file.size
    );
    assert!(
        records
            .page("frank", 10, None, now)
            .await
            .unwrap()
            .records
            .is_empty()
    );
    assert_eq!(records.deleted(&FileId::random()).await.unwrap(), None);
}

/// What a scan notes in a file's record.
pub(super) async fn scan_notes(records: &dyn RecordStore) {
    let now = sluice::time::now_unix();
    let later = now + 3600;
    // A scan's notes: the first (bytes stored, no verdict) only where none
    // is kept, so the time the deadline runs from stands; a verdict over
    // it; a refused file is neither pending nor ready, and is still listed
    // with its verdict; a ready file's record is not written.
    use sluice::records::{ScanNote, Verdict};
    let scanned = record("heidi", now * 1000 + 10, later);
    records.put(&scanned).await.unwrap();
    let first = ScanNote {
        since: now - 5,
        verdict: None,
        detected: None,
    };
    records
        .note_scan("heidi", &scanned.file.id, &first)
        .await
        .unwrap();
    let again = ScanNote {
        since: now,
        verdict: None,
        detected: None,
    };
    records
        .note_scan("heidi", &scanned.file.id, &again)
        .await
        .unwrap();
    let kept_note = |r: Option<FileRecord>| r.and_then(|r| r.scan);
    assert_eq!(
        kept_note(records.get("heidi", &scanned.file.id).await.unwrap()),
        Some(first.clone()),
        "the first note stands"
    );
    records
        .note_scan("ivan", &scanned.file.id, &again)
        .await
        .unwrap();
    let infected = ScanNote {
        since: now,
        verdict: Some(Verdict::Infected {
            signature: "Eicar-Test-Signature".into(),
            by: "ClamAV 1.4.6".into(),
        }),
        // The type the bytes showed is kept beside the verdict.
        detected: Some("application/x-executable".into()),
    };
    assert_eq!(records.pending("heidi", now, 10).await.unwrap().len(), 1);
    records
        .note_scan("heidi", &scanned.file.id, &infected)
        .await
        .unwrap();
    let found = records
        .get("heidi", &scanned.file.id)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(found.scan, Some(infected.clone()));
    assert!(!found.ready, "a refused file is not ready");
    assert_eq!(
        records.pending("heidi", now, 10).await.unwrap().len(),
        0,
        "a refused file holds no place among the pending"
    );
    assert_eq!(
        records.page("heidi", 10, None, now).await.unwrap().records[0].scan,
        Some(infected)
    );
    records.mark_ready("heidi", &scanned.file.id).await.unwrap();
    assert!(
        !records
            .get("heidi", &scanned.file.id)
            .await
            .unwrap()
            .unwrap()
            .ready,
        "a refused file is never marked ready"
    );
    let clean = record("heidi", now * 1000 + 11, later);
    records.put(&clean).await.unwrap();
    let passed = ScanNote {
        since: now,
        verdict: Some(Verdict::Clean {
            by: "ClamAV 1.4.6".into(),
        }),
        detected: None,
    };
    records
        .note_scan("heidi", &clean.file.id, &passed)
        .await
        .unwrap();
    records.mark_ready("heidi", &clean.file.id).await.unwrap();
    let found = records.get("heidi", &clean.file.id).await.unwrap().unwrap();
    assert!(found.ready);
    assert_eq!(found.scan, Some(passed));
    records
        .note_scan("heidi", &clean.file.id, &first)
        .await
        .unwrap();
    assert!(
        records
            .get("heidi", &clean.file.id)
            .await
            .unwrap()
            .unwrap()
            .scan
            .unwrap()
            .verdict
            .is_some(),
        "a ready file's note is not written over"
    );
}
