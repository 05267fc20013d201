//! One guard per policy (hardening V): each policy (the quota, waits, the
//! private spool and the caps, imports under way, scope and form before a
//! fetch, the scanner's word, the rate of appends) lives in one part that
//! every flow passes, so the newest flows (the stream, imports, actions
//! with host files, scans) cannot miss it. Each test here failed on the
//! code before its part held for every flow. Every request goes to a
//! server on 127.0.0.1.

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::imports::{Answer, Origin, import, importing, rejected};
use crate::util::{
    Emulators, Server, aws_server, aws_token, bytes, call_tool, files_under, provision, request,
    response_head, stalled_request, tool_error, tool_ok,
};

const MIB: usize = 1024 * 1024;
const SCOPES: &[&str] = &["files:read", "files:write"];

/// What the origin of these tests serves.
fn origin_routes(path: &str, data: &[u8]) -> Answer {
    match path {
        "/data.bin" => Answer::Whole(200, vec![], data.to_vec()),
        "/unsized" => Answer::Unsized(data.to_vec()),
        "/slow" => Answer::Trickle(100),
        "/never" => Answer::Never,
        "/bidi" => Answer::Whole(
            200,
            vec![(
                "Content-Disposition",
                "attachment; filename*=UTF-8''invoice%E2%80%AEfdp.exe".into(),
            )],
            data.to_vec(),
        ),
        _ => Answer::Whole(404, vec![], vec![]),
    }
}

/// The bytes of every object and stream below `objects`.
fn du(objects: &Path) -> u64 {
    files_under(objects)
        .iter()
        .filter_map(|p| std::fs::metadata(p).ok())
        .map(|m| m.len())
        .sum()
}

/// A tus `PATCH` of `len` bytes from `offset` to `ticket`'s link, of which
/// `sent` is sent now; the rest never comes.
fn stalled_patch(
    server: &Server,
    ticket: &Value,
    offset: usize,
    len: usize,
    sent: &[u8],
) -> std::net::TcpStream {
    let url = ticket["upload"]["url"].as_str().unwrap();
    let path = url.strip_prefix(&server.base).unwrap();
    stalled_request(
        &server.base,
        &format!(
            "PATCH {path} HTTP/1.1\r\nTus-Resumable: 1.0.0\r\n\
             Content-Type: application/offset+octet-stream\r\n\
             Upload-Offset: {offset}\r\nContent-Length: {len}"
        ),
        sent,
    )
}

fn tus_patch(url: &str, offset: usize, body: &[u8]) -> u16 {
    let at = offset.to_string();
    request(
        "PATCH",
        url,
        &[
            ("Tus-Resumable", "1.0.0"),
            ("Content-Type", "application/offset+octet-stream"),
            ("Upload-Offset", &at),
        ],
        Some(body),
    )
    .status
}

fn delete(server: &Server, token: &str, ticket: &Value) -> u16 {
    let auth = format!("Bearer {token}");
    let url = format!(
        "{}/files/{}",
        server.base,
        ticket["file_id"].as_str().unwrap()
    );
    request("DELETE", &url, &[("Authorization", &auth)], None).status
}

/// Waits until some stream below `objects` holds `bytes`.
fn stream_holds(objects: &Path, bytes: u64) {
    let until = Instant::now() + Duration::from_secs(30);
    while Instant::now() < until {
        let longest = files_under(objects)
            .iter()
            .filter(|p| p.ends_with("stream"))
            .filter_map(|p| std::fs::metadata(p).ok())
            .map(|m| m.len())
            .max()
            .unwrap_or(0);
        if longest >= bytes {
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    panic!("no stream reached {bytes} bytes");
}

/// An append cut by a delete, and one cut by its link's expiry, leave the
/// quota's figure exact: the delete's `PATCH` answers 404 at once (not a
/// 500), nothing is given back twice, and with 16 MiB kept under a 64 MiB
/// quota, 48 MiB more fit and the next 16 MiB are refused `507`; the
/// bytes on disk never pass the quota.
#[test]
fn appends_cut_by_a_delete_or_an_expiry_leave_the_quota_exact() {
    let dir = tempfile::tempdir().unwrap();
    let quota = 64 * MIB;
    let server = Server::start_in(
        dir.path(),
        &[
            ("SLUICE_QUOTA_BYTES", &quota.to_string()),
            ("SLUICE_MAX_STORED_BYTES_PER_USER", &quota.to_string()),
            ("SLUICE_UPLOAD_TTL_SECS", "8"),
        ],
    );
    let alice = server.token("alice", &[]);
    // Another user fills the store at the end: the quota, not a user's
    // cap, is what refuses.
    let bob = server.token("bob", &[]);
    let objects = dir.path().join("objects");
    server.upload(&alice, "kept.bin", &bytes(16 * MIB, 1));

    // A delete cuts an append under way.
    let big = bytes(32 * MIB, 2);
    let cut = server.request_upload(&alice, "cut.bin", &big);
    let mut patch = stalled_patch(&server, &cut, 0, big.len(), &big[..8 * MIB]);
    stream_holds(&objects, 4 * MIB as u64);
    assert_eq!(delete(&server, &alice, &cut), 200);
    let head = response_head(&mut patch, Duration::from_secs(20));
    assert!(head.starts_with("HTTP/1.1 404"), "a deleted upload: {head}");
    drop(patch);

    // Its link's expiry cuts another, after 8 MiB were kept.
    let late = server.request_upload(&alice, "late.bin", &big);
    let url = late["upload"]["url"].as_str().unwrap();
    assert_eq!(tus_patch(url, 0, &big[..8 * MIB]), 204);
    let mut patch = stalled_patch(
        &server,
        &late,
        8 * MIB,
        big.len() - 8 * MIB,
        &big[8 * MIB..16 * MIB],
    );
    let head = response_head(&mut patch, Duration::from_secs(30));
    assert!(head.starts_with("HTTP/1.1 408"), "cut at expiry: {head}");
    drop(patch);
    assert!(du(&objects) <= quota as u64);
    assert_eq!(delete(&server, &alice, &late), 200);

    let mut accepted = 0;
    let mut refused = None;
    for i in 0..5 {
        let data = bytes(16 * MIB, 10 + i);
        let ticket = server.request_upload(&bob, &format!("fill{i}.bin"), &data);
        let put = request(
            "PUT",
            ticket["upload"]["url"].as_str().unwrap(),
            &[],
            Some(&data),
        );
        let on_disk = du(&objects);
        assert!(on_disk <= quota as u64, "{on_disk} bytes on disk");
        if (200..300).contains(&put.status) {
            accepted += 1;
        } else {
            refused = Some(put.status);
            break;
        }
    }
    assert_eq!(accepted, 3, "48 MiB fit beside the 16 MiB kept");
    assert_eq!(refused, Some(507), "the next 16 MiB is refused");
}

/// Every call that waits passes the waits part: sixteen waiting
/// `get_import_status` calls of one user on one import hold at most two
/// connections (the rest answer at once), so with 16 connections another
/// user is answered while the waits go on.
#[test]
fn import_status_waits_are_capped_like_upload_status_waits() {
    let origin = Origin::start(origin_routes, vec![]);
    let (server, _dir) = importing(
        &origin,
        &[
            ("SLUICE_MAX_CONNECTIONS", "16"),
            ("SLUICE_IMPORT_WAIT_SECS", "1"),
            ("SLUICE_IMPORT_READ_TIMEOUT_SECS", "60"),
        ],
    );
    let alice = server.token("alice", SCOPES);
    let pending = tool_ok(&import(
        &server,
        &alice,
        json!({"url": origin.url("/never")}),
    ));
    assert_eq!(pending["state"], "pending", "{pending}");
    let id = pending["file_id"].as_str().unwrap().to_owned();
    let waits: Vec<_> = (0..16)
        .map(|_| {
            let (base, token, id) = (server.base.clone(), alice.clone(), id.clone());
            std::thread::spawn(move || {
                call_tool(
                    &base,
                    &token,
                    "get_import_status",
                    json!({"file_id": id, "wait_seconds": 20}),
                )
            })
        })
        .collect();
    std::thread::sleep(Duration::from_secs(1));
    let bob = server.token("bob", SCOPES);
    let answered = call_tool(&server.base, &bob, "list_files", json!({}));
    tool_ok(&answered);
    let still_waiting = waits.iter().filter(|w| !w.is_finished()).count();
    assert!(
        (1..=2).contains(&still_waiting),
        "another user was answered while {still_waiting} waits (at most two) went on"
    );
    for wait in waits {
        assert_eq!(tool_ok(&wait.join().unwrap())["state"], "pending");
    }
}

/// An import's spool is private: under the data directory, 0600, never in
/// the shared temporary directory; a body without a length is cut as soon
/// as it passes the caller's caps, and one with a length over them is
/// refused before its first byte; a source slower than the floor is cut.
#[test]
fn an_import_spools_privately_under_the_callers_caps() {
    let data = bytes(3 * MIB, 70);
    let origin = Origin::start(origin_routes, data);
    let (server, dir) = importing(
        &origin,
        &[
            ("SLUICE_MAX_STORED_BYTES_PER_USER", &MIB.to_string()),
            ("SLUICE_IMPORT_READ_TIMEOUT_SECS", "2"),
            ("SLUICE_IMPORT_MIN_BYTES_PER_SEC", "1"),
            ("SLUICE_IMPORT_WAIT_SECS", "1"),
        ],
    );
    let alice = server.token("alice", SCOPES);
    let temp_spools = || {
        std::fs::read_dir(std::env::temp_dir())
            .into_iter()
            .flatten()
            .flatten()
            .filter(|e| {
                e.file_name()
                    .to_string_lossy()
                    .starts_with("sluice-import-")
            })
            .count()
    };
    let before = temp_spools();
    // While a byte a second arrives, its spool is the server's alone.
    let slow = tool_ok(&import(
        &server,
        &alice,
        json!({"url": origin.url("/slow")}),
    ));
    assert_eq!(slow["state"], "pending", "{slow}");
    let spool = dir
        .path()
        .join("tmp")
        .join(format!("import-{}", slow["file_id"].as_str().unwrap()));
    let until = Instant::now() + Duration::from_secs(10);
    while !spool.exists() && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(20));
    }
    use std::os::unix::fs::PermissionsExt as _;
    let mode = std::fs::metadata(&spool).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600, "{spool:?}");
    assert_eq!(temp_spools(), before, "nothing spooled in the shared /tmp");

    // Over the caps: refused by its length before the first byte, cut
    // when it has none.
    let why = rejected(&import(
        &server,
        &alice,
        json!({"url": origin.url("/data.bin")}),
    ));
    assert!(why.contains("more than the"), "{why}");
    let why = rejected(&import(
        &server,
        &alice,
        json!({"url": origin.url("/unsized")}),
    ));
    assert!(why.contains("more than the"), "{why}");
    assert!(
        files_under(&dir.path().join("tmp")).len() <= 1,
        "nothing kept of them"
    );
}

/// A source that trickles is cut by the floor on its rate, not held until
/// the import's deadline.
#[test]
fn a_source_slower_than_the_floor_is_cut() {
    let origin = Origin::start(origin_routes, vec![]);
    let (server, _dir) = importing(&origin, &[("SLUICE_IMPORT_READ_TIMEOUT_SECS", "2")]);
    let alice = server.token("alice", SCOPES);
    let why = rejected(&import(
        &server,
        &alice,
        json!({"url": origin.url("/slow")}),
    ));
    assert!(why.contains("slower than the least"), "{why}");
}

/// On AWS records (dynalite), a user's imports under way are counted in
/// the table, so two replicas share the cap: three on one and a fourth on
/// the other leave no room for a fifth.
#[test]
fn the_fifth_import_under_way_is_refused_across_replicas_on_dynamodb() {
    let origin = Origin::start(origin_routes, vec![]);
    let emulators = Emulators::start();
    provision(&emulators, "turns");
    let port = origin.port.to_string();
    let extra = [
        ("SLUICE_IMPORT_ALLOW_LOOPBACK", "true"),
        ("SLUICE_IMPORT_PORTS", port.as_str()),
        ("SLUICE_IMPORT_WAIT_SECS", "1"),
        ("SLUICE_IMPORT_READ_TIMEOUT_SECS", "60"),
    ];
    let (one, _one_dir) = aws_server(&emulators, "turns", &extra);
    let (two, _two_dir) = aws_server(&emulators, "turns", &extra);
    let alice = aws_token(&emulators, "alice", SCOPES);
    let url = origin.url("/never");
    for server in [&one, &one, &two, &two] {
        let pending = tool_ok(&import(server, &alice, json!({"url": url})));
        assert_eq!(pending["state"], "pending", "{pending}");
    }
    let fifth = import(&one, &alice, json!({"url": url}));
    assert!(tool_error(&fifth).contains("imports under way"), "{fifth}");
    let bob = aws_token(&emulators, "bob", SCOPES);
    let other = tool_ok(&import(&two, &bob, json!({"url": url})));
    assert_eq!(
        other["state"], "pending",
        "another user's turns are their own"
    );
}

/// A File field a host fills makes the server fetch a file: only for a
/// token that may write files, and only once the whole form is right.
#[test]
fn an_action_fetches_a_host_file_only_after_scope_and_form() {
    let origin = Origin::start(origin_routes, bytes(1024, 71));
    let (server, _dir) = importing(&origin, &[]);
    let handed = json!({"download_url": origin.url("/data.bin"), "file_id": "file_1"});
    let runs_only = server.token("alice", &["actions:execute"]);
    let refused = call_tool(
        &server.base,
        &runs_only,
        "action_attach_document",
        json!({"review_id": 1, "document": handed}),
    );
    assert!(tool_error(&refused).contains("files:write"), "{refused}");
    let writes = server.token("alice", &["files:read", "files:write", "actions:execute"]);
    for (fields, named) in [
        (json!({"review_id": "one", "document": handed}), "review_id"),
        (json!({"review_id": 1, "document": handed, "cc": "x"}), "cc"),
        (json!({"document": handed}), "review_id"),
    ] {
        let refused = call_tool(
            &server.base,
            &writes,
            "execute_action",
            json!({"action": "attach_document", "fields": fields}),
        );
        assert!(tool_error(&refused).contains(named), "{refused}");
    }
    assert_eq!(origin.hits(), 0, "nothing was fetched");
    let ran = tool_ok(&call_tool(
        &server.base,
        &writes,
        "action_attach_document",
        json!({"review_id": 1, "document": handed}),
    ));
    assert_eq!(ran["files"][0]["size"], 1024, "{ran}");
    assert_eq!(origin.hits(), 1);
}

/// With scanning on, a file given inline (a data: URI) is refused before
/// the call: its bytes would reach the upstream unscanned.
#[test]
fn an_inline_file_is_refused_while_files_are_scanned() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start_in(
        dir.path(),
        &[
            ("SLUICE_SCAN", "clamd"),
            ("SLUICE_CLAMD", "tcp:127.0.0.1:9"),
        ],
    );
    let token = server.token("alice", &["files:read", "files:write", "actions:execute"]);
    let refused = call_tool(
        &server.base,
        &token,
        "action_attach_document",
        json!({"review_id": 1, "document": "data:text/plain;name=a.txt;base64,aGk="}),
    );
    let message = tool_error(&refused);
    assert!(
        message.contains("inline") && message.contains("request_upload"),
        "{message}"
    );
}

/// Appends to one upload are rated: a link holder cannot make the server
/// sync over and over.
#[test]
fn appends_to_one_upload_are_rated() {
    let (server, _dir) = Server::start();
    let alice = server.token("alice", &[]);
    let data = bytes(1024, 72);
    let ticket = server.request_upload(&alice, "a.bin", &data);
    let url = ticket["upload"]["url"].as_str().unwrap();
    let mut statuses = Vec::new();
    for _ in 0..400 {
        let status = tus_patch(url, 0, &[]);
        statuses.push(status);
        if status == 429 {
            break;
        }
    }
    assert!(statuses.iter().take(100).all(|s| *s == 204), "{statuses:?}");
    assert_eq!(statuses.last(), Some(&429), "{} appends", statuses.len());
}

/// A name a server gives keeps no bidi or invisible characters: the model
/// and the listing see what the file is.
#[test]
fn a_remote_name_is_shown_without_bidi_characters() {
    let origin = Origin::start(origin_routes, bytes(100, 73));
    let (server, _dir) = importing(&origin, &[]);
    let alice = server.token("alice", SCOPES);
    let got = tool_ok(&import(
        &server,
        &alice,
        json!({"url": origin.url("/bidi")}),
    ));
    assert_eq!(got["filename"], "invoicefdp.exe", "{got}");
    let listed = tool_ok(&call_tool(&server.base, &alice, "list_files", json!({})));
    assert_eq!(listed["files"][0]["filename"], "invoicefdp.exe");
}
