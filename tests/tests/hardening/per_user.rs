//! What one user may take: the issuing rate, the pending caps, the local store,
//! the download bytes of an hour.

use super::*;

/// One user asking for files in a loop is slowed down, not everyone: past
/// the burst, 429 with `Retry-After` and nothing issued, through REST and
/// as a tool error the model can read; another user is still served.
#[test]
fn issuing_is_rate_limited_per_user() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start_in(
        dir.path(),
        &[
            ("SLUICE_ISSUE_RATE_PER_MINUTE", "1"),
            ("SLUICE_ISSUE_BURST", "3"),
        ],
    );
    let alice = server.token("alice", &[]);
    let body =
        serde_json::json!({"filename": "a.txt", "size": 1, "sha256": sluice::Sha256::of(b"a")});
    let url = format!("{}/uploads", server.base);
    for _ in 0..3 {
        assert_eq!(
            crate::util::post_json(&url, Some(&alice), &body).status,
            200
        );
    }
    let refused = crate::util::post_json(&url, Some(&alice), &body);
    assert_eq!(refused.status, 429, "{}", refused.text());
    let retry: u64 = refused.header("retry-after").unwrap().parse().unwrap();
    assert!((1..=60).contains(&retry), "{retry}");
    assert!(
        refused.message().contains("try again in"),
        "{}",
        refused.text()
    );

    let tool = call_tool(
        &server.base,
        &alice,
        "request_upload",
        serde_json::json!({"filename": "b.txt", "size": 1, "sha256": sluice::Sha256::of(b"b")}),
    );
    assert!(
        crate::util::tool_error(&tool).contains("too many files requested"),
        "{tool}"
    );
    // Nothing was issued for the refused requests: three files listed.
    let listed = call_tool(&server.base, &alice, "list_files", serde_json::json!({}));
    assert_eq!(
        listed["structuredContent"]["files"]
            .as_array()
            .unwrap()
            .len(),
        3
    );

    let bob = server.token("bob", &[]);
    assert_eq!(crate::util::post_json(&url, Some(&bob), &body).status, 200);
}

#[test]
fn pending_files_and_bytes_are_capped_per_user() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start_in(
        dir.path(),
        &[
            ("SLUICE_MAX_PENDING_FILES", "3"),
            ("SLUICE_MAX_PENDING_BYTES", "1000"),
        ],
    );
    pending_caps_hold(
        &server,
        &server.token("alice", &[]),
        &server.token("bob", &[]),
    );
}

/// One user cannot fill the local disk for everyone: by default their files
/// may declare half the quota in all, uploaded ones included; past it, 429
/// saying so and nothing issued, while another user is still served.
/// (Before: alice's uploads could take the whole quota.)
#[test]
fn one_user_cannot_fill_the_local_store() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start_in(dir.path(), &[("SLUICE_QUOTA_BYTES", "4000000")]);
    let alice = server.token("alice", &[]);
    let bob = server.token("bob", &[]);
    server.upload(&alice, "a.bin", &bytes(1_500_000, 20));
    let ask = |token: &str, size: usize| {
        let data = bytes(size, 21);
        let body = serde_json::json!({"filename": "b.bin", "size": size, "sha256": sluice::Sha256::of(&data)});
        crate::util::post_json(&format!("{}/uploads", server.base), Some(token), &body)
    };
    let refused = ask(&alice, 600_000);
    assert_eq!(refused.status, 429, "{}", refused.text());
    assert!(
        refused
            .message()
            .contains("your files already take 1500000 bytes"),
        "{}",
        refused.text()
    );
    assert!(refused.header("retry-after").is_some());
    assert_eq!(ask(&alice, 400_000).status, 200, "what fits is issued");
    assert_eq!(ask(&bob, 1_900_000).status, 200, "bob has room of his own");
}

/// One user's downloads are bounded per hour by the bytes of the links they
/// are given (`SLUICE_DOWNLOAD_BYTES_PER_HOUR`), on every backend: past it,
/// 429 and no link; another user is still served.
#[test]
fn download_bytes_are_bounded_per_user_and_hour() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start_in(dir.path(), &[("SLUICE_DOWNLOAD_BYTES_PER_HOUR", "5242880")]);
    let alice = server.token("alice", &[]);
    let bob = server.token("bob", &[]);
    let data = bytes(2 * 1024 * 1024, 22);
    let handle = |token: &str| {
        server.upload(token, "two.bin", &data)["handle"]
            .as_str()
            .unwrap()
            .to_owned()
    };
    let (mine, his) = (handle(&alice), handle(&bob));
    assert_eq!(server.resolve(&alice, &mine).status, 200);
    assert_eq!(server.resolve(&alice, &mine).status, 200);
    let refused = server.resolve(&alice, &mine);
    assert_eq!(refused.status, 429, "{}", refused.text());
    assert!(
        refused.message().contains("too many bytes"),
        "{}",
        refused.text()
    );
    let tool = call_tool(
        &server.base,
        &alice,
        "get_download_url",
        serde_json::json!({"file": mine}),
    );
    assert!(
        crate::util::tool_error(&tool).contains("too many bytes"),
        "{tool}"
    );
    assert_eq!(server.resolve(&bob, &his).status, 200);
}
