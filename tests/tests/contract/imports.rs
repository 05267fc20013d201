//! Where an import stands, and a user's imports under way (`ImportRecords`).

use super::*;

/// An import's record, and the turns of imports under way.
pub(super) async fn contract(records: &dyn RecordStore) {
    let now = sluice::time::now_unix();
    // An import's record: written when it begins, written over when it
    // ends, read back whole; another id has none.
    let id = FileId::random();
    let mut import = sluice::records::ImportRecord {
        id: Some(id.clone()),
        owner: "alice".into(),
        source: "https://files.example.com".into(),
        state: "pending".into(),
        reason: None,
        noted_at: now,
        expires_at: now + 3600,
    };
    records.put_import(&import).await.unwrap();
    assert_eq!(records.get_import(&id).await.unwrap(), Some(import.clone()));
    import.state = "rejected".into();
    import.reason = Some("files.example.com answered HTTP 404".into());
    records.put_import(&import).await.unwrap();
    assert_eq!(records.get_import(&id).await.unwrap(), Some(import));
    assert_eq!(records.get_import(&FileId::random()).await.unwrap(), None);

    // Imports under way: a user's turns, shared by every replica; all
    // taken, the next is refused; one given back (by its holder alone) is
    // taken again; one whose holder died lapses and is taken over.
    let until = sluice::time::now_unix() + 600;
    let mut turns = Vec::new();
    for i in 0..4 {
        let turn = records
            .take_import_turn("alice", &format!("i{i}"), 4, until)
            .await
            .unwrap();
        turns.push(turn.expect("a turn is free"));
    }
    turns.sort();
    assert_eq!(turns, [0, 1, 2, 3]);
    assert_eq!(
        records
            .take_import_turn("alice", "i4", 4, until)
            .await
            .unwrap(),
        None,
        "the fifth import under way is refused"
    );
    assert!(
        records
            .take_import_turn("bob", "j0", 4, until)
            .await
            .unwrap()
            .is_some(),
        "another user's turns are their own"
    );
    records
        .give_import_turn("alice", 2, "not-its-holder")
        .await
        .unwrap();
    assert_eq!(
        records
            .take_import_turn("alice", "i4", 4, until)
            .await
            .unwrap(),
        None
    );
    records.give_import_turn("alice", 2, "i2").await.unwrap();
    assert_eq!(
        records
            .take_import_turn("alice", "i4", 4, until)
            .await
            .unwrap(),
        Some(2)
    );
    let lapsed = sluice::time::now_unix() - 1;
    assert_eq!(
        records
            .take_import_turn("carol", "k0", 1, lapsed)
            .await
            .unwrap(),
        Some(0)
    );
    assert_eq!(
        records
            .take_import_turn("carol", "k1", 1, until)
            .await
            .unwrap(),
        Some(0),
        "a turn past its time is taken over"
    );
}
