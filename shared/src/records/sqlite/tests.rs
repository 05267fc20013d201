//! The SQLite records' own tests (the contract is `tests/tests/contract/`).

use super::*;
use crate::records::{Admission, FileRecords, PendingCaps, Usage};

/// A new records file, and a connection of its own to it.
fn opened() -> (tempfile::TempDir, Connection) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("files.sqlite3");
    SqliteRecords::open(&path).unwrap();
    let c = Connection::open(&path).unwrap();
    (dir, c)
}

/// The steps SQLite takes to run the count of pending files and the
/// list of the oldest ones for an owner with `ready` ready files and 3
/// pending ones.
fn steps_with(ready: usize) -> (i64, i64) {
    let (_dir, c) = opened();
    let now = crate::time::now_unix();
    for i in 0..ready + 3 {
        let mut r = record("alice", 10, now);
        r.ready = i >= 3;
        insert(&c, &r).unwrap();
    }
    let owner = owner_hash("alice");
    let steps = |sql: &str, expect: usize| {
        let mut stmt = c.prepare(sql).unwrap();
        let mut rows = stmt.query(params![owner, now, 100]).unwrap();
        let mut n = 0;
        while let Some(row) = rows.next().unwrap() {
            n += if sql == TOTALS {
                row.get::<_, i64>(0).unwrap() as usize
            } else {
                1
            };
        }
        drop(rows);
        assert_eq!(n, expect);
        i64::from(stmt.get_status(rusqlite::StatementStatus::VmStep))
    };
    (steps(TOTALS, 3), steps(PENDING, 3))
}

/// A late page of a long listing costs what the first one does: the
/// query seeks to its cursor instead of walking the pages before it.
#[test]
fn a_late_page_does_not_walk_the_earlier_ones() {
    let (_dir, c) = opened();
    let now = crate::time::now_unix();
    let mut oldest = Vec::new();
    for i in 0..3000 {
        let mut r = record("alice", 10, now);
        r.created_ms += i;
        insert(&c, &r).unwrap();
        if i == 50 {
            oldest = vec![r];
        }
    }
    let owner = owner_hash("alice");
    let steps = |created: i64, id: String| {
        let mut stmt = c.prepare(PAGE).unwrap();
        let n = stmt
            .query_map(params![owner, now, created, id, 51], |_| Ok(()))
            .unwrap()
            .count();
        (n, stmt.get_status(rusqlite::StatementStatus::VmStep))
    };
    let (first, first_steps) = steps(i64::MAX, String::new());
    let last = &oldest[0];
    let (late, late_steps) = steps(last.created_ms, last.file.id.to_string());
    assert_eq!((first, late), (51, 50));
    assert!(
        late_steps <= first_steps + 20,
        "{first_steps} -> {late_steps} steps"
    );
}

/// A worker's look for deliveries due walks its endpoint's index in
/// order and stops at the limit: no sort of the whole backlog.
#[test]
fn due_deliveries_are_read_in_the_index_order() {
    let (_dir, c) = opened();
    let plan = crate::sqlite::plan(&c, outbox::DUE);
    assert!(plan.contains("INDEX deliveries_due"), "{plan}");
    assert!(!plan.contains("TEMP B-TREE"), "{plan}");
}

/// The minute's sweep reads only expired records.
#[test]
fn the_sweep_finds_expired_records_by_index() {
    let (_dir, c) = opened();
    let plan = crate::sqlite::plan(&c, SWEEP);
    assert!(plan.contains("INDEX files_by_expiry"), "{plan}");
}

/// Counting the pending files (on every issue) and listing them read
/// the pending files only, however many ready ones the owner has: the
/// count once walked every record of the owner.
#[test]
fn pending_queries_do_not_read_ready_files() {
    let (totals, pending) = steps_with(0);
    let (totals_many, pending_many) = steps_with(3000);
    assert!(totals_many <= totals + 5, "{totals} -> {totals_many} steps");
    assert!(
        pending_many <= pending + 5,
        "{pending} -> {pending_many} steps"
    );
}
use crate::file::FileMeta;
use crate::sha::Sha256;

fn record(owner: &str, size: u64, now: i64) -> FileRecord {
    FileRecord {
        file: FileMeta {
            id: FileId::random(),
            owner: owner.into(),
            filename: "a.bin".into(),
            content_type: "application/octet-stream".into(),
            size,
            sha256: Sha256::of(b"a"),
        },
        created_ms: now * 1000,
        expires_at: now + 600,
        ready: false,
        proof: None,
        scan: None,
        trace: None,
        copy: false,
    }
}

/// The sweep writes a file.expired event for each record it removes, in
/// its own transaction; each endpoint that takes the type gets one
/// delivery, leased while it is out, retried when due, and the event
/// leaves the outbox once every delivery of it has ended.
#[tokio::test]
async fn the_sweep_reports_each_expired_file_once_to_each_endpoint() {
    let dir = tempfile::tempdir().unwrap();
    let records = SqliteRecords::open(&dir.path().join("files.sqlite3"))
        .unwrap()
        .with_events();
    let now = crate::time::now_unix();
    let mut gone = record("alice", 10, now);
    gone.expires_at = now - 5;
    let kept = record("alice", 10, now);
    records.put(&gone).await.unwrap();
    records.put(&kept).await.unwrap();
    assert_eq!(records.sweep(now).unwrap(), 1);

    let subs = [
        Subscriber {
            name: "all".into(),
            events: None,
        },
        Subscriber {
            name: "ready-only".into(),
            events: Some(vec![EventType::Ready]),
        },
    ];
    let ms = now * 1000;
    let due = records.due(&subs[0], ms, ms + 30_000, 10).await.unwrap();
    assert_eq!(due.len(), 1, "{due:?}");
    let body: serde_json::Value = serde_json::from_str(&due[0].body).unwrap();
    assert_eq!(body["type"], "file.expired");
    assert_eq!(body["data"]["file_id"], gone.file.id.to_string());
    assert!(
        records
            .due(&subs[1], ms, ms + 30_000, 10)
            .await
            .unwrap()
            .is_empty()
    );
    // Leased: not due again until the lease ends.
    assert!(
        records
            .due(&subs[0], ms + 1, ms + 30_000, 10)
            .await
            .unwrap()
            .is_empty()
    );
    records
        .retry(due[0].seq, "all", 1, ms + 5_000)
        .await
        .unwrap();
    let again = records
        .due(&subs[0], ms + 5_000, ms + 35_000, 10)
        .await
        .unwrap();
    assert_eq!(
        (again.len(), again[0].attempts, &again[0].event_id),
        (1, 1, &due[0].event_id)
    );
    records.finish(again[0].seq, "all").await.unwrap();
    assert!(
        records
            .due(&subs[0], ms + 99_000, ms + 99_000, 10)
            .await
            .unwrap()
            .is_empty()
    );
    records.sweep(now).unwrap();
    let c = Connection::open(dir.path().join("files.sqlite3")).unwrap();
    let count = |sql: &str| -> i64 { c.query_row(sql, [], |r| r.get(0)).unwrap() };
    assert_eq!(
        count("SELECT COUNT(*) FROM outbox"),
        0,
        "a delivered event stays in the outbox"
    );
    // An endpoint no longer configured is forgotten: it holds nothing back.
    records.retain(&["all".to_owned()]).await.unwrap();
    assert_eq!(
        count("SELECT COUNT(*) FROM fanned_out WHERE endpoint <> 'all'"),
        0
    );
    assert_eq!(
        count("SELECT COUNT(*) FROM fanned_out WHERE endpoint = 'all'"),
        1
    );
}

/// Forty issues at once against a cap of five files: five recorded,
/// and the others told the totals that refused them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_issues_cannot_pass_a_cap_together() {
    let dir = tempfile::tempdir().unwrap();
    let records = SqliteRecords::open(&dir.path().join("files.sqlite3")).unwrap();
    let now = crate::time::now_unix();
    let caps = PendingCaps {
        files: 5,
        bytes: 1 << 30,
        stored: None,
    };
    let mut issues = Vec::new();
    for _ in 0..40 {
        let records = records.clone();
        issues.push(tokio::spawn(async move {
            records
                .put_within(&record("alice", 10, now), caps, now)
                .await
        }));
    }
    let mut admitted = 0;
    for issue in issues {
        match issue.await.unwrap().unwrap() {
            None => admitted += 1,
            Some(refused) => assert_eq!(
                refused,
                Pending {
                    files: 5,
                    bytes: 50,
                    stored: 0,
                }
            ),
        }
    }
    assert_eq!(admitted, 5);
    let totals = records.pending_totals("alice", now, 100).await.unwrap();
    assert_eq!(
        totals,
        Pending {
            files: 5,
            bytes: 50,
            stored: 0,
        }
    );
    // The bytes cap too, and another owner is counted apart.
    let big = record("bob", 600, now);
    let caps = PendingCaps {
        files: 5,
        bytes: 1000,
        stored: None,
    };
    assert_eq!(records.put_within(&big, caps, now).await.unwrap(), None);
    let refused = records
        .put_within(&record("bob", 401, now), caps, now)
        .await;
    assert_eq!(
        refused.unwrap(),
        Some(Pending {
            files: 1,
            bytes: 600,
            stored: 0,
        })
    );
}

/// The cap on all of a user's bytes counts ready files too, holds under
/// concurrent issues, and frees what the sweep deletes; the running
/// figure is rebuilt from the records when the file is opened again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn all_of_a_users_bytes_are_capped_and_freed_as_they_expire() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("files.sqlite3");
    let records = SqliteRecords::open(&path).unwrap();
    let now = crate::time::now_unix();
    let caps = PendingCaps {
        files: 1000,
        bytes: 1 << 40,
        stored: Some(1000),
    };
    // An old file, uploaded, soon swept.
    let mut old = record("alice", 400, now);
    old.expires_at = now - 10;
    old.ready = true;
    records.put(&old).await.unwrap();
    let mut issues = Vec::new();
    for _ in 0..20 {
        let records = records.clone();
        issues.push(tokio::spawn(async move {
            let mut r = record("alice", 100, now);
            r.ready = true;
            records.put_within(&r, caps, now).await
        }));
    }
    let mut admitted = 0;
    for issue in issues {
        if issue.await.unwrap().unwrap().is_none() {
            admitted += 1;
        }
    }
    assert_eq!(admitted, 6, "400 + 6 x 100 fill 1000");
    assert_eq!(records.stored_bytes("alice", now).await.unwrap(), 1000);
    assert_eq!(records.stored_bytes("bob", now).await.unwrap(), 0);
    let refused = records
        .put_within(&record("alice", 1, now), caps, now)
        .await
        .unwrap();
    assert_eq!(refused.map(|p| p.stored), Some(1000));
    assert_eq!(records.sweep(now).unwrap(), 1);
    assert_eq!(records.stored_bytes("alice", now).await.unwrap(), 600);
    assert_eq!(
        records
            .put_within(&record("alice", 400, now), caps, now)
            .await
            .unwrap(),
        None
    );
    drop(records);
    // Skewed on purpose: the next open counts again from the records.
    let c = Connection::open(&path).unwrap();
    c.execute("UPDATE usage SET bytes = 5", []).unwrap();
    drop(c);
    let records = SqliteRecords::open(&path).unwrap();
    assert_eq!(records.stored_bytes("alice", now).await.unwrap(), 1000);
}

/// Batches admitted at the same moment never pass a cap together: the
/// count and the writes are one step of the single writer. (Before,
/// the service counted and then wrote, and two batches of 60 both
/// passed a cap of 100.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_batches_never_pass_a_cap() {
    let dir = tempfile::tempdir().unwrap();
    let records = SqliteRecords::open(&dir.path().join("files.sqlite3")).unwrap();
    let now = crate::time::now_unix();
    let caps = PendingCaps {
        files: 100,
        bytes: 1 << 40,
        stored: Some(10_000),
    };
    let mut batches = Vec::new();
    for _ in 0..8 {
        let records = records.clone();
        batches.push(tokio::spawn(async move {
            let batch: Vec<FileRecord> = (0..30).map(|_| record("alice", 10, now)).collect();
            let admission = Admission {
                records: &batch,
                sent: (30, 300),
            };
            records.put_all_within(&admission, caps, now).await
        }));
    }
    let mut admitted = 0;
    for batch in batches {
        if batch.await.unwrap().unwrap().is_none() {
            admitted += 1;
        }
    }
    assert_eq!(
        admitted, 3,
        "three batches of 30 fit under 100 pending files"
    );
    let pending = records.pending_totals("alice", now, 1000).await.unwrap();
    assert_eq!(pending.files, 90, "nothing of a refused batch was written");
    // The cap on all of a user's bytes counts copies too.
    let copies: Vec<FileRecord> = (0..2).map(|_| record("alice", 5_000, now)).collect();
    let refused = records
        .put_all_within(
            &Admission {
                records: &copies,
                sent: (0, 10_000),
            },
            caps,
            now,
        )
        .await
        .unwrap();
    assert_eq!(refused.map(|p| p.stored), Some(900));
}

#[tokio::test]
async fn live_names_the_ids_that_have_a_record() {
    let dir = tempfile::tempdir().unwrap();
    let records = SqliteRecords::open(&dir.path().join("files.sqlite3")).unwrap();
    let now = crate::time::now_unix();
    let kept = record("alice", 1, now);
    records.put(&kept).await.unwrap();
    let gone = FileId::random().to_string();
    let ids = [kept.file.id.to_string(), gone, "not an id".to_owned()];
    let live = records.live(&ids).unwrap();
    assert_eq!(
        live.into_iter().collect::<Vec<_>>(),
        [kept.file.id.to_string()]
    );
}
