//! Single use under contention: many concurrent redemptions, exactly one wins.

use std::sync::Arc;

use crate::util::{Server, bytes, concurrently, request, stored_objects};

fn count(statuses: &[u16], status: u16) -> usize {
    statuses.iter().filter(|s| **s == status).count()
}

#[test]
fn of_32_concurrent_gets_of_one_link_exactly_one_succeeds() {
    let (server, _dir) = Server::start();
    let token = server.token("alice", &[]);
    let data = bytes(64 * 1024, 1);
    let ticket = server.upload(&token, "a.bin", &data);
    let url = server.download_url(&token, ticket["handle"].as_str().unwrap());
    let statuses = concurrently(32, move |_| request("GET", &url, &[], None).status);
    assert_eq!(count(&statuses, 200), 1, "{statuses:?}");
    // The others: 404 (spent), or 503 for those refused one of the user's
    // 16 transfer slots while the winner still held the link unspent (a
    // retry then gets 404), or 410 for those past the link's byte budget
    // (twice the file) that the first few took before the winner spent it.
    assert_eq!(
        count(&statuses, 404) + count(&statuses, 503) + count(&statuses, 410),
        31,
        "{statuses:?}"
    );
}

#[test]
fn of_8_concurrent_puts_to_one_link_exactly_one_succeeds() {
    let (server, _dir) = Server::start();
    let token = server.token("alice", &[]);
    let data = bytes(2 * 1024 * 1024, 2);
    let ticket = server.request_upload(&token, "a.bin", &data);
    let url = ticket["upload"]["url"].as_str().unwrap().to_owned();
    let data = Arc::new(data);
    let body = data.clone();
    let statuses = concurrently(8, move |_| request("PUT", &url, &[], Some(&body)).status);
    assert_eq!(count(&statuses, 200), 1, "{statuses:?}");
    assert_eq!(count(&statuses, 409), 7, "{statuses:?}");
    let objects = stored_objects(&server.data_dir);
    assert_eq!(objects.len(), 1);
    assert_eq!(std::fs::read(&objects[0]).unwrap(), *data);
    assert!(crate::util::files_under(&server.data_dir.join("tmp")).is_empty());
}
