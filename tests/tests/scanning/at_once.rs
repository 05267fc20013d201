//! `SLUICE_SCANS_AT_ONCE` bounds the scans one server runs: six files
//! stored at once are scanned two at a time. The scanner here is a stand-in
//! that counts the scans under way (a trait faked to observe the bound;
//! clamd's own scans are the tests above).

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use sluice::FileMeta;
use sluice::scan::{Finding, ScanError, Scanner};
use sluice::service::files::FileState;
use sluice::store::ObjectStore;

use super::*;

#[derive(Debug, Default)]
struct Counting {
    now: AtomicUsize,
    most: AtomicUsize,
}

#[async_trait::async_trait]
impl Scanner for Counting {
    fn reads_bytes(&self) -> bool {
        true
    }

    async fn scan(&self, _: &FileMeta, _: &dyn ObjectStore) -> Result<Finding, ScanError> {
        let now = self.now.fetch_add(1, Ordering::SeqCst) + 1;
        self.most.fetch_max(now, Ordering::SeqCst);
        tokio::time::sleep(Duration::from_millis(300)).await;
        self.now.fetch_sub(1, Ordering::SeqCst);
        Ok(Finding::Clean {
            by: "counting".into(),
        })
    }
}

#[test]
fn six_files_are_scanned_two_at_a_time() {
    let dir = tempfile::tempdir().unwrap();
    let counting = Arc::new(Counting::default());
    let sluice = scanning_in_process(
        dir.path(),
        counting.clone(),
        &[("SLUICE_SCANS_AT_ONCE", "2")],
        |_| {},
    );
    crate::contract::runtime().block_on(async {
        for n in 0..6u8 {
            store_small(&sluice, "alice", n).await;
        }
        let started = Instant::now();
        loop {
            let page = sluice
                .files()
                .list_files("alice", None, None)
                .await
                .unwrap();
            if page.files.iter().all(|f| f.state == FileState::Ready) {
                break;
            }
            assert!(started.elapsed() < Duration::from_secs(30), "not all ready");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    });
    assert_eq!(
        counting.most.load(Ordering::SeqCst),
        2,
        "two at a time, at most"
    );
}

/// A file of 100 bytes of `n` stored for `owner` (its scan begun).
async fn store_small(sluice: &sluice::Sluice, owner: &str, n: u8) -> FileMeta {
    let data = vec![n; 100];
    let small = sluice
        .uploads()
        .upload_small(
            owner,
            format!("{n}.bin"),
            data.clone(),
            sluice::Sha256::of(&data),
            None,
        )
        .await
        .unwrap();
    sluice
        .files()
        .find_file(owner, &small.file_id)
        .await
        .unwrap()
}

/// A scanner that takes a second a file and notes whose it scanned.
#[derive(Debug, Default)]
struct Slow {
    order: std::sync::Mutex<Vec<String>>,
}

#[async_trait::async_trait]
impl Scanner for Slow {
    fn reads_bytes(&self) -> bool {
        true
    }

    async fn scan(&self, file: &FileMeta, _: &dyn ObjectStore) -> Result<Finding, ScanError> {
        self.order.lock().unwrap().push(file.owner.clone());
        tokio::time::sleep(Duration::from_secs(1)).await;
        Ok(Finding::Clean { by: "slow".into() })
    }
}

/// The turns go round the owners, and the deadline runs from a file's
/// first scan: one user's four slow files, stored first, neither hold
/// another user's file behind them nor push it (or their own) past a
/// deadline of two seconds, however often the files are asked for.
#[test]
fn one_users_many_files_never_push_anothers_past_the_deadline() {
    let dir = tempfile::tempdir().unwrap();
    let slow = Arc::new(Slow::default());
    let sluice = scanning_in_process(
        dir.path(),
        slow.clone(),
        &[
            ("SLUICE_SCANS_AT_ONCE", "1"),
            ("SLUICE_SCAN_DEADLINE_SECS", "2"),
        ],
        |_| {},
    );
    crate::contract::runtime().block_on(async {
        let mut files = Vec::new();
        for (n, owner) in ["alice", "alice", "alice", "alice", "bob"]
            .iter()
            .enumerate()
        {
            files.push(store_small(&sluice, owner, n as u8).await);
        }
        let started = Instant::now();
        loop {
            // Asked for as a download would: the gate's own look.
            let mut waiting = 0;
            for file in &files {
                match sluice.files().stored(file).await.unwrap() {
                    sluice::service::files::stored::Stored::Ready(_) => {}
                    sluice::service::files::stored::Stored::Scanning => waiting += 1,
                    other => panic!("{}'s file {other:?}", file.owner),
                }
            }
            if waiting == 0 {
                break;
            }
            assert!(started.elapsed() < Duration::from_secs(30), "not all ready");
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    });
    let order = slow.order.lock().unwrap().clone();
    assert_eq!(order.len(), 5, "{order:?}");
    assert_eq!(order[1], "bob", "bob's turn came second: {order:?}");
}
