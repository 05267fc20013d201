//! The service called directly, over the real local backends in a
//! temporary directory (`sluice_testkit::inproc`): each refusal is the
//! domain error it should be, and nothing is stored or spent by one.

use sluice::service::Stored;
use sluice::service::issue::UploadRequest;
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

#[tokio::test]
async fn a_file_is_missing_until_its_bytes_arrive_then_ready() {
    let local = Local::new();
    let ticket = local
        .sluice
        .issue_upload("alice", request(b"abc"))
        .await
        .unwrap();
    let file = local
        .sluice
        .find_file("alice", &ticket.file_id)
        .await
        .unwrap();
    assert_eq!(local.sluice.stored(&file).await.unwrap(), Stored::Missing);
    assert!(matches!(
        local.sluice.issue_download(&file).await,
        Err(Error::NotUploaded)
    ));
    let small = local
        .sluice
        .upload_small(
            "alice",
            "b.txt".into(),
            b"abc".to_vec(),
            sluice::Sha256::of(b"abc"),
            None,
        )
        .await
        .unwrap();
    let stored = local
        .sluice
        .find_file("alice", &small.file_id)
        .await
        .unwrap();
    assert!(matches!(
        local.sluice.stored(&stored).await.unwrap(),
        Stored::Ready(_)
    ));
    assert_eq!(local.sluice.read_small(&stored).await.unwrap(), b"abc");
}

#[tokio::test]
async fn file_ids_and_handles_never_cross_owners() {
    let local = Local::new();
    let ticket = local
        .sluice
        .issue_upload("alice", request(b"x"))
        .await
        .unwrap();
    assert!(matches!(
        local.sluice.find_file("mallory", &ticket.file_id).await,
        Err(Error::UnknownFile(_))
    ));
    let mallory = caller("mallory", &[Scope::FilesRead]);
    assert!(matches!(
        local.sluice.redeem_handle(&mallory, &ticket.handle),
        Err(Error::OtherUsersHandle)
    ));
    let service = caller("backend", &[Scope::FilesResolve]);
    assert_eq!(
        local
            .sluice
            .redeem_handle(&service, &ticket.handle)
            .unwrap()
            .owner,
        "alice"
    );
    assert!(matches!(
        local.sluice.redeem_handle(&mallory, "$uploadedFile:nope"),
        Err(Error::NotAHandle)
    ));
}

#[tokio::test]
async fn a_wrong_digest_on_the_inline_fallback_stores_nothing() {
    let local = Local::new();
    let refused = local
        .sluice
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
    let page = local.sluice.list_files("alice", None, None).await.unwrap();
    assert!(page.files.is_empty(), "{:?}", page.files);
}

#[tokio::test]
async fn the_pending_caps_refuse_with_a_time_to_come_back() {
    let local = Local::with(&[("SLUICE_MAX_PENDING_FILES", "2")]);
    for _ in 0..2 {
        local
            .sluice
            .issue_upload("alice", request(b"y"))
            .await
            .unwrap();
    }
    match local.sluice.issue_upload("alice", request(b"y")).await {
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

/// The upstream is told who the user is in one form whatever the delivery:
/// the token's `sub`, as its issuer wrote it (README, Actions).
#[tokio::test]
async fn an_upstream_is_told_the_user_as_the_tokens_sub_in_both_deliveries() {
    let upstream = echo_upstream().await;
    let dir = tempfile::tempdir().unwrap();
    let catalog = dir.path().join("actions.toml");
    let mut toml = String::new();
    for (name, delivery) in [("inline", "data-uri"), ("linked", "link")] {
        toml.push_str(&format!(
            "[[actions]]\nname = \"{name}\"\ndescription = \"d\"\nurl = \"{upstream}/{name}\"\n\
             file_delivery = \"{delivery}\"\n[[actions.fields]]\nname = \"doc\"\ntype = \"File\"\n"
        ));
    }
    std::fs::write(&catalog, toml).unwrap();
    let config = sluice::Config::from_vars(
        [
            ("SLUICE_DATA_DIR", dir.path().display().to_string()),
            ("SLUICE_ACTIONS_FILE", catalog.display().to_string()),
        ]
        .map(|(k, v)| (k.to_owned(), v)),
    )
    .unwrap();
    let backends = sluice_runtime::open_backends(&config).await.unwrap();
    let sluice = backends.sluice(&config, "http://127.0.0.1:8787".parse().unwrap());
    // A caller from an external issuer: its files are owned by `<iss> <sub>`.
    let caller = Caller {
        sub: "alice".into(),
        owner: "https://issuer.example alice".into(),
        scopes: [Scope::ActionsExecute].into_iter().collect(),
    };
    let stored = sluice
        .upload_small(
            &caller.owner,
            "a.txt".into(),
            b"hi".to_vec(),
            sluice::Sha256::of(b"hi"),
            None,
        )
        .await
        .unwrap();
    for action in ["inline", "linked"] {
        let outcome = sluice
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

/// Two starts of one browser page at the same moment, with two different
/// files: one is issued and the other refused, and the file recorded is the
/// one whose PUT was signed (a replaced record would mark another file ready).
#[tokio::test]
async fn two_starts_of_one_page_at_once_issue_one_file() {
    use sluice::service::browser::{BrowserStart, BrowserUploadRequest};
    let local = Local::new();
    for _ in 0..10 {
        let page = local
            .sluice
            .request_browser_upload("alice", BrowserUploadRequest::default())
            .unwrap();
        let token = page.page_url.rsplit('/').next().unwrap();
        let start = |data: &[u8]| BrowserStart {
            filename: "scan.pdf".into(),
            size: data.len() as u64,
            sha256: sluice::Sha256::of(data),
            content_type: None,
        };
        let (a, b) = tokio::join!(
            local
                .sluice
                .start_browser_upload(token, start(b"first file")),
            local
                .sluice
                .start_browser_upload(token, start(b"second, other file")),
        );
        let (won, lost) = match (a, b) {
            (Ok(t), Err(e)) => (t, e),
            (Err(e), Ok(t)) => (t, e),
            other => panic!("exactly one start is issued: {other:?}"),
        };
        assert!(matches!(lost, Error::PageConflict(_)), "{lost:?}");
        let recorded = local.sluice.find_file("alice", &won.file_id).await.unwrap();
        let signed = won.upload.url.clone();
        assert!(!signed.is_empty());
        let again = local
            .sluice
            .start_browser_upload(
                token,
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
