//! The whole flow with the command lines the server returns: upload with the
//! upload curl line, download with the download curl line, same bytes.

use crate::util::{Server, bytes, out_text, sh};

fn round_trip(server: &Server, filename: &str, data: &[u8]) {
    let token = server.token("alice", &["files:read", "files:write"]);
    let ticket = server.upload(&token, filename, data);
    let download = server.download_ticket(&token, ticket["handle"].as_str().unwrap());
    assert_eq!(download["size"], data.len());
    assert_eq!(download["sha256"], sluice::Sha256::of(data).to_hex());
    assert_eq!(download["filename"], filename);

    let work = tempfile::tempdir().unwrap();
    let out = sh(download["command"].as_str().unwrap(), work.path());
    assert!(out.status.success(), "download failed: {}", out_text(&out));
    let saved = work.path().join(sluice::filename::safe_name(filename));
    assert_eq!(std::fs::read(&saved).unwrap(), data, "{filename}");
}

#[test]
fn an_empty_file_round_trips() {
    let (server, _dir) = Server::start();
    round_trip(&server, "empty.bin", b"");
}

#[test]
fn a_one_byte_file_round_trips() {
    let (server, _dir) = Server::start();
    round_trip(&server, "one.txt", b"x");
}

#[test]
fn a_five_mebibyte_file_round_trips() {
    let (server, _dir) = Server::start();
    round_trip(&server, "big.bin", &bytes(5 * 1024 * 1024, 7));
}

#[test]
fn odd_names_round_trip_through_the_shell() {
    let (server, _dir) = Server::start();
    for (i, name) in [
        "rapport final;v2 (été).pdf",
        "it's.txt",
        "-rf",
        "$(echo pwned).txt",
        "a \"quoted\" name.csv",
    ]
    .into_iter()
    .enumerate()
    {
        round_trip(&server, name, &bytes(1000 + i, i as u64));
    }
}

#[test]
fn the_upload_line_sends_exactly_the_returned_headers_and_no_credential() {
    let (server, _dir) = Server::start();
    let token = server.token("alice", &[]);
    let ticket = server.request_upload(&token, "report.pdf", b"%PDF");
    let curl = ticket["command"].as_str().unwrap();
    assert!(!curl.contains(&token), "{curl}");
    assert!(
        !curl.to_ascii_lowercase().contains("authorization"),
        "{curl}"
    );
    assert!(curl.contains("--fail-with-body"));
    // Locally the line sends the file as a resumable (tus) stream, whose
    // requests carry tus's own headers; a program that PUTs the whole file
    // sends the ones returned.
    assert!(
        curl.contains("f='report.pdf'") && curl.contains("-T \"$f\""),
        "{curl}"
    );
    assert!(
        curl.contains("-H Content-Type:application/offset+octet-stream"),
        "{curl}"
    );
    assert_eq!(ticket["upload"]["method"], "PUT");
    assert_eq!(
        ticket["upload"]["headers"],
        serde_json::json!({"Content-Type": "application/pdf"})
    );
    assert!(
        ticket["handle"]
            .as_str()
            .unwrap()
            .starts_with("$uploadedFile:")
    );
    assert!(
        ticket["upload"]["expires_at"]
            .as_str()
            .unwrap()
            .ends_with('Z')
    );
}
