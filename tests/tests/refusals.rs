//! Bad input gets a clear status and message, and tokens of one kind are
//! never accepted as another (docs/ARCHITECTURE.md, "Invariants").

use sluice::token::Short;

use crate::util::{Server, bytes, config_for, post_json, request, stored_objects};

/// Uploads a file as alice; returns (alice's token, handle, a download URL).
fn setup(server: &Server) -> (String, String, String) {
    let token = server.token("alice", &[]);
    let ticket = server.upload(&token, "a.txt", b"hello");
    let handle = ticket["handle"].as_str().unwrap().to_owned();
    let url = server.download_url(&token, &handle);
    (token, handle, url)
}

#[test]
fn every_bad_link_token_gets_the_same_404() {
    let (server, _dir) = Server::start();
    let (token, handle, url) = setup(&server);
    let keys = sluice_runtime::local_keyring(&config_for(&server.data_dir)).unwrap();
    let id = crate::util::handle_file_id(&server.data_dir, &handle);
    let base = format!("{}/l/", server.base);
    let good = url.strip_prefix(&base).unwrap().to_owned();
    let later = sluice::time::now_unix() + 60;

    let mut tampered = good.clone().into_bytes();
    let mid = tampered.len() / 2;
    tampered[mid] = if tampered[mid] == b'A' { b'B' } else { b'A' };
    let expired = Short::download(id.clone(), 1).encode(&keys);
    let other_dir = tempfile::tempdir().unwrap();
    let other_keys = sluice_runtime::local_keyring(&config_for(other_dir.path())).unwrap();
    let other_instance = Short::download(id.clone(), later).encode(&other_keys);
    let upload_link = Short::upload(id.clone(), later).encode(&keys);
    let handle_jwt = handle.strip_prefix("$uploadedFile:").unwrap().to_owned();
    let cases = [
        ("tampered", String::from_utf8(tampered).unwrap()),
        ("truncated", good[..good.len() - 10].to_owned()),
        ("expired", expired),
        ("unknown", "nonsense".to_owned()),
        ("other instance", other_instance),
        ("upload link", upload_link),
        ("handle", handle_jwt),
        ("bearer token", token),
    ];
    let mut bodies = Vec::new();
    for (what, t) in cases {
        let reply = request("GET", &format!("{base}{t}"), &[], None);
        assert_eq!(reply.status, 404, "{what}");
        bodies.push(reply.body);
    }
    assert!(bodies.windows(2).all(|w| w[0] == w[1]), "404 bodies differ");

    // None of them spent the real link.
    assert_eq!(request("GET", &url, &[], None).status, 200);
    let spent = request("GET", &url, &[], None);
    assert_eq!(spent.status, 404);
    assert_eq!(spent.body, bodies[0]);
}

#[test]
fn a_wrong_method_on_a_link_is_405_with_allow_and_does_not_spend_it() {
    let (server, _dir) = Server::start();
    let (_, _, url) = setup(&server);
    for method in ["POST", "PUT", "DELETE", "PATCH"] {
        let reply = request(method, &url, &[], None);
        assert_eq!(reply.status, 405, "{method}");
        assert_eq!(reply.header("allow"), Some("GET, HEAD"), "{method}");
    }
    assert_eq!(request("GET", &url, &[], None).status, 200);

    let upload = request("DELETE", &format!("{}/u/x", server.base), &[], None);
    assert_eq!(upload.status, 405);
    assert_eq!(upload.header("allow"), Some("GET, HEAD, PUT, PATCH"));
}

#[test]
fn uploads_need_a_valid_bearer_token_with_the_write_scope() {
    let (server, _dir) = Server::start();
    let url = format!("{}/uploads", server.base);
    let body = serde_json::json!({"filename": "a", "size": 1, "sha256": sluice::Sha256::of(b"a").to_hex()});

    let missing = post_json(&url, None, &body);
    assert_eq!(missing.status, 401);
    assert!(
        missing
            .header("www-authenticate")
            .unwrap()
            .starts_with("Bearer")
    );

    let read_only = server.token("alice", &["files:read"]);
    let reply = post_json(&url, Some(&read_only), &body);
    assert_eq!(reply.status, 403);
    assert!(
        reply
            .header("www-authenticate")
            .unwrap()
            .contains("insufficient_scope")
    );
    assert!(reply.message().contains("files:write"));

    let other_dir = tempfile::tempdir().unwrap();
    let foreign = crate::util::token_for(other_dir.path(), "alice", &["files:write"]);
    assert_eq!(post_json(&url, Some(&foreign), &body).status, 401);
}

#[test]
fn a_handle_or_link_token_is_never_a_bearer_token() {
    let (server, _dir) = Server::start();
    let (_, handle, url) = setup(&server);
    let body = serde_json::json!({"filename": "a", "size": 1, "sha256": sluice::Sha256::of(b"a").to_hex()});
    let uploads = format!("{}/uploads", server.base);
    let link_jwt = url.rsplit('/').next().unwrap();
    for t in [
        handle.as_str(),
        handle.strip_prefix("$uploadedFile:").unwrap(),
        link_jwt,
    ] {
        let reply = post_json(&uploads, Some(t), &body);
        assert_eq!(reply.status, 401, "{}", reply.text());
    }
    // The link was not touched by any of that.
    assert_eq!(request("GET", &url, &[], None).status, 200);
}

#[test]
fn another_users_handle_is_refused_but_a_resolving_service_may_redeem_it() {
    let (server, _dir) = Server::start();
    let (_, handle, _) = setup(&server);
    let bob = server.token("bob", &["files:read"]);
    let reply = server.resolve(&bob, &handle);
    assert_eq!(reply.status, 403);
    assert!(reply.message().contains("issued to another user"));

    let service = server.token("backend", &["files:resolve"]);
    let reply = server.resolve(&service, &handle);
    assert_eq!(reply.status, 200, "{}", reply.text());
    assert_eq!(
        request(
            "GET",
            reply.json()["download"]["url"].as_str().unwrap(),
            &[],
            None
        )
        .body,
        b"hello"
    );
}

#[test]
fn an_expired_or_garbled_handle_says_what_to_do() {
    let (server, _dir) = Server::start();
    let (token, handle, _) = setup(&server);
    let keys = sluice_runtime::local_keyring(&config_for(&server.data_dir)).unwrap();
    // A handle whose record is gone (swept when it expired).
    let _ = handle;
    let swept = sluice::token::Short::handle(sluice::FileId::random()).encode(&keys);
    let reply = server.resolve(&token, &format!("$uploadedFile:{swept}"));
    assert_eq!(reply.status, 400);
    // A REST answer names the REST step, never a tool.
    assert!(
        reply
            .message()
            .contains("has expired: request a new upload (POST /uploads)"),
        "{}",
        reply.message()
    );
    assert!(!reply.message().contains("request_upload"));

    let reply = server.resolve(&token, "$uploadedFile:garbage");
    assert_eq!(reply.status, 400);
    assert!(reply.message().contains("not a valid handle"));
    // An access token pasted as a handle is refused the same way.
    let reply = server.resolve(&token, &token);
    assert_eq!(reply.status, 400);
}

#[test]
fn hostile_filenames_are_stored_under_a_sanitized_name() {
    let (server, _dir) = Server::start();
    let token = server.token("alice", &[]);
    let data = bytes(10, 9);
    let name = "../../etc/pass\u{1}wd;\"x\"";
    let ticket = server.request_upload(&token, name, &data);
    let put = request(
        "PUT",
        ticket["upload"]["url"].as_str().unwrap(),
        &[],
        Some(&data),
    );
    assert_eq!(put.status, 200);
    let objects = stored_objects(&server.data_dir);
    assert_eq!(objects.len(), 1);
    let stored = objects[0]
        .strip_prefix(server.data_dir.join("objects"))
        .unwrap();
    assert_eq!(stored.components().count(), 4, "{}", stored.display());
    assert_eq!(stored.file_name().unwrap(), "_._etc_passwd__x_");
    let download = server.download_ticket(&token, ticket["handle"].as_str().unwrap());
    assert_eq!(download["filename"], name);
}

/// A short handle expires with its file's record: past it, the same clear
/// refusal as any expired handle, and nothing resolved.
#[test]
fn a_short_handle_expires_with_its_file() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start_in(
        dir.path(),
        &[
            // Long enough for the upload on a busy machine.
            ("SLUICE_HANDLE_TTL_SECS", "5"),
            ("SLUICE_UPLOAD_TTL_SECS", "5"),
        ],
    );
    let (token, handle, _) = setup(&server);
    assert_eq!(server.resolve(&token, &handle).status, 200);
    std::thread::sleep(std::time::Duration::from_secs(6));
    let reply = server.resolve(&token, &handle);
    assert_eq!(reply.status, 400, "{}", reply.text());
    assert!(reply.message().contains("has expired"), "{}", reply.text());
}

/// An upload link dies with its file's record (P8): never issued for
/// longer than the record lives, even by a page started again late, and
/// once the record has expired every route of the link is the uniform
/// 404, a file in parts included. (Before: a page started again got a link
/// for a whole upload lifetime more, and bytes could arrive for a file
/// whose record had expired.)
#[test]
fn an_upload_link_dies_with_its_files_record() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start_in(
        dir.path(),
        &[
            ("SLUICE_HANDLE_TTL_SECS", "4"),
            ("SLUICE_UPLOAD_TTL_SECS", "4"),
            ("SLUICE_PART_BYTES", "5242880"),
            ("SLUICE_SINGLE_PUT_MAX_BYTES", "1048576"),
        ],
    );
    let token = server.token("alice", &[]);
    let small = b"a file whose record expires".to_vec();
    let big = crate::util::bytes(6 * 1024 * 1024, 61);
    let parted = server.request_upload(&token, "big.bin", &big);
    let page = crate::util::tool_ok(&crate::util::call_tool(
        &server.base,
        &token,
        "request_browser_upload",
        serde_json::json!({}),
    ));
    let start = || {
        let answer = crate::util::post_json(
            &format!("{}/start", page["page_url"].as_str().unwrap()),
            None,
            &serde_json::json!({"filename": "small.txt", "size": small.len(), "sha256": sluice::Sha256::of(&small)}),
        );
        assert_eq!(answer.status, 200, "{}", answer.text());
        answer.json()["upload"].clone()
    };
    let recorded_until = sluice::time::now_unix() + 4;
    start();
    std::thread::sleep(std::time::Duration::from_secs(2));
    let late = start();
    // Both RFC 3339 in UTC, to the second: they compare as text.
    for upload in [&late, &parted["upload"]] {
        let expires = upload["expires_at"].as_str().unwrap();
        assert!(
            expires <= sluice::time::rfc3339(recorded_until + 1).as_str(),
            "the link lives no longer than its record: {upload}"
        );
    }
    std::thread::sleep(std::time::Duration::from_secs(4));
    let put = request("PUT", late["url"].as_str().unwrap(), &[], Some(&small));
    assert_eq!(put.status, 404, "{}", put.text());
    let link = parted["upload"]["url"].as_str().unwrap();
    for (method, path) in [("GET", "/sh"), ("GET", "/parts"), ("POST", "/complete")] {
        let answer = request(method, &format!("{link}{path}"), &[], None);
        assert_eq!(answer.status, 404, "{method} {path}: {}", answer.text());
    }
}
