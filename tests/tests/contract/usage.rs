//! What a user's files take (`Usage`), after [`super::files::listed`].

use super::*;

/// What a user's files take (`Usage`): the pending files and bytes, all
/// their bytes, and a file admitted only under the caps.
pub(super) async fn counted(records: &dyn RecordStore, listed: &files::Listed) {
    let (alice, now, later) = (&listed.alice, listed.now, listed.later);
    let pending = records.pending("alice", now, 100).await.unwrap();
    let totals = records.pending_totals("alice", now, 100).await.unwrap();
    let declared: u64 = pending.iter().map(|r| r.file.size).sum();
    assert_eq!((totals.files, totals.bytes), (21, declared));
    // Counting stops at `at_most` files: a cap's check costs the cap at most.
    let some = records.pending_totals("alice", now, 5).await.unwrap();
    assert_eq!(some.files, 5);
    assert!(some.bytes < declared);

    // All of a user's bytes, pending or ready: at least what the unexpired
    // files declare (a store may count expired ones until it sweeps them).
    let size = |rs: &mut dyn Iterator<Item = &FileRecord>| rs.map(|r| r.file.size).sum::<u64>();
    let unexpired = size(&mut alice.iter().filter(|r| r.expires_at > now));
    let stored = records.stored_bytes("alice", now).await.unwrap();
    assert!(
        (unexpired..=size(&mut alice.iter())).contains(&stored),
        "{stored}"
    );
    // A cap on them admits a file that fits, then refuses the next one,
    // telling the total; ready files count as much as pending ones.
    let extra = record("alice", now * 1000 + 1, later);
    let caps = PendingCaps {
        files: 1000,
        bytes: u64::MAX,
        stored: Some(stored + extra.file.size),
    };
    assert_eq!(records.put_within(&extra, caps, now).await.unwrap(), None);
    let refused = records
        .put_within(&record("alice", now * 1000 + 2, later), caps, now)
        .await
        .unwrap()
        .expect("over the cap");
    assert_eq!(refused.stored, stored + extra.file.size);
    assert!(
        records
            .put_within(&record("bob", now * 1000 + 3, later), caps, now)
            .await
            .unwrap()
            .is_none(),
        "another user's bytes are counted apart"
    );
}
