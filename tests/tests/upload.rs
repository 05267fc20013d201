//! `PUT /uploads/{token}`: exact size, exact digest, first success wins,
//! failures store nothing and leave the link usable, and the quota.

use crate::util::{Server, bytes, files_under, request, sh, stored_objects};

/// Issues an upload of `data` and returns the upload URL.
fn upload_url(server: &Server, data: &[u8]) -> String {
    let token = server.token("alice", &[]);
    let ticket = server.request_upload(&token, "f.bin", data);
    ticket["upload"]["url"].as_str().unwrap().to_owned()
}

fn put(url: &str, body: &[u8]) -> crate::util::Reply {
    request(
        "PUT",
        url,
        &[("Content-Type", "application/octet-stream")],
        Some(body),
    )
}

fn put_chunked(url: &str, body: &[u8]) -> crate::util::Reply {
    request(
        "PUT",
        url,
        &[
            ("Transfer-Encoding", "chunked"),
            ("Content-Type", "application/octet-stream"),
        ],
        Some(body),
    )
}

fn assert_nothing_stored(server: &Server) {
    assert!(stored_objects(&server.data_dir).is_empty());
    assert!(files_under(&server.data_dir.join("tmp")).is_empty());
}

#[test]
fn a_body_longer_than_declared_is_refused_early_and_the_link_stays_usable() {
    let (server, _dir) = Server::start();
    let data = bytes(1000, 1);
    let url = upload_url(&server, &data);

    let reply = put(&url, &bytes(1001, 1));
    assert_eq!(reply.status, 413, "{}", reply.text());
    assert!(
        reply.message().contains("exactly 1000"),
        "{}",
        reply.message()
    );
    assert_nothing_stored(&server);

    assert_eq!(put(&url, &data).status, 200);
    assert_eq!(stored_objects(&server.data_dir).len(), 1);
}

#[test]
fn a_short_or_long_streamed_body_is_refused() {
    let (server, _dir) = Server::start();
    let data = bytes(5000, 2);
    let url = upload_url(&server, &data);

    let short = put_chunked(&url, &data[..4999]);
    assert_eq!(short.status, 400, "{}", short.text());
    assert!(short.message().contains("4999"), "{}", short.message());
    let mut long = data.clone();
    long.push(0);
    let long = put_chunked(&url, &long);
    assert_eq!(long.status, 400, "{}", long.text());
    assert!(long.message().contains("longer"), "{}", long.message());
    assert_nothing_stored(&server);

    assert_eq!(put_chunked(&url, &data).status, 200);
}

#[test]
fn a_short_content_length_is_refused_before_the_body() {
    let (server, _dir) = Server::start();
    let data = bytes(100, 3);
    let url = upload_url(&server, &data);
    let reply = put(&url, &data[..50]);
    assert_eq!(reply.status, 400);
    assert_nothing_stored(&server);
}

#[test]
fn a_body_with_another_digest_stores_nothing_and_the_link_stays_usable() {
    let (server, _dir) = Server::start();
    let data = bytes(3 * 1024 * 1024, 4);
    let url = upload_url(&server, &data);
    let mut wrong = data.clone();
    wrong[1234] ^= 1;

    let reply = put(&url, &wrong);
    assert_eq!(reply.status, 400, "{}", reply.text());
    assert!(reply.message().contains("sha256"), "{}", reply.message());
    assert!(
        reply.message().contains("can be used again"),
        "{}",
        reply.message()
    );
    assert_nothing_stored(&server);

    assert_eq!(put(&url, &data).status, 200);
}

#[test]
fn a_second_upload_to_the_same_link_is_a_conflict() {
    let (server, _dir) = Server::start();
    let data = bytes(10, 5);
    let url = upload_url(&server, &data);
    assert_eq!(put(&url, &data).status, 200);
    let again = put(&url, &data);
    assert_eq!(again.status, 409, "{}", again.text());
    assert!(again.message().contains("already uploaded"));
}

#[test]
fn a_full_store_answers_507_before_reading_the_body() {
    let dir = tempfile::tempdir().unwrap();
    // The whole store's quota, one user's cap set past it.
    let server = Server::start_in(
        dir.path(),
        &[
            ("SLUICE_QUOTA_BYTES", "4096"),
            ("SLUICE_MAX_STORED_BYTES_PER_USER", "100000"),
        ],
    );
    let first = bytes(3000, 6);
    assert_eq!(put(&upload_url(&server, &first), &first).status, 200);

    let second = bytes(2000, 7);
    let reply = put(&upload_url(&server, &second), &second);
    assert_eq!(reply.status, 507, "{}", reply.text());
    assert!(reply.message().contains("full"));
    assert_eq!(stored_objects(&server.data_dir).len(), 1);
    assert!(files_under(&server.data_dir.join("tmp")).is_empty());
}

#[test]
fn a_failed_upload_line_fails_loudly() {
    let (server, _dir) = Server::start();
    let token = server.token("alice", &[]);
    let ticket = server.request_upload(&token, "note.txt", b"expected");
    let work = tempfile::tempdir().unwrap();
    std::fs::write(work.path().join("note.txt"), b"EXPECTED").unwrap();
    let out = sh(ticket["command"].as_str().unwrap(), work.path());
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stdout).contains("sha256"));
    assert!(stored_objects(&server.data_dir).is_empty());
}

#[test]
fn upload_requests_are_validated() {
    let (server, _dir) = Server::start();
    let token = server.token("alice", &[]);
    let url = format!("{}/uploads", server.base);
    let sha = sluice::Sha256::of(b"x").to_hex();
    let cases = [
        (
            serde_json::json!({"filename": "", "size": 1, "sha256": sha}),
            "filename",
        ),
        (
            serde_json::json!({"filename": "a", "size": 1, "sha256": "abc"}),
            "sha256",
        ),
        (
            serde_json::json!({"filename": "a", "size": -1, "sha256": sha}),
            "size",
        ),
        (
            serde_json::json!({"filename": "a", "size": 1u64 << 40, "sha256": sha}),
            "over the limit",
        ),
        (
            serde_json::json!({"filename": "a", "size": 1, "sha256": sha, "content_type": "not a type"}),
            "content_type",
        ),
        (serde_json::json!({"filename": "a", "size": 1}), "sha256"),
    ];
    for (body, needle) in cases {
        let reply = crate::util::post_json(&url, Some(&token), &body);
        assert_eq!(reply.status, 400, "{body}: {}", reply.text());
        assert!(
            reply.message().contains(needle),
            "{body}: {}",
            reply.message()
        );
    }
    let bad_json = request(
        "POST",
        &url,
        &[
            ("Content-Type", "application/json"),
            ("Authorization", &format!("Bearer {token}")),
        ],
        Some(b"{not json"),
    );
    assert_eq!(bad_json.status, 400);
}
