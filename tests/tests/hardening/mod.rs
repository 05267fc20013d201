//! Bounded resources under hostile and careless clients (local mode): each
//! test here failed on the code before its fix.

mod per_user;

use std::time::{Duration, Instant};

use crate::util::{
    Server, bytes, call_tool, closed_within, out_text, put_link, put_links, request, response_head,
    response_status, sh, stalled_request, stored_objects,
};

const SECOND: Duration = Duration::from_secs(1);

fn put_head(path: &str, length: usize) -> String {
    format!("PUT {path} HTTP/1.1\r\nContent-Length: {length}")
}

/// Hundreds of uploads that send one byte and stall hold no thread: other
/// routes, including the ones that touch SQLite on the blocking pool, keep
/// answering. (Before: each parked a blocking-pool thread for its life, and
/// 520 of them made `/resolve`, the download links and `list_files` hang.)
#[test]
fn stalled_uploads_leave_every_other_route_answering() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start_in(
        dir.path(),
        &[
            // Above tokio's 512 blocking threads, so a parked thread per
            // upload would exhaust them.
            ("SLUICE_MAX_TRANSFERS", "2000"),
            ("SLUICE_BODY_IDLE_TIMEOUT_SECS", "600"),
        ],
    );
    let token = server.token("alice", &["files:read", "files:write"]);
    let ticket = server.upload(&token, "kept.bin", &bytes(5000, 1));
    let handle = ticket["handle"].as_str().unwrap().to_owned();

    let stalled: Vec<_> = put_links(dir.path(), 600, 1000, sluice::Sha256::of(b"whatever"))
        .iter()
        .map(|path| stalled_request(&server.base, &put_head(path, 1000), b"x"))
        .collect();
    std::thread::sleep(SECOND);

    // Issuing (a record write), uploading, resolving, downloading,
    // listing: all answer (each request bounded, so a hang is a failure).
    let data = bytes(3000, 2);
    let fresh = server.request_upload(&token, "during.bin", &data);
    let put = request(
        "PUT",
        fresh["upload"]["url"].as_str().unwrap(),
        &[("Content-Type", "application/octet-stream")],
        Some(&data),
    );
    assert_eq!(put.status, 200, "{}", put.text());
    let link = server.download_url(&token, &handle);
    let got = request("GET", &link, &[], None);
    assert_eq!(got.status, 200);
    assert_eq!(got.body, bytes(5000, 1));
    let listed = call_tool(&server.base, &token, "list_files", serde_json::json!({}));
    assert_eq!(
        listed["structuredContent"]["files"]
            .as_array()
            .unwrap()
            .len(),
        2
    );
    drop(stalled);
}

/// A link takes one upload at a time: a second PUT while the first is in
/// progress is refused at once, and the link is usable again after.
#[test]
fn a_second_upload_to_a_link_in_progress_is_refused_at_once() {
    let (server, dir) = Server::start();
    let data = bytes(4000, 3);
    let path = put_link(dir.path(), data.len() as u64, sluice::Sha256::of(&data));
    let first = stalled_request(&server.base, &put_head(&path, data.len()), &data[..10]);
    std::thread::sleep(Duration::from_millis(300));
    let started = Instant::now();
    let second = request("PUT", &format!("{}{path}", server.base), &[], Some(&data));
    assert_eq!(second.status, 409, "{}", second.text());
    assert!(
        second.message().contains("already in progress"),
        "{}",
        second.text()
    );
    assert!(
        started.elapsed() < 5 * SECOND,
        "refused at once, not after the first"
    );
    drop(first);
    std::thread::sleep(Duration::from_millis(300));
    let third = request("PUT", &format!("{}{path}", server.base), &[], Some(&data));
    assert_eq!(third.status, 200, "{}", third.text());
}

/// The quota counts what uploads in progress have declared: five
/// concurrent 400 KB uploads under a 1 MB quota store two. (Before: all five.)
#[test]
fn the_quota_is_reserved_when_an_upload_starts() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start_in(dir.path(), &[("SLUICE_QUOTA_BYTES", "1000000")]);
    let uploads: Vec<(Vec<u8>, String)> = (0..5)
        .map(|i| {
            let data = bytes(400_000, 10 + i);
            let path = put_link(dir.path(), data.len() as u64, sluice::Sha256::of(&data));
            (data, path)
        })
        .collect();
    let mut open: Vec<_> = uploads
        .iter()
        .map(|(data, path)| {
            let s = stalled_request(&server.base, &put_head(path, data.len()), &data[..1000]);
            std::thread::sleep(Duration::from_millis(100));
            s
        })
        .collect();
    let mut statuses = Vec::new();
    for ((data, _), stream) in uploads.iter().zip(open.iter_mut()) {
        use std::io::Write as _;
        let _ = stream.write_all(&data[1000..]);
        statuses.push(response_status(stream, 10 * SECOND));
    }
    let stored = statuses.iter().filter(|s| **s == Some(200)).count();
    let full = statuses.iter().filter(|s| **s == Some(507)).count();
    assert_eq!((stored, full), (2, 3), "{statuses:?}");
    assert_eq!(stored_objects(dir.path()).len(), 2);
}

/// A body that stops arriving is ended after the idle timeout: 408, nothing
/// stored, and the link works for a proper upload afterwards.
#[test]
fn a_stalled_body_is_ended_after_the_idle_timeout() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start_in(dir.path(), &[("SLUICE_BODY_IDLE_TIMEOUT_SECS", "1")]);
    let data = bytes(5000, 4);
    let path = put_link(dir.path(), data.len() as u64, sluice::Sha256::of(&data));
    let mut stalled = stalled_request(&server.base, &put_head(&path, data.len()), &data[..100]);
    assert_eq!(response_status(&mut stalled, 10 * SECOND), Some(408));
    assert!(stored_objects(dir.path()).is_empty());
    let retry = request("PUT", &format!("{}{path}", server.base), &[], Some(&data));
    assert_eq!(retry.status, 200, "{}", retry.text());
}

/// An upload started before its link expired cannot trickle on for ever:
/// it ends shortly after the expiry (a grace of 10 s), with 408.
#[test]
fn an_upload_ends_shortly_after_its_link_expires() {
    let dir = tempfile::tempdir().unwrap();
    // Two seconds: expiry is a whole second, so a one-second link issued
    // late in a second could be gone before the request reaches it.
    let server = Server::start_in(dir.path(), &[("SLUICE_UPLOAD_TTL_SECS", "2")]);
    let token = server.token("alice", &["files:write"]);
    let data = bytes(100, 5);
    let ticket = server.request_upload(&token, "slow.bin", &data);
    let url = ticket["upload"]["url"].as_str().unwrap().to_owned();
    let path = url.trim_start_matches(&server.base).to_owned();
    let started = Instant::now();
    let mut stream = stalled_request(&server.base, &put_head(&path, data.len()), b"");
    let mut status = None;
    for byte in &data {
        use std::io::Write as _;
        // One byte a second: never idle long enough for the idle timeout.
        if stream.write_all(std::slice::from_ref(byte)).is_err() {
            break;
        }
        status = response_status(&mut stream, SECOND);
        if status.is_some() || started.elapsed() > 30 * SECOND {
            break;
        }
    }
    assert_eq!(status, Some(408));
    assert!(started.elapsed() < 20 * SECOND, "{:?}", started.elapsed());
    assert!(stored_objects(dir.path()).is_empty());
}

/// A client that never finishes its headers is disconnected.
#[test]
fn headers_must_arrive_in_time() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start_in(dir.path(), &[("SLUICE_HEADER_READ_TIMEOUT_SECS", "1")]);
    let addr = server.base.trim_start_matches("http://");
    let mut slow = std::net::TcpStream::connect(addr).unwrap();
    use std::io::Write as _;
    slow.write_all(b"GET /.well-known/oauth-protected-resource HTTP/1.1\r\nHost: x\r\n")
        .unwrap();
    assert!(
        closed_within(&mut slow, 10 * SECOND),
        "the connection stayed open"
    );
}

/// A POST refused before its body arrived (a 401: no token) says
/// `Connection: close`, or else serves the next request on that connection.
/// Before: the server closed the connection without saying so, and the
/// Python SDK's OAuth client, sending its next request (the resource
/// metadata) on it at once, failed with "Server disconnected without
/// sending a response" (a CI run; the SDK's HTTP client sends a request's
/// headers and its body in two writes, so the body can come after the 401).
#[test]
fn a_refusal_before_the_body_arrives_says_the_connection_closes() {
    use std::io::{Read as _, Write as _};
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start_in(dir.path(), &[]);
    let body = br#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#;
    let head = format!(
        "POST /mcp HTTP/1.1\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nContent-Length: {}",
        body.len()
    );
    let mut stream = stalled_request(&server.base, &head, b"");
    let first = response_head(&mut stream, 10 * SECOND).to_lowercase();
    assert!(first.starts_with("http/1.1 401"), "{first}");
    if first.contains("\r\nconnection: close\r\n") {
        return;
    }
    // Not said: then the connection must go on serving, as a client that
    // reads no `Connection: close` will use it.
    let addr = server.base.trim_start_matches("http://");
    stream.write_all(body).unwrap();
    stream
        .write_all(
            format!("GET /.well-known/oauth-protected-resource HTTP/1.1\r\nHost: {addr}\r\n\r\n")
                .as_bytes(),
        )
        .unwrap();
    let mut rest = Vec::new();
    let _ = stream.read_to_end(&mut rest);
    let rest = String::from_utf8_lossy(&rest);
    assert!(
        rest.contains("HTTP/1.1 200"),
        "the connection was closed without a word and the next request lost: {first}{rest}"
    );
}

/// Connections past the cap wait to be accepted; once others close, they
/// are served.
#[test]
fn connections_past_the_cap_wait_their_turn() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start_in(
        dir.path(),
        &[
            ("SLUICE_MAX_CONNECTIONS", "3"),
            ("SLUICE_HEADER_READ_TIMEOUT_SECS", "60"),
        ],
    );
    let addr = server.base.trim_start_matches("http://").to_owned();
    let idle: Vec<_> = (0..3)
        .map(|_| std::net::TcpStream::connect(&addr).unwrap())
        .collect();
    std::thread::sleep(Duration::from_millis(300));
    let metadata = format!("{}/.well-known/oauth-protected-resource", server.base);
    let waiting = sh(
        &format!("curl -sS --max-time 2 -o /dev/null -w '%{{http_code}}' {metadata}"),
        dir.path(),
    );
    assert!(
        !waiting.status.success(),
        "served past the cap: {}",
        out_text(&waiting)
    );
    drop(idle);
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(request("GET", &metadata, &[], None).status, 200);
}

/// Past the transfer cap, another transfer is refused at once with 503 and
/// `Retry-After`.
#[test]
fn transfers_past_the_cap_are_refused_with_retry_after() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start_in(dir.path(), &[("SLUICE_MAX_TRANSFERS", "2")]);
    let open: Vec<_> = (0..2)
        .map(|_| {
            let path = put_link(dir.path(), 1000, sluice::Sha256::of(b"x"));
            stalled_request(&server.base, &put_head(&path, 1000), b"x")
        })
        .collect();
    std::thread::sleep(Duration::from_millis(300));
    let data = bytes(10, 6);
    let path = put_link(dir.path(), 10, sluice::Sha256::of(&data));
    let refused = request("PUT", &format!("{}{path}", server.base), &[], Some(&data));
    assert_eq!(refused.status, 503, "{}", refused.text());
    assert_eq!(refused.header("retry-after"), Some("5"));
    drop(open);
    std::thread::sleep(Duration::from_millis(300));
    let later = request("PUT", &format!("{}{path}", server.base), &[], Some(&data));
    assert_eq!(later.status, 200, "{}", later.text());
}

/// A download refused for want of a transfer slot keeps its link: the same
/// line works once a slot is free. (Before: the link was spent, then the
/// slot refused, and the file could not be fetched with it again.)
#[test]
fn a_download_refused_a_slot_keeps_its_link() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start_in(dir.path(), &[("SLUICE_MAX_TRANSFERS", "1")]);
    let token = server.token("alice", &["files:read", "files:write"]);
    let data = bytes(3 * 1024 * 1024, 8);
    let ticket = server.upload(&token, "big.bin", &data);
    let link = server.download_url(&token, ticket["handle"].as_str().unwrap());
    let path = put_link(dir.path(), 1000, sluice::Sha256::of(b"x"));
    let stalled = stalled_request(&server.base, &put_head(&path, 1000), b"x");
    std::thread::sleep(Duration::from_millis(300));
    let refused = request("GET", &link, &[], None);
    assert_eq!(refused.status, 503, "{}", refused.text());
    drop(stalled);
    std::thread::sleep(Duration::from_millis(300));
    let later = request("GET", &link, &[], None);
    assert_eq!(later.status, 200, "{}", later.text());
    assert_eq!(later.body, data);
    assert_eq!(request("GET", &link, &[], None).status, 404);
}

/// A spent link is refused before its object is read: here the object is
/// replaced by a FIFO no one writes to, which a read would wait on for ever.
#[test]
fn a_spent_link_is_refused_before_its_object_is_read() {
    let (server, dir) = Server::start();
    let token = server.token("alice", &["files:read", "files:write"]);
    let ticket = server.upload(&token, "a.bin", &bytes(2000, 7));
    let link = server.download_url(&token, ticket["handle"].as_str().unwrap());
    assert_eq!(request("GET", &link, &[], None).status, 200);
    let object = stored_objects(dir.path()).pop().unwrap();
    crate::util::stall_reads_of(&object);
    let replay = sh(
        &format!("curl -sS --max-time 5 -o /dev/null -w '%{{http_code}}' '{link}'"),
        dir.path(),
    );
    assert_eq!(
        String::from_utf8_lossy(&replay.stdout),
        "404",
        "{}",
        out_text(&replay)
    );
    crate::util::release_fifo(&object);
}

/// The data directory is its owner's alone, and so are its SQLite files.
#[test]
fn the_data_directory_and_its_databases_are_private() {
    use std::os::unix::fs::PermissionsExt as _;
    let (server, dir) = Server::start();
    let token = server.token("alice", &["files:read", "files:write"]);
    server.upload(&token, "a.txt", b"a");
    let mode = |p: &std::path::Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(dir.path()), 0o700);
    for name in ["ledger.sqlite3", "files.sqlite3", "master.key"] {
        assert_eq!(mode(&dir.path().join(name)), 0o600, "{name}");
    }
}

/// The upload command reads a file in the current directory named like
/// the label's last component, never an absolute or parent path.
#[test]
fn the_upload_command_never_reads_outside_the_current_directory() {
    let (server, _dir) = Server::start();
    let token = server.token("alice", &["files:write"]);
    for label in ["/etc/passwd", "../../secret.txt"] {
        let ticket = server.request_upload(&token, label, b"x");
        let curl = ticket["command"].as_str().unwrap();
        assert!(!curl.contains("'/etc"), "{curl}");
        assert!(!curl.contains(".."), "{curl}");
    }
    let ticket = server.request_upload(&token, "/etc/passwd", b"safe copy");
    let work = tempfile::tempdir().unwrap();
    std::fs::write(work.path().join("passwd"), b"safe copy").unwrap();
    let out = sh(ticket["command"].as_str().unwrap(), work.path());
    assert!(out.status.success(), "{}", out_text(&out));
}

/// The token `sluice` prints at start is short-lived (12 hours).
#[test]
fn the_printed_token_is_short_lived() {
    use std::io::BufRead as _;
    let dir = tempfile::tempdir().unwrap();
    let mut child = std::process::Command::new(crate::util::BIN)
        .env_clear()
        .env("SLUICE_PORT", "0")
        .env("SLUICE_DATA_DIR", dir.path())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let lines: Vec<String> = std::io::BufReader::new(child.stdout.take().unwrap())
        .lines()
        .take(5)
        .map(Result::unwrap)
        .collect();
    let _ = child.kill();
    let _ = child.wait();
    let token = lines
        .iter()
        .find(|l| l.trim_start().starts_with("eyJ"))
        .unwrap_or_else(|| panic!("no token in {lines:?}"))
        .trim();
    use base64::Engine as _;
    let claims: serde_json::Value = serde_json::from_slice(
        &base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(token.split('.').nth(1).unwrap())
            .unwrap(),
    )
    .unwrap();
    let lifetime = claims["exp"].as_i64().unwrap() - claims["iat"].as_i64().unwrap();
    assert_eq!(lifetime, 12 * 3600);
}

/// Another process holding the SQLite ledger past the busy timeout: the
/// redemption answers 503 after a bounded wait, spends nothing, and the same
/// link works once the lock is gone.
#[test]
fn a_locked_ledger_answers_503_and_spends_nothing() {
    let (server, dir) = Server::start();
    let token = server.token("alice", &["files:read", "files:write"]);
    let ticket = server.upload(&token, "a.bin", &bytes(3000, 8));
    let link = server.download_url(&token, ticket["handle"].as_str().unwrap());
    let ledger = dir.path().join("ledger.sqlite3");
    let mut holder = std::process::Command::new("python3")
        .arg("-c")
        .arg(
            "import sqlite3, sys, time\n\
             db = sqlite3.connect(sys.argv[1], isolation_level=None)\n\
             db.execute('BEGIN EXCLUSIVE')\n\
             print('locked', flush=True)\n\
             time.sleep(60)",
        )
        .arg(&ledger)
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    std::io::BufRead::read_line(
        &mut std::io::BufReader::new(holder.stdout.as_mut().unwrap()),
        &mut line,
    )
    .unwrap();
    assert_eq!(line.trim(), "locked");
    let started = Instant::now();
    let locked = request("GET", &link, &[], None);
    assert_eq!(locked.status, 503, "{}", locked.text());
    assert!(
        locked.message().contains("nothing was spent"),
        "{}",
        locked.text()
    );
    assert!(started.elapsed() < 30 * SECOND);
    let _ = holder.kill();
    let _ = holder.wait();
    let got = request("GET", &link, &[], None);
    assert_eq!(got.status, 200, "the link was not spent: {}", got.text());
    assert_eq!(got.body, bytes(3000, 8));
}

/// The DynamoDB emulator down during a redemption: a clear 503, not a 500.
#[test]
fn dynamodb_down_during_a_redemption_answers_503() {
    let mut emulators = crate::util::Emulators::start();
    crate::util::provision(&emulators, "outage");
    let (server, _dir) = crate::util::aws_server(&emulators, "outage", &[]);
    let token = crate::util::aws_token(&emulators, "alice", &[]);
    let ticket = server.upload(&token, "a.bin", &bytes(2000, 9));
    let link = server.download_url(&token, ticket["handle"].as_str().unwrap());
    emulators.stop_dynamodb();
    let got = request("GET", &link, &[], None);
    assert_eq!(got.status, 503, "{}", got.text());
    assert!(got.header("retry-after").is_some());
}

/// Per-user caps on files waiting for their bytes, and on the bytes they
/// declare: past either, 429 saying why and nothing issued; an upload frees
/// a place (through sluice it is marked at once; straight to S3 it is found
/// by a HEAD when the cap is reached). Another user is not affected.
pub fn pending_caps_hold(server: &Server, alice: &str, bob: &str) {
    let url = format!("{}/uploads", server.base);
    let ask = |token: &str, name: &str, size: usize| {
        let data = crate::util::bytes(size, name.len() as u64);
        let body = serde_json::json!({"filename": name, "size": size, "sha256": sluice::Sha256::of(&data)});
        (crate::util::post_json(&url, Some(token), &body), data)
    };
    let (first, first_data) = ask(alice, "a.bin", 10);
    assert_eq!(first.status, 200, "{}", first.text());
    assert_eq!(ask(alice, "bb.bin", 10).0.status, 200);
    assert_eq!(ask(alice, "ccc.bin", 10).0.status, 200);
    let (refused, _) = ask(alice, "dddd.bin", 10);
    assert_eq!(refused.status, 429, "{}", refused.text());
    assert!(
        refused.message().contains("3 files waiting"),
        "{}",
        refused.text()
    );
    assert!(refused.header("retry-after").is_some());
    // Declared bytes: bob has room for files, not for 2000 bytes.
    let (big, _) = ask(bob, "big.bin", 2000);
    assert_eq!(big.status, 429, "{}", big.text());
    assert!(big.message().contains("declare"), "{}", big.text());
    assert_eq!(ask(bob, "small.bin", 10).0.status, 200);

    // Alice uploads one of hers: a place is free again.
    let work = tempfile::tempdir().unwrap();
    std::fs::write(work.path().join("a.bin"), &first_data).unwrap();
    let out = crate::util::sh(first.json()["command"].as_str().unwrap(), work.path());
    assert!(out.status.success(), "{}", crate::util::out_text(&out));
    let (again, _) = ask(alice, "dddd.bin", 10);
    assert_eq!(again.status, 200, "{}", again.text());
}

/// A request body trickled a byte at a time (headers sent, then almost
/// nothing) is cut off at the body read timeout, so such clients cannot hold
/// every connection; an upload's own body is left to its own limits.
#[test]
fn a_trickled_request_body_is_cut_off_at_the_read_timeout() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start_in(dir.path(), &[("SLUICE_BODY_READ_TIMEOUT_SECS", "2")]);
    let token = server.token("alice", &["files:write"]);
    let head = format!(
        "POST /uploads HTTP/1.1\r\nAuthorization: Bearer {token}\r\n\
         Content-Type: application/json\r\nContent-Length: 200"
    );
    let mut trickle = stalled_request(&server.base, &head, b"{\"filename\":");
    let status = crate::util::response_status(&mut trickle, std::time::Duration::from_secs(15));
    assert!(
        matches!(status, Some(400) | Some(408)),
        "the trickled body is answered, not waited on for ever: {status:?}"
    );
    // The MCP endpoint says what happened: not "too large", but too slow.
    let head = format!(
        "POST /mcp HTTP/1.1\r\nAuthorization: Bearer {token}\r\n\
         Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n\
         Content-Length: 200"
    );
    let mut trickle = stalled_request(&server.base, &head, b"{\"jsonrpc\":");
    let status = crate::util::response_status(&mut trickle, std::time::Duration::from_secs(15));
    assert_eq!(status, Some(408));
}

/// An upload's body, and each part's, take as long as their link allows:
/// the body read timeout that cuts off a trickled request leaves the upload
/// routes (`/u/{token}` and its parts) to their own limits, by route.
/// (Before: only paths containing `/uploads/` were, and a part of 64 MiB
/// had to arrive at 2.2 MB/s or more.) Run with the lines as returned, curl
/// held to 1 MiB/s by a `.curlrc`.
#[test]
fn a_slow_upload_and_a_slow_part_outlast_the_body_read_timeout() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start_in(
        dir.path(),
        &[
            ("SLUICE_BODY_READ_TIMEOUT_SECS", "2"),
            ("SLUICE_SINGLE_PUT_MAX_BYTES", "4194304"),
            ("SLUICE_PART_BYTES", "5242880"),
        ],
    );
    let token = server.token("alice", &[]);
    let work = tempfile::tempdir().unwrap();
    std::fs::write(work.path().join(".curlrc"), "limit-rate = 1M\n").unwrap();
    for (name, size) in [
        ("slow.bin", 3_500_000),
        ("slow-parts.bin", 5 * 1024 * 1024 + 300_000),
    ] {
        let data = bytes(size, 41);
        std::fs::write(work.path().join(name), &data).unwrap();
        let ticket = server.request_upload(&token, name, &data);
        let started = Instant::now();
        let out = std::process::Command::new("sh")
            .arg("-c")
            .arg(ticket["command"].as_str().unwrap())
            .current_dir(work.path())
            .env("CURL_HOME", work.path())
            .output()
            .unwrap();
        assert!(out.status.success(), "{name}: {}", out_text(&out));
        assert!(
            started.elapsed() > 3 * SECOND,
            "{name}: the body took longer than the read timeout"
        );
        let download = server.download_ticket(&token, ticket["handle"].as_str().unwrap());
        let got = request(
            "GET",
            download["download"]["url"].as_str().unwrap(),
            &[],
            None,
        );
        assert!(got.body == data, "{name}: byte for byte");
    }
}
