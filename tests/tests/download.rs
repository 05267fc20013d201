//! `GET /l/{token}`: single use, the right headers, and verification of
//! the stored bytes on the way out.

use sluice::token::Short;

use crate::util::{Server, bytes, config_for, out_text, request, sh, stored_objects};

/// Uploads `data` as alice and returns (handle, download URL).
fn uploaded(server: &Server, name: &str, data: &[u8]) -> (String, String) {
    let token = server.token("alice", &[]);
    let ticket = server.upload(&token, name, data);
    let handle = ticket["handle"].as_str().unwrap().to_owned();
    let url = server.download_url(&token, &handle);
    (handle, url)
}

#[test]
fn a_link_works_once() {
    let (server, _dir) = Server::start();
    let data = bytes(100, 1);
    let (_, url) = uploaded(&server, "a.bin", &data);
    let first = request("GET", &url, &[], None);
    assert_eq!(first.status, 200);
    assert_eq!(first.body, data);
    let second = request("GET", &url, &[], None);
    assert_eq!(second.status, 404);
}

#[test]
fn a_download_carries_safe_headers() {
    let (server, _dir) = Server::start();
    let (_, url) = uploaded(&server, "rapport final;v2 (été).pdf", b"%PDF-1.7");
    let reply = request("GET", &url, &[], None);
    assert_eq!(reply.status, 200);
    assert_eq!(reply.header("content-type"), Some("application/pdf"));
    assert_eq!(reply.header("content-length"), Some("8"));
    assert_eq!(reply.header("cache-control"), Some("no-store"));
    assert_eq!(reply.header("x-content-type-options"), Some("nosniff"));
    assert_eq!(
        reply.header("content-disposition"),
        Some(
            "attachment; filename=\"rapport final_v2 (_t_).pdf\"; \
             filename*=UTF-8''rapport%20final_v2%20%28%C3%A9t%C3%A9%29.pdf"
        )
    );
}

#[test]
fn a_small_corrupted_object_is_a_409_before_any_byte_and_the_link_is_not_spent() {
    let (server, _dir) = Server::start();
    let data = bytes(4096, 2);
    let (_, url) = uploaded(&server, "a.bin", &data);
    let object = stored_objects(&server.data_dir).pop().unwrap();
    let mut corrupt = data.clone();
    corrupt[10] ^= 0xff;
    std::fs::write(&object, &corrupt).unwrap();

    let reply = request("GET", &url, &[], None);
    assert_eq!(reply.status, 409, "{}", reply.text());
    assert!(!reply.body.windows(16).any(|w| w == &corrupt[..16]));

    // Repaired, the same link still works: the refusal did not spend it.
    std::fs::write(&object, &data).unwrap();
    let reply = request("GET", &url, &[], None);
    assert_eq!(reply.status, 200);
    assert_eq!(reply.body, data);
}

#[test]
fn a_large_corrupted_object_is_cut_short_so_no_complete_wrong_file_arrives() {
    let (server, _dir) = Server::start();
    let data = bytes(3 * 1024 * 1024, 3);
    let (_, url) = uploaded(&server, "big.bin", &data);
    let object = stored_objects(&server.data_dir).pop().unwrap();
    let mut corrupt = data.clone();
    let last = corrupt.len() - 1;
    corrupt[last] ^= 0xff;
    std::fs::write(&object, &corrupt).unwrap();

    let work = tempfile::tempdir().unwrap();
    let out = sh(
        &format!(
            "curl --fail-with-body -sS -o got {}",
            sluice::curl::shell_quote(&url)
        ),
        work.path(),
    );
    assert!(!out.status.success(), "{}", out_text(&out));
    let got = std::fs::metadata(work.path().join("got"))
        .map(|m| m.len())
        .unwrap_or(0);
    assert!(got < data.len() as u64, "received {got} bytes");
}

#[test]
fn a_link_to_an_object_not_yet_uploaded_is_404_and_not_spent() {
    let (server, _dir) = Server::start();
    let token = server.token("alice", &[]);
    let data = b"later";
    let ticket = server.request_upload(&token, "later.txt", data);
    let handle = ticket["handle"].as_str().unwrap();
    // The resolver refuses to issue a link for a file not uploaded yet…
    let reply = server.resolve(&token, handle);
    assert_eq!(reply.status, 409);
    assert!(
        reply.message().contains("not been uploaded"),
        "{}",
        reply.message()
    );

    // …and a link minted anyway finds nothing, without being spent.
    let keys = sluice_runtime::local_keyring(&config_for(&server.data_dir)).unwrap();
    let id = crate::util::handle_file_id(&server.data_dir, handle);
    let link = Short::download(id, sluice::time::now_unix() + 60);
    let url = format!("{}/l/{}", server.base, link.encode(&keys));
    assert_eq!(request("GET", &url, &[], None).status, 404);
    let put = request(
        "PUT",
        ticket["upload"]["url"].as_str().unwrap(),
        &[],
        Some(data),
    );
    assert_eq!(put.status, 200);
    let reply = request("GET", &url, &[], None);
    assert_eq!(reply.status, 200);
    assert_eq!(reply.body, data);
}

#[test]
fn the_download_line_fails_loudly_on_a_spent_link() {
    let (server, _dir) = Server::start();
    let token = server.token("alice", &[]);
    let ticket = server.upload(&token, "x.txt", b"x");
    let download = server.download_ticket(&token, ticket["handle"].as_str().unwrap());
    let line = download["command"].as_str().unwrap();
    let work = tempfile::tempdir().unwrap();
    assert!(sh(line, work.path()).status.success());
    let again = sh(line, work.path());
    assert!(!again.status.success(), "{}", out_text(&again));
}

/// The download line run twice (the link is spent by then) fails loudly
/// and leaves the finished file as it was: the error body goes to the
/// temporary name, never over the file.
#[test]
fn running_the_download_line_again_never_replaces_the_file() {
    let (server, _dir) = Server::start();
    let data = bytes(3000, 9);
    let token = server.token("alice", &[]);
    let ticket = server.upload(&token, "report.pdf", &data);
    let line = server.download_ticket(&token, ticket["handle"].as_str().unwrap())["command"]
        .as_str()
        .unwrap()
        .to_owned();
    let work = tempfile::tempdir().unwrap();
    let first = sh(&line, work.path());
    assert!(first.status.success(), "{}", out_text(&first));
    assert_eq!(std::fs::read(work.path().join("report.pdf")).unwrap(), data);
    let again = sh(&line, work.path());
    assert!(!again.status.success(), "a spent link fails loudly");
    assert!(out_text(&again).contains("404"), "{}", out_text(&again));
    assert_eq!(
        std::fs::read(work.path().join("report.pdf")).unwrap(),
        data,
        "the finished file is untouched"
    );
}

/// A download opened and never read is cut off after the write timeout, and
/// the transfer slot it held is free again.
#[test]
fn a_download_never_read_is_cut_off_and_frees_its_slot() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start_in(
        dir.path(),
        &[
            ("SLUICE_WRITE_TIMEOUT_SECS", "2"),
            ("SLUICE_MAX_TRANSFERS", "1"),
        ],
    );
    // Larger than what the sockets' buffers take in.
    let data = bytes(32 << 20, 5);
    let token = server.token("alice", &[]);
    let handle = server.upload(&token, "big.bin", &data)["handle"]
        .as_str()
        .unwrap()
        .to_owned();
    let link = || server.download_url(&token, &handle);
    let stalled_url = link();
    let path = stalled_url.strip_prefix(&server.base).unwrap();
    // Sent, and never read.
    let stalled = crate::util::stalled_request(&server.base, &format!("GET {path} HTTP/1.1"), b"");
    // It holds the only slot: another download is refused for now (each
    // try with a link of its own: a refused one is spent).
    let started = std::time::Instant::now();
    let mut refused = false;
    loop {
        let reply = request("GET", &link(), &[], None);
        if reply.status == 503 {
            refused = true;
        } else {
            assert_eq!(reply.status, 200, "{}", reply.text());
            assert_eq!(reply.body.len(), data.len());
            break;
        }
        assert!(
            started.elapsed() < std::time::Duration::from_secs(30),
            "the stalled download still holds the slot"
        );
        std::thread::sleep(std::time::Duration::from_millis(300));
    }
    assert!(refused, "the stalled download held the slot at first");
    drop(stalled);
}

/// A download interrupted half-way is continued by a fresh link's line
/// (`Range` from the bytes already on disk: curl's `-C -` fails outright
/// if the server sends the whole file instead), verified whole, renamed;
/// streamed (over 1 MiB) and read whole (under) alike.
#[test]
fn an_interrupted_download_resumes_from_the_bytes_on_disk() {
    let (server, _dir) = Server::start();
    let token = server.token("alice", &[]);
    for size in [3 * 1024 * 1024 + 17, 5000] {
        let data = bytes(size, 4);
        let ticket = server.upload(&token, "data.bin", &data);
        let handle = ticket["handle"].as_str().unwrap();
        let work = tempfile::tempdir().unwrap();
        let partial = work
            .path()
            .join(sluice::curl::partial_name(&sluice::Sha256::of(&data)));
        std::fs::write(&partial, &data[..size / 2]).unwrap();
        let line = server.download_ticket(&token, handle)["command"]
            .as_str()
            .unwrap()
            .to_owned();
        let out = sh(&line, work.path());
        assert!(out.status.success(), "{}", out_text(&out));
        assert_eq!(std::fs::read(work.path().join("data.bin")).unwrap(), data);
        assert!(!partial.exists());

        // Every byte already there: the server answers 416 without
        // spending the link, curl takes that as done, and the file verifies.
        std::fs::write(&partial, &data).unwrap();
        let ticket = server.download_ticket(&token, handle);
        let url = ticket["download"]["url"].as_str().unwrap();
        let range = format!("bytes={size}-");
        let past = request("GET", url, &[("Range", &range)], None);
        assert_eq!(past.status, 416);
        assert_eq!(
            past.header("content-range"),
            Some(&*format!("bytes */{size}"))
        );
        let out = sh(ticket["command"].as_str().unwrap(), work.path());
        assert!(out.status.success(), "{}", out_text(&out));
        assert_eq!(std::fs::read(work.path().join("data.bin")).unwrap(), data);
        assert_eq!(
            request("GET", url, &[], None).status,
            200,
            "not spent by 416"
        );
    }
}

/// Partial bytes that are not this file's fail the check: they are
/// removed, the finished name is never written, and the next link's line
/// starts afresh. A `NAME.part` of the user's own (a browser's partial
/// download) is never touched: the line's partial file is its own.
#[test]
fn a_partial_file_that_does_not_verify_is_removed_not_renamed() {
    let (server, _dir) = Server::start();
    let token = server.token("alice", &[]);
    let data = bytes(2 * 1024 * 1024, 6);
    let handle = server.upload(&token, "d.bin", &data)["handle"]
        .as_str()
        .unwrap()
        .to_owned();
    let work = tempfile::tempdir().unwrap();
    let partial = work
        .path()
        .join(sluice::curl::partial_name(&sluice::Sha256::of(&data)));
    std::fs::write(&partial, bytes(1000, 99)).unwrap();
    std::fs::write(work.path().join("d.bin.part"), b"the user's own").unwrap();
    let line = |s: &Server| {
        s.download_ticket(&token, &handle)["command"]
            .as_str()
            .unwrap()
            .to_owned()
    };
    let out = sh(&line(&server), work.path());
    assert!(!out.status.success());
    assert!(
        out_text(&out).contains("not the file's sha256, removed"),
        "{}",
        out_text(&out)
    );
    assert!(!work.path().join("d.bin").exists());
    assert!(!partial.exists());
    assert_eq!(
        std::fs::read(work.path().join("d.bin.part")).unwrap(),
        b"the user's own"
    );
    let out = sh(&line(&server), work.path());
    assert!(out.status.success(), "{}", out_text(&out));
    assert_eq!(std::fs::read(work.path().join("d.bin")).unwrap(), data);
}
