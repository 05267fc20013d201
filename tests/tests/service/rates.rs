//! Each kind of request has a per-user rate of its own; a page's start rate.

use super::actions::with_echo_actions;
use super::*;

/// Each kind of request has a per-user rate of its own, and a refused
/// request (bad input) takes nothing from it.
#[tokio::test]
async fn each_kind_of_request_has_a_per_user_rate_of_its_own() {
    let dir = tempfile::tempdir().unwrap();
    let sluice = with_echo_actions(
        dir.path(),
        &[
            ("SLUICE_ISSUE_RATE_PER_MINUTE", "1"),
            ("SLUICE_ISSUE_BURST", "2"),
            ("SLUICE_LINK_RATE_PER_MINUTE", "1"),
            ("SLUICE_LINK_BURST", "2"),
            ("SLUICE_RESOLVE_RATE_PER_MINUTE", "1"),
            ("SLUICE_RESOLVE_BURST", "1"),
            ("SLUICE_ACTION_RATE_PER_MINUTE", "1"),
            ("SLUICE_ACTION_BURST", "1"),
        ],
    )
    .await;
    let limited = |r: &Result<_, Error>, what: &str| match r {
        Err(Error::Limited {
            message,
            retry_after,
        }) => {
            assert!(message.contains(what), "{message}");
            assert!(*retry_after > 0);
        }
        other => panic!("expected {what:?}: {:?}", other.as_ref().err()),
    };
    // Bad requests first: they take nothing from the issuing rate.
    for _ in 0..3 {
        let mut bad = request(b"x");
        bad.content_type = Some("not a type".into());
        assert!(matches!(
            sluice.uploads().issue_upload("alice", bad).await,
            Err(Error::Invalid(_))
        ));
    }
    let small = small(&sluice, "alice", "a.txt", b"hi").await;
    sluice
        .uploads()
        .issue_upload("alice", request(b"x"))
        .await
        .unwrap();
    limited(
        &sluice
            .uploads()
            .issue_upload("alice", request(b"x"))
            .await
            .map(drop),
        "too many files requested",
    );

    let file = sluice
        .files()
        .find_file("alice", &small.file_id)
        .await
        .unwrap();
    for _ in 0..2 {
        sluice
            .downloads()
            .issue_download("alice", &file)
            .await
            .unwrap();
    }
    limited(
        &sluice
            .downloads()
            .issue_download("alice", &file)
            .await
            .map(drop),
        "too many download links",
    );
    assert!(
        sluice
            .downloads()
            .issue_download("bob", &file)
            .await
            .is_ok(),
        "another user's bucket"
    );

    let alice = caller("alice", &[Scope::FilesRead, Scope::ActionsExecute]);
    sluice
        .downloads()
        .resolve_handle(&alice, &small.handle)
        .await
        .unwrap();
    limited(
        &sluice
            .downloads()
            .resolve_handle(&alice, &small.handle)
            .await
            .map(drop),
        "too many handles resolved",
    );

    let run = |name: &'static str| {
        sluice
            .actions()
            .execute_action(&alice, name, serde_json::json!({"doc": small.handle}))
    };
    run("inline").await.unwrap();
    limited(&run("linked").await.map(drop), "too many actions run");
}

/// Whoever holds a page's URL can start it only so often, and cannot drain
/// its owner's issuing rate with starts, valid or not.
#[tokio::test]
async fn a_browser_page_has_a_start_rate_of_its_own() {
    use sluice::service::pages::{BrowserStart, BrowserUploadRequest};
    let local = Local::with(&[
        ("SLUICE_PAGE_START_RATE_PER_MINUTE", "1"),
        ("SLUICE_PAGE_START_BURST", "2"),
        ("SLUICE_ISSUE_RATE_PER_MINUTE", "1"),
        ("SLUICE_ISSUE_BURST", "2"),
    ]);
    let page = |_: ()| {
        let url = local
            .sluice
            .pages()
            .request_browser_upload("alice", BrowserUploadRequest::default())
            .unwrap()
            .page_url;
        let token = url.rsplit('/').next().unwrap();
        local.sluice.pages().page_for_start(token).unwrap()
    };
    let start = |name: &str| BrowserStart {
        filename: name.into(),
        size: 4,
        sha256: Some(sluice::Sha256::of(b"scan")),
        content_type: None,
    };
    let first = page(());
    // Invalid starts take nothing from any rate.
    for _ in 0..3 {
        let bad = local
            .sluice
            .pages()
            .start_browser_upload(&first, 0, start(""))
            .await;
        assert!(matches!(bad, Err(Error::Invalid(_))), "{bad:?}");
    }
    for _ in 0..2 {
        local
            .sluice
            .pages()
            .start_browser_upload(&first, 0, start("scan.pdf"))
            .await
            .unwrap();
    }
    match local
        .sluice
        .pages()
        .start_browser_upload(&first, 0, start("scan.pdf"))
        .await
    {
        Err(Error::Limited { message, .. }) => {
            assert!(message.contains("used too many times"), "{message}")
        }
        other => panic!("{other:?}"),
    }
    // Another page of the same owner, and the owner's own issuing, go on.
    let second = page(());
    local
        .sluice
        .pages()
        .start_browser_upload(&second, 0, start("scan.pdf"))
        .await
        .unwrap();
    assert!(
        local
            .sluice
            .uploads()
            .issue_upload("alice", request(b"y"))
            .await
            .is_err(),
        "two files issued: the burst"
    );
}
