//! The service called directly, over the real local backends in a
//! temporary directory (`sluice_testkit::inproc`): each refusal is the
//! domain error it should be, and nothing is stored or spent by one.

use sluice::service::files::stored::Stored;
use sluice::service::uploads::issue::UploadRequest;
use sluice::{Caller, Error, Scope};
use sluice_testkit::inproc::Local;

fn request(data: &[u8]) -> UploadRequest {
    UploadRequest {
        filename: "notes.txt".into(),
        size: data.len() as u64,
        sha256: sluice::Sha256::of(data),
        content_type: None,
    }
}

fn caller(owner: &str, scopes: &[Scope]) -> Caller {
    Caller {
        sub: owner.into(),
        owner: owner.into(),
        scopes: scopes.iter().copied().collect(),
    }
}

/// Stores `data` inline as `name` for `owner`, its digest given right.
async fn small(
    sluice: &sluice::Sluice,
    owner: &str,
    name: &str,
    data: &[u8],
) -> sluice::service::uploads::small::SmallUpload {
    sluice
        .uploads()
        .upload_small(
            owner,
            name.into(),
            data.to_vec(),
            sluice::Sha256::of(data),
            None,
        )
        .await
        .unwrap()
}

#[tokio::test]
async fn a_file_is_missing_until_its_bytes_arrive_then_ready() {
    let local = Local::new();
    let ticket = local
        .sluice
        .uploads()
        .issue_upload("alice", request(b"abc"))
        .await
        .unwrap();
    let file = local
        .sluice
        .files()
        .find_file("alice", &ticket.file_id)
        .await
        .unwrap();
    assert_eq!(
        local.sluice.files().stored(&file).await.unwrap(),
        Stored::Missing
    );
    assert!(matches!(
        local
            .sluice
            .downloads()
            .issue_download("alice", &file)
            .await,
        Err(Error::NotUploaded)
    ));
    let small = small(&local.sluice, "alice", "b.txt", b"abc").await;
    let stored = local
        .sluice
        .files()
        .find_file("alice", &small.file_id)
        .await
        .unwrap();
    assert!(matches!(
        local.sluice.files().stored(&stored).await.unwrap(),
        Stored::Ready(_)
    ));
    assert_eq!(
        local.sluice.downloads().read_small(&stored).await.unwrap(),
        b"abc"
    );
}

#[tokio::test]
async fn file_ids_and_handles_never_cross_owners() {
    let local = Local::new();
    let ticket = local
        .sluice
        .uploads()
        .issue_upload("alice", request(b"x"))
        .await
        .unwrap();
    assert!(matches!(
        local
            .sluice
            .files()
            .find_file("mallory", &ticket.file_id)
            .await,
        Err(Error::UnknownFile(_))
    ));
    let mallory = caller("mallory", &[Scope::FilesRead]);
    assert!(matches!(
        local
            .sluice
            .files()
            .redeem_handle(&mallory, &ticket.handle)
            .await,
        Err(Error::OtherUsersHandle)
    ));
    let service = caller("backend", &[Scope::FilesResolve]);
    assert_eq!(
        local
            .sluice
            .files()
            .redeem_handle(&service, &ticket.handle)
            .await
            .unwrap()
            .owner,
        "alice"
    );
    assert!(matches!(
        local
            .sluice
            .files()
            .redeem_handle(&mallory, "$uploadedFile:nope")
            .await,
        Err(Error::NotAHandle)
    ));
}

#[tokio::test]
async fn a_wrong_digest_on_the_inline_fallback_stores_nothing() {
    let local = Local::new();
    let refused = local
        .sluice
        .uploads()
        .upload_small(
            "alice",
            "a.txt".into(),
            b"abc".to_vec(),
            sluice::Sha256::of(b"abd"),
            None,
        )
        .await;
    assert!(
        matches!(refused, Err(Error::Invalid(ref m)) if m.contains("nothing was stored")),
        "{refused:?}"
    );
    let page = local
        .sluice
        .files()
        .list_files("alice", None, None)
        .await
        .unwrap();
    assert!(page.files.is_empty(), "{:?}", page.files);
}

#[tokio::test]
async fn the_pending_caps_refuse_with_a_time_to_come_back() {
    let local = Local::with(&[("SLUICE_MAX_PENDING_FILES", "2")]);
    for _ in 0..2 {
        local
            .sluice
            .uploads()
            .issue_upload("alice", request(b"y"))
            .await
            .unwrap();
    }
    match local
        .sluice
        .uploads()
        .issue_upload("alice", request(b"y"))
        .await
    {
        Err(Error::Limited {
            message,
            retry_after,
        }) => {
            assert!(message.contains("2 files waiting"), "{message}");
            assert!(retry_after > 0);
        }
        other => panic!("{other:?}"),
    }
    assert!(
        local
            .sluice
            .uploads()
            .issue_upload("bob", request(b"y"))
            .await
            .is_ok(),
        "caps are per user"
    );
}

/// An upstream on loopback that answers each action call with what it was
/// sent: `{action, user, fields}`.
async fn echo_upstream() -> String {
    let app = axum::Router::new().route(
        "/{action}",
        axum::routing::post(
            |axum::Json(body): axum::Json<serde_json::Value>| async move { axum::Json(body) },
        ),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    format!("http://{addr}")
}

/// Sluice (local backends) with two actions on an echo upstream, one per
/// delivery, and `vars`.
async fn with_echo_actions(dir: &std::path::Path, vars: &[(&str, &str)]) -> sluice::Sluice {
    let upstream = echo_upstream().await;
    let catalog = dir.join("actions.toml");
    let mut toml = String::new();
    for (name, delivery) in [("inline", "data-uri"), ("linked", "link")] {
        toml.push_str(&format!(
            "[[actions]]\nname = \"{name}\"\ndescription = \"d\"\nurl = \"{upstream}/{name}\"\n\
             file_delivery = \"{delivery}\"\n[[actions.fields]]\nname = \"doc\"\ntype = \"File\"\n"
        ));
    }
    toml.push_str(&format!(
        "[[actions]]\nname = \"pair\"\ndescription = \"d\"\nurl = \"{upstream}/pair\"\n\
         [[actions.fields]]\nname = \"one\"\ntype = \"File\"\n\
         [[actions.fields]]\nname = \"two\"\ntype = \"File\"\n"
    ));
    std::fs::write(&catalog, toml).unwrap();
    let mut all = vec![
        ("SLUICE_DATA_DIR".to_owned(), dir.display().to_string()),
        (
            "SLUICE_ACTIONS_FILE".to_owned(),
            catalog.display().to_string(),
        ),
    ];
    all.extend(vars.iter().map(|(k, v)| (k.to_string(), v.to_string())));
    let config = sluice::Config::from_vars(all).unwrap();
    let backends = sluice_runtime::open_backends(&config).await.unwrap();
    backends.sluice(&config, "http://127.0.0.1:8787".parse().unwrap())
}

/// The upstream is told who the user is in one form whatever the delivery:
/// the token's `sub`, as its issuer wrote it (docs/actions.md).
#[tokio::test]
async fn an_upstream_is_told_the_user_as_the_tokens_sub_in_both_deliveries() {
    let dir = tempfile::tempdir().unwrap();
    let sluice = with_echo_actions(dir.path(), &[]).await;
    // A caller from an external issuer: its files are owned by `<iss> <sub>`.
    let caller = Caller {
        sub: "alice".into(),
        owner: "https://issuer.example alice".into(),
        scopes: [Scope::ActionsExecute].into_iter().collect(),
    };
    let stored = small(&sluice, &caller.owner, "a.txt", b"hi").await;
    for action in ["inline", "linked"] {
        let outcome = sluice
            .actions()
            .execute_action(&caller, action, serde_json::json!({"doc": stored.handle}))
            .await
            .unwrap();
        assert_eq!(
            outcome.result["user"], "alice",
            "{action}: {:?}",
            outcome.result
        );
    }
}

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
        sha256: sluice::Sha256::of(b"scan"),
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

/// Files in an action's result are kept outside the caller's issuing rate
/// and caps (the action has run), and one that cannot be kept is named in
/// its place while the rest of the result still comes back.
#[tokio::test]
async fn an_actions_result_files_are_kept_whatever_the_callers_limits() {
    let dir = tempfile::tempdir().unwrap();
    let sluice = with_echo_actions(
        dir.path(),
        &[
            ("SLUICE_ISSUE_RATE_PER_MINUTE", "1"),
            ("SLUICE_ISSUE_BURST", "1"),
            ("SLUICE_MAX_PENDING_FILES", "1"),
            // Room for one result file of 20 KiB, not two.
            ("SLUICE_QUOTA_BYTES", "30000"),
        ],
    )
    .await;
    let alice = caller("alice", &[Scope::ActionsExecute]);
    // The caller's issuing burst is spent, and a file of theirs is pending.
    sluice
        .uploads()
        .issue_upload("alice", request(b"pending"))
        .await
        .unwrap();
    let big = |byte: u8| {
        let data = vec![byte; 20 * 1024];
        sluice::datauri::DataUri::encode("text/plain", Some("r.txt"), &data)
    };
    let outcome = sluice
        .actions()
        .execute_action(
            &alice,
            "pair",
            serde_json::json!({"one": big(b'a'), "two": big(b'b')}),
        )
        .await
        .expect("the action ran, and its answer comes back");
    let fields = &outcome.result["fields"];
    let (kept, lost) = if fields["one"]["handle"].is_string() {
        (&fields["one"], &fields["two"])
    } else {
        (&fields["two"], &fields["one"])
    };
    assert!(kept["download"]["url"].is_string(), "{fields}");
    assert!(
        lost["error"]
            .as_str()
            .unwrap()
            .contains("could not be kept"),
        "{fields}"
    );
    assert_eq!(outcome.files_linked, 1);
}

/// Two starts of one browser page at the same moment, with two different
/// files: one is issued and the other refused, and the file recorded is the
/// one whose PUT was signed (a replaced record would mark another file ready).
#[tokio::test]
async fn two_starts_of_one_page_at_once_issue_one_file() {
    use sluice::service::pages::{BrowserStart, BrowserUploadRequest};
    let local = Local::new();
    for _ in 0..10 {
        let page = local
            .sluice
            .pages()
            .request_browser_upload("alice", BrowserUploadRequest::default())
            .unwrap();
        let token = page.page_url.rsplit('/').next().unwrap();
        let opened = local.sluice.pages().page_for_start(token).unwrap();
        let start = |data: &[u8]| BrowserStart {
            filename: "scan.pdf".into(),
            size: data.len() as u64,
            sha256: sluice::Sha256::of(data),
            content_type: None,
        };
        let (a, b) = tokio::join!(
            local
                .sluice
                .pages()
                .start_browser_upload(&opened, 0, start(b"first file")),
            local
                .sluice
                .pages()
                .start_browser_upload(&opened, 0, start(b"second, other file")),
        );
        let (won, lost) = match (a, b) {
            (Ok(t), Err(e)) => (t, e),
            (Err(e), Ok(t)) => (t, e),
            other => panic!("exactly one start is issued: {other:?}"),
        };
        assert!(matches!(lost, Error::PageConflict(_)), "{lost:?}");
        let recorded = local
            .sluice
            .files()
            .find_file("alice", &won.file_id)
            .await
            .unwrap();
        let signed = won.upload.url.clone();
        assert!(!signed.is_empty());
        let again = local
            .sluice
            .pages()
            .start_browser_upload(
                &opened,
                0,
                start(if recorded.size == 10 {
                    b"first file"
                } else {
                    b"second, other file"
                }),
            )
            .await;
        assert!(
            again.is_ok(),
            "the recorded file may start again: {again:?}"
        );
    }
}

/// An upstream answer over what this server reads (`SLUICE_ACTION_MAX_BYTES`,
/// and on Lambda a sixth of the function's memory) is refused saying that the
/// action ran, so nobody runs it again blindly.
#[tokio::test]
async fn an_answer_over_the_limit_says_the_action_ran() {
    let dir = tempfile::tempdir().unwrap();
    let sluice = with_echo_actions(dir.path(), &[("SLUICE_ACTION_MAX_BYTES", "200")]).await;
    let alice = caller("alice", &[Scope::ActionsExecute]);
    let small = small(&sluice, "alice", "a.txt", b"a").await;
    let refused = sluice
        .actions()
        .execute_action(&alice, "linked", serde_json::json!({"doc": small.handle}))
        .await
        .unwrap_err()
        .to_string();
    assert!(refused.contains("the action ran"), "{refused}");
    assert!(refused.contains("over the 200 bytes"), "{refused}");
}

/// A waiting status call's polls read the records alone (one read), and
/// look at the store only now and then: bytes that reached the store
/// without marking the record (as on S3, where the bytes go straight to
/// the bucket) are found by a look at the store, not by a records-only one.
#[tokio::test]
async fn a_records_only_look_reads_no_store() {
    use sluice::service::pages::{BrowserStart, BrowserUploadRequest, Look, UploadState};
    let local = Local::new();
    let page = local
        .sluice
        .pages()
        .request_browser_upload("alice", BrowserUploadRequest::default())
        .unwrap();
    let token = page.page_url.rsplit('/').next().unwrap();
    let opened = local.sluice.pages().page_for_start(token).unwrap();
    let data = b"arrived behind the record's back";
    let started = local
        .sluice
        .pages()
        .start_browser_upload(
            &opened,
            0,
            BrowserStart {
                filename: "scan.pdf".into(),
                size: data.len() as u64,
                sha256: sluice::Sha256::of(data),
                content_type: None,
            },
        )
        .await
        .unwrap();
    let file = local
        .sluice
        .files()
        .find_file("alice", &started.file_id)
        .await
        .unwrap();
    let path = local
        .dir
        .path()
        .join("objects")
        .join(file.object_key().as_str());
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(&path, data).unwrap();
    let status = |look| {
        local
            .sluice
            .pages()
            .upload_status_by("alice", &page.upload_id, look)
    };
    assert_eq!(
        status(Look::Records).await.unwrap().state,
        UploadState::Pending
    );
    assert_eq!(status(Look::Store).await.unwrap().state, UploadState::Ready);
    // Marked by the look at the store: the next records-only poll sees it.
    assert_eq!(
        status(Look::Records).await.unwrap().state,
        UploadState::Ready
    );
}

/// The service served in this process through the runtime's own serve path
/// (`sluice_testkit::inproc::Served`, port 0): the line it returns, run by
/// a shell against that socket, stores the file, and the service it
/// serves finds it stored; a second run of the same line sends nothing.
#[tokio::test(flavor = "multi_thread")]
async fn the_line_the_service_returns_stores_through_the_served_socket() {
    let served = tokio::task::spawn_blocking(|| sluice_testkit::inproc::Served::start(&[]))
        .await
        .unwrap();
    let data = sluice_testkit::bytes(70_000, 4);
    let ticket = served
        .sluice
        .uploads()
        .issue_upload(
            "alice",
            UploadRequest {
                filename: "served.bin".into(),
                size: data.len() as u64,
                sha256: sluice::Sha256::of(&data),
                content_type: None,
            },
        )
        .await
        .unwrap();
    assert!(
        ticket.upload.url.starts_with(&served.base),
        "{} under {}",
        ticket.upload.url,
        served.base
    );
    let work = tempfile::tempdir().unwrap();
    std::fs::write(work.path().join("served.bin"), &data).unwrap();
    let run = |line: String, dir: std::path::PathBuf| {
        tokio::task::spawn_blocking(move || {
            std::process::Command::new("sh")
                .arg("-c")
                .arg(line)
                .current_dir(dir)
                .output()
                .unwrap()
        })
    };
    let out = run(ticket.command.clone(), work.path().to_owned())
        .await
        .unwrap();
    assert!(out.status.success(), "{}", crate::util::out_text(&out));
    let file = served
        .sluice
        .files()
        .find_file("alice", &ticket.file_id)
        .await
        .unwrap();
    assert!(
        matches!(
            served.sluice.files().stored(&file).await.unwrap(),
            Stored::Ready(_)
        ),
        "stored"
    );
    let again = run(ticket.command.clone(), work.path().to_owned())
        .await
        .unwrap();
    assert!(
        String::from_utf8_lossy(&again.stdout).contains("sluice: stored"),
        "{}",
        crate::util::out_text(&again)
    );
    tokio::task::spawn_blocking(move || drop(served))
        .await
        .unwrap();
}
