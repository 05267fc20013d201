//! The ledger is durable and shared: a spent link stays spent across a
//! restart, and two processes on one data directory honour one ledger.

use crate::util::concurrently;
use crate::util::{Server, bytes, request};

/// Uploads a file as alice and returns two independent download URLs for it.
fn two_links(server: &Server) -> (String, String) {
    let token = server.token("alice", &[]);
    let ticket = server.upload(&token, "a.bin", &bytes(2048, 3));
    let handle = ticket["handle"].as_str().unwrap();
    let link = |_| server.download_url(&token, handle);
    (link(0), link(1))
}

#[test]
fn a_link_spent_before_a_restart_stays_spent_after_it() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start_in(dir.path(), &[]);
    let (spent, unspent) = two_links(&server);
    let handle_token = server.token("alice", &[]);
    assert_eq!(request("GET", &spent, &[], None).status, 200);
    let old_base = server.base.clone();
    server.stop();

    let server = Server::start_in(dir.path(), &[]);
    let rebase = |url: &str| url.replacen(&old_base, &server.base, 1);
    assert_eq!(request("GET", &rebase(&spent), &[], None).status, 404);
    // What was issued before the restart and not spent still works.
    assert_eq!(request("GET", &rebase(&unspent), &[], None).status, 200);
    let body = serde_json::json!({"filename": "b", "size": 1, "sha256": sluice::Sha256::of(b"b").to_hex()});
    let reply = crate::util::post_json(
        &format!("{}/uploads", server.base),
        Some(&handle_token),
        &body,
    );
    assert_eq!(reply.status, 200);
}

#[test]
fn a_second_process_on_the_same_data_dir_honours_the_same_ledger() {
    let dir = tempfile::tempdir().unwrap();
    let a = Server::start_in(dir.path(), &[]);
    let b = Server::start_in(dir.path(), &[]);
    let (first, second) = two_links(&a);
    let on_b = |url: &str| url.replacen(&a.base, &b.base, 1);

    // Issued by A, redeemed on B; then spent on B, refused on A.
    assert_eq!(request("GET", &on_b(&first), &[], None).status, 200);
    assert_eq!(request("GET", &first, &[], None).status, 404);

    // 32 concurrent GETs spread over both processes: exactly one wins; the
    // others are the spent link's 404, or the 410 of a link whose budget of
    // bytes (twice the file) the first few took.
    let urls = [second.clone(), on_b(&second)];
    let statuses = concurrently(32, move |i| request("GET", &urls[i % 2], &[], None).status);
    assert_eq!(
        statuses.iter().filter(|s| **s == 200).count(),
        1,
        "{statuses:?}"
    );
    assert_eq!(
        statuses.iter().filter(|s| **s == 404 || **s == 410).count(),
        31,
        "{statuses:?}"
    );
}
