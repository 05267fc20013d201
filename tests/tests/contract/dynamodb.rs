//! What the DynamoDB records must do besides the contract: read only the
//! window a record can be alive in, and admit under a lease.

use super::*;

/// One user's files are read on DynamoDB only from the window in which a
/// record can be alive (P11): an item issued longer ago than any record
/// lives is never read, so the pending caps and a page cost what the live
/// files cost, not what expired items DynamoDB's TTL has yet to delete
/// (it may take days). Seen through an item whose TTL still says alive
/// but whose issue time is older than any record can be. (Before: every
/// item was read and filtered.)
#[test]
fn dynamodb_reads_skip_items_older_than_any_record_lives() {
    let emulators = Emulators::start();
    runtime().block_on(async {
        let (_, ledger) = emulators.provision("window").await;
        let records =
            sluice_aws::DynamoRecords::beside(&ledger).living(std::time::Duration::from_secs(3600));
        let now = sluice::time::now_unix();
        records
            .put(&record("alice", (now - 7200) * 1000, now + 3600))
            .await
            .unwrap();
        let live = record("alice", now * 1000, now + 3600);
        records.put(&live).await.unwrap();
        let totals = records.pending_totals("alice", now, 100).await.unwrap();
        assert_eq!(totals.files, 1, "{totals:?}");
        let page = records.page("alice", 100, None, now).await.unwrap();
        let ids: Vec<_> = page.records.iter().map(|r| r.file.id.clone()).collect();
        assert_eq!(ids, [live.file.id]);
    });
}

/// Batches of one user admitted at the same moment never pass a cap
/// together on DynamoDB either: each is counted and recorded under the
/// user's admission lease (`admit#…`), on every replica (two stores here,
/// as two functions would be). Another user is not held up by it, and the
/// lease is given back. (Before, each counted, then wrote: eight batches of
/// 30 under a cap of 100 all passed, or most of them.)
#[test]
fn concurrent_batches_never_pass_a_cap_on_dynamodb() {
    let emulators = Emulators::start();
    runtime().block_on(async {
        let (_, ledger) = emulators.provision("admission").await;
        let (_, other) = emulators.backends("admission");
        let replicas = [
            Arc::new(sluice_aws::DynamoRecords::beside(&ledger)),
            Arc::new(sluice_aws::DynamoRecords::beside(&other)),
        ];
        let now = sluice::time::now_unix();
        let caps = PendingCaps {
            files: 100,
            bytes: 1 << 40,
            stored: None,
        };
        let mut batches = Vec::new();
        for n in 0..8 {
            let records = replicas[n % 2].clone();
            batches.push(tokio::spawn(async move {
                let batch: Vec<FileRecord> = (0..30)
                    .map(|_| record("alice", now * 1000, now + 600))
                    .collect();
                let admission = sluice::records::Admission {
                    records: &batch,
                    sent: (30, 30),
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
        assert_eq!(admitted, 3, "three batches of 30 fit under 100");
        let totals = replicas[0]
            .pending_totals("alice", now, 1000)
            .await
            .unwrap();
        assert_eq!(totals.files, 90, "nothing of a refused batch was written");
        // The lease was given back: another batch (of another user) and a
        // later one of alice's are admitted or refused at once.
        let bob: Vec<FileRecord> = (0..5)
            .map(|_| record("bob", now * 1000, now + 600))
            .collect();
        let bobs = sluice::records::Admission {
            records: &bob,
            sent: (5, 5),
        };
        assert_eq!(
            replicas[1].put_all_within(&bobs, caps, now).await.unwrap(),
            None
        );
        let key = sluice_aws::DynamoRecords::admission_key(&sluice::file::owner_hash("alice"));
        assert!(
            replicas[0].item(key).await.unwrap().is_none(),
            "alice's lease is gone"
        );
    });
}
