//! The service called directly, over the real local backends in a
//! temporary directory (`sluice_testkit::inproc`): each refusal is the
//! domain error it should be, and nothing is stored or spent by one.

mod actions;
mod rates;

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

/// Issues an upload of `data` (as `notes.txt`) for `owner`.
async fn issued(
    sluice: &sluice::Sluice,
    owner: &str,
    data: &[u8],
) -> sluice::service::uploads::issue::UploadTicket {
    sluice
        .uploads()
        .issue_upload(owner, request(data))
        .await
        .unwrap()
}

/// `owner`'s file `id`, which is theirs.
async fn found(sluice: &sluice::Sluice, owner: &str, id: &sluice::FileId) -> sluice::FileMeta {
    sluice.files().find_file(owner, id).await.unwrap()
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
    let ticket = issued(&local.sluice, "alice", b"abc").await;
    let file = found(&local.sluice, "alice", &ticket.file_id).await;
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
    let stored = found(&local.sluice, "alice", &small.file_id).await;
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
    let ticket = issued(&local.sluice, "alice", b"x").await;
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
        issued(&local.sluice, "alice", b"y").await;
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
            sha256: Some(sluice::Sha256::of(data)),
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
        let recorded = found(&local.sluice, "alice", &won.file_id).await;
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
                sha256: Some(sluice::Sha256::of(data)),
                content_type: None,
            },
        )
        .await
        .unwrap();
    let file = found(&local.sluice, "alice", &started.file_id).await;
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
    let file = found(&served.sluice, "alice", &ticket.file_id).await;
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

/// A function frozen once it answers (and, behind API Gateway, cut at 30 s
/// and 10 MB) builds no zip: asked for one, it says to run the line,
/// before anything is looked up; a server that lives on builds them on any
/// store (`zip::many_files_go_down_as_one_zip_that_unzip_and_python_read`,
/// and on S3 in `ranges`).
#[tokio::test]
async fn a_function_builds_no_zip_and_says_to_run_the_line() {
    let local = Local::with(&[("AWS_LAMBDA_RUNTIME_API", "127.0.0.1:9")]);
    let refused = local
        .sluice
        .batches()
        .issue_downloads(
            &caller("alice", &[Scope::FilesRead]),
            vec!["f".into()],
            true,
        )
        .await
        .unwrap_err();
    assert!(
        matches!(&refused, Error::Invalid(why) if why.contains("run the line")),
        "{refused}"
    );
}
