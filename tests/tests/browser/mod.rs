//! The browser upload page in a real browser (Debian's Chromium driven by
//! playwright-core, `tests/clients/browser.mjs`): a person opens the page
//! the model was given, picks a file, sees it hashed and uploaded with
//! progress, and the model then gets the handle with `get_upload_status`
//! through MCP; the handle's download matches byte for byte. Refusals (a
//! used page, an expired page, a dropped connection) are shown in words,
//! and keyboard-only use works. Screenshots of each state are written to
//! `target/browser-artifacts/`.

mod large;
mod many;

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{Value, json};

use crate::mcp_clients::root;
use crate::util::{Server, bytes, call_tool, request, tool_ok};

pub(crate) fn shots() -> PathBuf {
    let dir = root().join("target/browser-artifacts");
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Runs the page in Chromium in `mode`; returns the checks it reported.
pub(crate) fn browse(
    page_url: &str,
    file: &Path,
    mode: &str,
    prefix: &str,
    width: u32,
) -> Vec<String> {
    let out = Command::new("node")
        .arg(root().join("tests/clients/browser.mjs"))
        .args(["--page", page_url, "--mode", mode, "--prefix", prefix])
        .arg("--file")
        .arg(file)
        .arg("--shots")
        .arg(shots())
        .args(["--width", &width.to_string()])
        .current_dir(root().join("tests/clients"))
        .output()
        .expect("node runs (make test installs playwright-core and Debian's chromium)");
    crate::util::client_checks("browser.mjs", &out)
}

fn request_page(server: &Server, token: &str, filename: &str) -> Value {
    tool_ok(&call_tool(
        &server.base,
        token,
        "request_browser_upload",
        json!({"filename": filename}),
    ))
}

fn status(server: &Server, token: &str, upload_id: &str) -> Value {
    tool_ok(&call_tool(
        &server.base,
        token,
        "get_upload_status",
        json!({"upload_id": upload_id}),
    ))
}

/// What the model gets of a page's upload once the person is done.
struct Fetched {
    /// `get_upload_status`'s answer (asserted `ready`).
    ready: Value,
    /// The bytes its handle's download link delivers.
    body: Vec<u8>,
    /// Whether the link redirected to the store (S3).
    redirected: bool,
}

/// Asserts the upload `upload_id` ready, and fetches its bytes through a
/// download link for its handle (following a redirect to the store).
fn fetch_ready(server: &Server, token: &str, upload_id: &str) -> Fetched {
    let ready = status(server, token, upload_id);
    assert_eq!(ready["state"], "ready", "{ready}");
    let link = server.download_url(token, ready["handle"].as_str().unwrap());
    let got = request("GET", &link, &[], None);
    let redirected = got.status == 307;
    let body = match got.header("location") {
        Some(location) if redirected => request("GET", location, &[], None).body,
        _ => got.body,
    };
    Fetched {
        ready,
        body,
        redirected,
    }
}

#[test]
fn a_person_uploads_through_the_page_and_the_model_gets_the_handle() {
    let (server, _dir) = Server::start();
    let token = server.token("alice", &[]);
    let name = "rapport final;v2 (été).pdf";
    let page = request_page(&server, &token, name);
    let (page_url, upload_id) = (
        page["page_url"].as_str().unwrap().to_owned(),
        page["upload_id"].as_str().unwrap().to_owned(),
    );
    assert_eq!(status(&server, &token, &upload_id)["state"], "pending");

    // The page itself: never cached, no referrer, a strict policy.
    let got = request("GET", &page_url, &[], None);
    assert_eq!(got.status, 200);
    assert_eq!(got.header("cache-control"), Some("no-store"));
    assert_eq!(got.header("referrer-policy"), Some("no-referrer"));
    let csp = got.header("content-security-policy").unwrap();
    assert!(
        csp.contains("default-src 'none'") && csp.contains("script-src 'self'"),
        "{csp}"
    );
    assert!(!got.text().contains("<script>"), "no inline script");

    let work = tempfile::tempdir().unwrap();
    let file = work.path().join(name);
    let data = bytes(50 * 1024 * 1024, 13);
    std::fs::write(&file, &data).unwrap();
    let checks = browse(&page_url, &file, "upload", "", 900);
    crate::util::assert_checks(
        &checks,
        &[
            "progress shown",
            "upload done",
            "no third-party requests, no CSP violation",
        ],
    );

    let fetched = fetch_ready(&server, &token, &upload_id);
    assert_eq!(fetched.ready["filename"], name);
    assert_eq!(fetched.ready["size"], data.len());
    assert!(
        !fetched.redirected,
        "the local store streams the bytes itself"
    );
    assert!(fetched.body == data, "byte for byte");

    // The same page again, with another file: refused in words.
    let other = work.path().join("other.txt");
    std::fs::write(&other, b"another file").unwrap();
    let checks = browse(&page_url, &other, "used", "", 900);
    assert!(
        checks.iter().any(|c| c == "second upload refused in words"),
        "{checks:?}"
    );

    // Another user cannot see it: the id is not theirs, and says nothing.
    let bob = server.token("bob", &[]);
    let refused = crate::util::call_tool(
        &server.base,
        &bob,
        "get_upload_status",
        json!({"upload_id": upload_id}),
    );
    assert!(crate::util::tool_error(&refused).contains("not an upload_id"));
}

#[test]
fn a_dropped_connection_is_explained_and_try_again_works_at_320_px() {
    let (server, _dir) = Server::start();
    let token = server.token("alice", &[]);
    let page = request_page(&server, &token, "notes.txt");
    let work = tempfile::tempdir().unwrap();
    let file = work.path().join("notes.txt");
    let data = bytes(2 * 1024 * 1024, 14);
    std::fs::write(&file, &data).unwrap();
    let checks = browse(
        page["page_url"].as_str().unwrap(),
        &file,
        "network",
        "narrow-",
        320,
    );
    assert!(
        checks
            .iter()
            .any(|c| c == "network failure explained, then Try again uploads"),
        "{checks:?}"
    );
    let ready = status(&server, &token, page["upload_id"].as_str().unwrap());
    assert_eq!(ready["state"], "ready", "{ready}");
    assert_eq!(ready["sha256"], sluice::Sha256::of(&data).to_hex());
}

#[test]
fn the_page_works_from_the_keyboard_alone() {
    let (server, _dir) = Server::start();
    let token = server.token("alice", &[]);
    let page = request_page(&server, &token, "a.txt");
    let work = tempfile::tempdir().unwrap();
    let file = work.path().join("a.txt");
    std::fs::write(&file, b"typed, not clicked").unwrap();
    let checks = browse(
        page["page_url"].as_str().unwrap(),
        &file,
        "keyboard",
        "",
        900,
    );
    assert!(
        checks.iter().any(|c| c == "keyboard: Tab, Space, choose"),
        "{checks:?}"
    );
    assert!(checks.iter().any(|c| c == "upload done"), "{checks:?}");
    let ready = status(&server, &token, page["upload_id"].as_str().unwrap());
    assert_eq!(ready["state"], "ready", "{ready}");
}

#[test]
fn an_expired_page_says_so() {
    let (server, _dir) = Server::start();
    let keys = sluice_runtime::local_keyring(&crate::util::config_for(&server.data_dir)).unwrap();
    let expired = sluice::token::PageToken {
        owner: "alice".into(),
        file_id: sluice::FileId::random(),
        filename: None,
        content_type: None,
        max_size: 1024,
        files: 1,
        expires_at: 1,
    }
    .encode(&keys);
    let work = tempfile::tempdir().unwrap();
    let file = work.path().join("a.txt");
    std::fs::write(&file, b"too late").unwrap();
    let url = format!("{}/browser/{expired}", server.base);
    let checks = browse(&url, &file, "expired", "", 900);
    assert!(
        checks.iter().any(|c| c == "expired page explained"),
        "{checks:?}"
    );
    // The upload_id of an expired page, never used, is `expired`.
    let token = server.token("alice", &[]);
    let id = sluice::service::links::upload_id(&keys, "alice", &sluice::FileId::random(), 1, 1);
    assert_eq!(status(&server, &token, &id)["state"], "expired");
}

/// S3's CORS rule for the page's PUT, as template.yaml declares it: the
/// headers a preflight may ask for.
pub(crate) fn template_cors_headers() -> Vec<String> {
    let text = std::fs::read_to_string(root().join("template.yaml")).unwrap();
    let start = text.find("CorsRules:").expect("a CORS rule");
    let line = text[start..]
        .lines()
        .find(|l| l.trim_start().starts_with("AllowedHeaders:"))
        .unwrap();
    line.split_once('[')
        .unwrap()
        .1
        .trim_end_matches(']')
        .split(',')
        .map(|h| h.trim().to_ascii_lowercase())
        .collect()
}

/// In front of s3s-fs, which verifies presigned PUTs but has no CORS: a
/// stand-in for S3's CORS handling that applies the template's rule (a
/// preflight from an origin not in `origins`, when any are given, or asking
/// for any other header is refused) and adds the allow header to responses;
/// everything else passes through unchanged, Host included, so s3s-fs
/// checks the very signature the browser sends. One request per connection.
pub(crate) fn cors_front(upstream: String, allowed: Vec<String>, origins: Vec<String>) -> String {
    use std::io::{BufRead as _, BufReader, Read as _, Write as _};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        for client in listener.incoming().flatten() {
            let (upstream, allowed, origins) = (upstream.clone(), allowed.clone(), origins.clone());
            std::thread::spawn(move || {
                let mut reader = BufReader::new(client.try_clone().unwrap());
                let mut head = String::new();
                let mut line = String::new();
                while reader.read_line(&mut line).is_ok_and(|n| n > 0) {
                    head.push_str(&line);
                    if line == "\r\n" {
                        break;
                    }
                    line.clear();
                }
                let header = |name: &str| {
                    head.lines().find_map(|l| {
                        let (k, v) = l.split_once(':')?;
                        k.eq_ignore_ascii_case(name).then(|| v.trim().to_owned())
                    })
                };
                let origin = header("origin").unwrap_or_default();
                let mut client = client;
                if head.starts_with("OPTIONS ") {
                    let asked = header("access-control-request-headers").unwrap_or_default();
                    let ok = asked
                        .split(',')
                        .map(|h| h.trim().to_ascii_lowercase())
                        .filter(|h| !h.is_empty())
                        .all(|h| allowed.contains(&h))
                        && (origins.is_empty() || origins.contains(&origin));
                    let answer = if ok {
                        format!(
                            "HTTP/1.1 200 OK\r\nAccess-Control-Allow-Origin: {origin}\r\nAccess-Control-Allow-Methods: PUT\r\nAccess-Control-Allow-Headers: {asked}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
                        )
                    } else {
                        "HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
                            .to_owned()
                    };
                    let _ = client.write_all(answer.as_bytes());
                    return;
                }
                let length: usize = header("content-length")
                    .and_then(|v| v.parse().ok())
                    .unwrap_or(0);
                let mut server = std::net::TcpStream::connect(&upstream).unwrap();
                let head = head.replacen("\r\n\r\n", "\r\nConnection: close\r\n\r\n", 1);
                server.write_all(head.as_bytes()).unwrap();
                let mut body = reader.take(length as u64);
                if std::io::copy(&mut body, &mut server).is_err() {
                    return;
                }
                let mut response = Vec::new();
                let _ = server.read_to_end(&mut response);
                let text_end = response
                    .windows(4)
                    .position(|w| w == b"\r\n\r\n")
                    .unwrap_or(0);
                let mut out = response[..text_end].to_vec();
                out.extend_from_slice(
                    format!("\r\nAccess-Control-Allow-Origin: {origin}").as_bytes(),
                );
                out.extend_from_slice(&response[text_end..]);
                let _ = client.write_all(&out);
            });
        }
    });
    url
}

/// The page on the AWS backends: the browser PUTs straight to S3 (s3s-fs,
/// verifying the presigned signature, size and digest) under the template's
/// CORS rule, and the page's policy allows exactly that origin.
#[test]
fn the_page_uploads_straight_to_s3() {
    let emulators = crate::util::Emulators::start();
    crate::util::provision(&emulators, "browser");
    let front = cors_front(
        emulators.s3_url.trim_start_matches("http://").to_owned(),
        template_cors_headers(),
        Vec::new(),
    );
    // Files over 4 MiB go in parts of 5 MiB (S3's smallest).
    let (server, _dir) = crate::util::aws_server(
        &emulators,
        "browser",
        &[
            ("SLUICE_S3_ENDPOINT_URL", &front),
            ("SLUICE_PART_BYTES", "5242880"),
            ("SLUICE_SINGLE_PUT_MAX_BYTES", "4194304"),
        ],
    );
    let token = crate::util::aws_token(&emulators, "alice", &[]);
    let page = request_page(&server, &token, "scan.pdf");
    let page_url = page["page_url"].as_str().unwrap();
    let csp = request("GET", page_url, &[], None)
        .header("content-security-policy")
        .unwrap()
        .to_owned();
    assert!(
        csp.contains(&format!("connect-src 'self' {front}")),
        "{csp}"
    );

    let work = tempfile::tempdir().unwrap();
    let file = work.path().join("scan.pdf");
    let data = bytes(3 * 1024 * 1024, 15);
    std::fs::write(&file, &data).unwrap();
    // A start before the page has hashed the file is told to hash first
    // (428): S3 takes no digest with the last bytes. Nothing is issued.
    let early = crate::util::post_json(
        &format!("{page_url}/start"),
        None,
        &json!({"filename": "scan.pdf", "size": data.len()}),
    );
    assert_eq!(early.status, 428, "{}", early.text());
    assert!(early.text().contains("hash the file"), "{}", early.text());
    let listed = tool_ok(&call_tool(&server.base, &token, "list_files", json!({})));
    assert_eq!(listed["files"], json!([]), "{listed}");
    let checks = browse(page_url, &file, "upload", "s3-", 900);
    assert!(checks.iter().any(|c| c == "upload done"), "{checks:?}");
    let fetched = fetch_ready(&server, &token, page["upload_id"].as_str().unwrap());
    assert!(fetched.redirected, "downloads come from S3");
    assert!(fetched.body == data, "byte for byte");

    // A larger file from another page: its parts straight to S3 at
    // presigned UploadPart URLs (the part's SHA-256 a signed header, which
    // the CORS rule admits), proven by sluice.
    let page = request_page(&server, &token, "big.bin");
    let big = work.path().join("big.bin");
    let data = bytes(12 * 1024 * 1024 + 9, 16);
    std::fs::write(&big, &data).unwrap();
    let checks = browse(
        page["page_url"].as_str().unwrap(),
        &big,
        "upload",
        "s3-parts-",
        900,
    );
    assert!(checks.iter().any(|c| c == "upload done"), "{checks:?}");
    let fetched = fetch_ready(&server, &token, page["upload_id"].as_str().unwrap());
    assert!(fetched.redirected, "downloads come from S3");
    assert!(fetched.body == data, "byte for byte");
}

/// The page's and the widget's incremental SHA-256 (the vendored
/// `@noble/hashes`, used above 512 MiB, where WebCrypto would need the whole
/// file in memory) equals Node's on every length up to 300 bytes in every
/// chunking, and on 3 MiB; and the vendored file is a fresh build of the
/// pinned release (`make vendor`).
#[test]
fn the_pages_incremental_sha256_is_sha256() {
    let out = Command::new("node")
        .arg(root().join("tests/clients/sha256-check.mjs"))
        .current_dir(root().join("tests/clients"))
        .output()
        .unwrap();
    let checks = crate::util::client_checks("sha256-check.mjs", &out);
    assert!(
        checks
            .iter()
            .any(|c| c.ends_with("digests equal to node:crypto")),
        "{checks:?}"
    );
    assert!(
        checks.iter().any(|c| c.ends_with("is a fresh build")),
        "{checks:?}"
    );
}

/// URL elicitation: a client that declares it (the official Python client,
/// on 2026-07-28) is given request_browser_upload's page to show the
/// person itself, and its calls again say what they wait for, then give
/// the handle; a client that does not gets the page's URL as before
/// (`tests/clients/elicit.py`).
#[test]
fn a_client_with_url_elicitation_shows_the_page_and_gets_the_handle() {
    let python = root().join(".venv/bin/python");
    let checks = crate::mcp_clients::round_trip(&python, "elicit.py", &[]);
    assert_eq!(checks.len(), 4, "{checks:?}");
    assert!(
        checks[2].contains("the handle, bytes identical"),
        "{checks:?}"
    );
}

/// Three files in `dir`, named `names` (the second, of 6 MiB, in parts
/// where parts are 5 MiB), and their paths as one comma-separated list.
pub(crate) fn three_files(
    dir: &Path,
    names: [&str; 3],
    seed: u64,
) -> (Vec<(PathBuf, Vec<u8>)>, String) {
    let files: Vec<(PathBuf, Vec<u8>)> = names
        .iter()
        .zip([1000, 6 << 20, 70_000])
        .enumerate()
        .map(|(i, (name, size))| {
            let path = dir.join(name);
            let data = bytes(size, seed + i as u64);
            std::fs::write(&path, &data).unwrap();
            (path, data)
        })
        .collect();
    let list = files
        .iter()
        .map(|(p, _)| p.display().to_string())
        .collect::<Vec<_>>()
        .join(",");
    (files, list)
}

/// `ready` (a page's status) has every one of `files`, in order, each
/// downloading byte for byte through its handle.
pub(crate) fn all_picked(
    server: &Server,
    token: &str,
    ready: &Value,
    files: &[(PathBuf, Vec<u8>)],
) {
    assert_eq!(ready["state"], "ready", "{ready}");
    let picked = ready["files"].as_array().unwrap();
    assert_eq!(picked.len(), files.len(), "{ready}");
    for ((path, data), got) in files.iter().zip(picked) {
        let name = path.file_name().unwrap().to_str().unwrap();
        assert_eq!(got["filename"], name);
        let link = server.download_url(token, got["handle"].as_str().unwrap());
        assert!(
            request("GET", &link, &[], None).body == *data,
            "{name} byte for byte"
        );
    }
}
