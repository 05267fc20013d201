//! A large file from the page as one resumable upload, a busy server waited out,
//! and the waits of status calls.

use super::*;

/// A page for big.bin on a server whose part size is 5 MiB (the page's
/// requests of a resumable upload; `env` besides), and the file: 12 MiB
/// and 5 bytes of `seed`, three requests.
/// (The server is dropped, and stopped, before its data directory.)
struct PartsPage {
    server: Server,
    dir: tempfile::TempDir,
    token: String,
    page_url: String,
    upload_id: String,
    _work: tempfile::TempDir,
    file: PathBuf,
    data: Vec<u8>,
}

impl PartsPage {
    /// Runs the page in Chromium in `mode` on the file (see [`browse`]).
    fn browse(&self, mode: &str, prefix: &str) -> Vec<String> {
        browse(&self.page_url, &self.file, mode, prefix, 900)
    }

    /// The model gets the handle, and its download is the file, byte for byte.
    fn assert_stored(&self) {
        let fetched = fetch_ready(&self.server, &self.token, &self.upload_id);
        assert!(fetched.body == self.data, "byte for byte");
    }
}

fn parts_page(env: &[(&str, &str)], seed: u64) -> PartsPage {
    let dir = tempfile::tempdir().unwrap();
    let mut env = env.to_vec();
    env.extend([
        ("SLUICE_PART_BYTES", "5242880"),
        ("SLUICE_SINGLE_PUT_MAX_BYTES", "1048576"),
    ]);
    let server = Server::start_in(dir.path(), &env);
    let token = server.token("alice", &[]);
    let page = request_page(&server, &token, "big.bin");
    let work = tempfile::tempdir().unwrap();
    let file = work.path().join("big.bin");
    let data = bytes(12 * 1024 * 1024 + 5, seed);
    std::fs::write(&file, &data).unwrap();
    PartsPage {
        page_url: page["page_url"].as_str().unwrap().to_owned(),
        upload_id: page["upload_id"].as_str().unwrap().to_owned(),
        dir,
        server,
        token,
        _work: work,
        file,
        data,
    }
}

/// A large file goes from the page as one resumable (tus) upload to the
/// upload link, in requests of the part size, by the vendored tus-js-client
/// in Chromium, started before the page has hashed it: the request with
/// its last bytes declares its digest, and it is proven at its last byte,
/// byte for byte, nothing staged left behind.
#[test]
fn a_large_file_goes_from_the_page_as_one_resumable_upload() {
    let page = parts_page(&[], 17);
    // What the page is told when it starts, without the file's digest (a
    // start is repeatable with the same file): the upload link, as a tus
    // upload, in 5 MiB requests.
    let start = crate::util::post_json(
        &format!("{}/start", page.page_url),
        None,
        &json!({"filename": "big.bin", "size": page.data.len()}),
    );
    assert_eq!(start.status, 200, "{}", start.text());
    let answer = start.json();
    let stream = &answer["stream"];
    assert!(stream["link"].as_str().unwrap().contains("/u/"), "{answer}");
    assert_eq!(stream["chunk_size"], 5 * 1024 * 1024, "{answer}");
    assert!(answer.get("parts").is_none(), "{answer}");
    let checks = page.browse("upload", "stream-");
    crate::util::assert_checks(
        &checks,
        &[
            "upload done",
            "the last bytes declare the digest",
            "no third-party requests, no CSP violation",
        ],
    );
    page.assert_stored();
    // Nothing staged is left behind: the stream became the object.
    assert!(sluice_testkit::files_under(&page.dir.path().join("objects/parts")).is_empty());
}

/// A page reloaded in the middle of its upload (its second request held,
/// so the reload cuts it) goes on from where the upload stands once the
/// file is picked again: the same file by its name and size, the bytes
/// kept not sent again, the file hashed again beside sending the rest, and
/// the digest declared with the last bytes; byte for byte.
#[test]
fn a_reloaded_page_goes_on_from_where_its_upload_stands() {
    let page = parts_page(&[], 23);
    let checks = page.browse("reload", "reload-");
    crate::util::assert_checks(
        &checks,
        &[
            "a reload goes on from where the upload stood",
            "upload done",
            "the last bytes declare the digest",
        ],
    );
    page.assert_stored();
}

/// A server that answers "not now" does not fail the page: with its one
/// transfer taken (a stalled upload of another user's), the upload's
/// request is refused with 503 and a Retry-After; the page says it waits,
/// asks again after it, as the upload line's curl does, and once the slot
/// is free the file goes without the person doing anything, byte for byte.
/// (Before: "Part 1 was refused (503)", and the person had to try again.)
#[test]
fn the_page_waits_out_a_busy_server_and_goes_on_by_itself() {
    let page = parts_page(&[("SLUICE_MAX_TRANSFERS", "1")], 19);
    // The one slot, held by an upload that sends one byte and stalls; let
    // go once the page says it waits (it writes `signal` then).
    let held = crate::util::put_link(page.dir.path(), 1000, sluice::Sha256::of(b"x"));
    let stalled = crate::util::stalled_request(
        &page.server.base,
        &format!("PUT {held} HTTP/1.1\r\nContent-Length: 1000"),
        b"x",
    );
    let signal = shots().join("busy-busy.signal");
    let _ = std::fs::remove_file(&signal);
    let freeing = {
        let signal = signal.clone();
        std::thread::spawn(move || {
            let until = std::time::Instant::now() + std::time::Duration::from_secs(120);
            while !signal.exists() && std::time::Instant::now() < until {
                std::thread::sleep(std::time::Duration::from_millis(50));
            }
            drop(stalled);
        })
    };
    let checks = page.browse("busy", "busy-");
    freeing.join().unwrap();
    let said = std::fs::read_to_string(&signal).unwrap();
    assert!(
        said.contains("again in 5 s"),
        "the server's Retry-After: {said}"
    );
    crate::util::assert_checks(&checks, &["a busy server waited out", "upload done"]);
    page.assert_stored();
}

/// Progress while a person uploads: one `get_upload_status` call with
/// `wait_seconds` and a progress token (the official Python client)
/// receives notifications/progress as the bytes arrive, then `ready`; with
/// neither it answers at once, as before (`tests/clients/progress.py`).
#[test]
fn a_waiting_status_call_reports_progress_and_answers_when_ready() {
    let (server, _dir) = Server::start();
    let out = Command::new(root().join(".venv/bin/python"))
        .arg(root().join("tests/clients/progress.py"))
        .args(["--url", &format!("{}/mcp", server.base)])
        .args(["--token", &server.token("alice", &[])])
        .current_dir(root().join("tests/clients"))
        .output()
        .unwrap();
    let checks = crate::util::client_checks("progress.py", &out);
    assert_eq!(checks.len(), 2, "{checks:?}");
    assert!(checks[1].contains("progress notifications"), "{checks:?}");
}

/// A waiting status call holds a connection: one user's sixteen waits on
/// sixteen pages (with sixteen connections allowed) hold at most two of
/// them; the others answer at once (still pending), and another user is
/// answered while the two wait. Before, all sixteen held their
/// connections for their whole wait, and the other user was not answered
/// until one ended.
#[test]
fn one_users_waits_hold_few_connections() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start_in(dir.path(), &[("SLUICE_MAX_CONNECTIONS", "16")]);
    let alice = server.token("alice", &[]);
    let bob = server.token("bob", &[]);
    let ids: Vec<String> = (0..16)
        .map(|_| {
            let page = tool_ok(&call_tool(
                &server.base,
                &alice,
                "request_browser_upload",
                json!({}),
            ));
            page["upload_id"].as_str().unwrap().to_owned()
        })
        .collect();
    let done = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let waits: Vec<_> = ids
        .into_iter()
        .map(|id| {
            let (base, alice, done) = (server.base.clone(), alice.clone(), done.clone());
            std::thread::spawn(move || {
                let status = tool_ok(&call_tool(
                    &base,
                    &alice,
                    "get_upload_status",
                    json!({"upload_id": id, "wait_seconds": 8}),
                ));
                done.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                status
            })
        })
        .collect();
    // The calls that may not wait answer at once; give them a few seconds
    // (less than the waits' eight) to come back.
    let until = std::time::Instant::now() + std::time::Duration::from_secs(6);
    while done.load(std::sync::atomic::Ordering::SeqCst) < 14 && std::time::Instant::now() < until {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let listed = tool_ok(&call_tool(&server.base, &bob, "list_files", json!({})));
    assert!(listed["files"].is_array(), "{listed}");
    let answered = done.load(std::sync::atomic::Ordering::SeqCst);
    assert!(
        (14..16).contains(&answered),
        "{answered} of sixteen waits answered while the others waited"
    );
    for wait in waits {
        assert_eq!(wait.join().unwrap()["state"], "pending");
    }
}
