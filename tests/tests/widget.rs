//! The upload inside the conversation (an MCP App). A test host built on
//! the official pieces (`tests/clients/apps-host.mjs`: the TypeScript SDK
//! client, and the `@modelcontextprotocol/ext-apps` host bridge in Debian's
//! Chromium) renders sluice's widget in a sandboxed iframe on an origin of
//! its own under the policy sluice declares; a person picks a file; the
//! model's side (the official Python client, `fetch_upload.py`) then gets
//! the handle and downloads the file byte for byte by running the returned
//! line. On both backends. Screenshots: `target/browser-artifacts/`.

use std::path::Path;
use std::process::Command;

use serde_json::{Value, json};

use crate::browser::{cors_front, shots, template_cors_headers};
use crate::mcp_clients::root;
use crate::util::{Server, bytes, call_tool, request, tool_ok};
// The sandbox origin's port, which sluice must be told before it starts.
use sluice_testkit::emulators::free_port;

/// Runs the test host: the widget, a file picked in it. Its checks and the
/// upload_id the widget reported to the host.
fn host(
    mcp_url: &str,
    token: &str,
    file: &Path,
    sandbox_port: u16,
    prefix: &str,
    extra: &[&str],
) -> (Vec<String>, String) {
    let out = Command::new("node")
        .arg(root().join("tests/clients/apps-host.mjs"))
        .args(["--url", mcp_url, "--token", token, "--prefix", prefix])
        .args(extra)
        .args(["--sandbox-port", &sandbox_port.to_string()])
        .arg("--file")
        .arg(file)
        .arg("--shots")
        .arg(shots())
        .current_dir(root().join("tests/clients"))
        .output()
        .expect("node runs (make test installs the clients and Debian's chromium)");
    let checks = crate::util::client_checks("apps-host.mjs", &out);
    let line = out
        .stdout
        .split(|b| *b == b'\n')
        .find(|l| l.starts_with(b"{"))
        .unwrap();
    let summary: Value = serde_json::from_slice(line).unwrap();
    (checks, summary["upload_id"].as_str().unwrap().to_owned())
}

/// The model's side: the Python client asks for the upload's status and a
/// download link, and runs the download line in `dir`.
fn model_fetches(mcp_url: &str, token: &str, upload_id: &str, dir: &Path) -> Value {
    let out = Command::new(root().join(".venv/bin/python"))
        .arg(root().join("tests/clients/fetch_upload.py"))
        .args(["--url", mcp_url, "--token", token, "--upload-id", upload_id])
        .arg("--dir")
        .arg(dir)
        .current_dir(root().join("tests/clients"))
        .output()
        .expect("the venv's python runs (make test installs it)");
    assert!(
        out.status.success(),
        "fetch_upload.py: {}",
        crate::util::out_text(&out)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// `resources/read` of the widget: its one content.
fn widget_content(server: &Server, token: &str) -> Value {
    let read = crate::util::mcp_call(
        &server.base,
        token,
        "resources/read",
        json!({"uri": "ui://sluice/upload.html"}),
    );
    read["contents"][0].clone()
}

/// A new page's start route, which the widget calls first.
fn start_route(server: &Server, token: &str) -> String {
    let page = tool_ok(&call_tool(
        &server.base,
        token,
        "request_browser_upload",
        json!({}),
    ));
    format!("{}/start", page["page_url"].as_str().unwrap())
}

/// A CORS preflight of a POST to `url` from `origin`.
fn preflight(url: &str, origin: &str) -> crate::util::Reply {
    request(
        "OPTIONS",
        url,
        &[
            ("origin", origin),
            ("access-control-request-method", "POST"),
            ("access-control-request-headers", "content-type"),
        ],
        None,
    )
}

/// A person picks `data` (as `notes.bin`) in the widget in the test host
/// (run with `extra`, its screenshots named with `prefix`), every check
/// passes and `also` among them; then the model's side downloads it, byte
/// for byte. What the model got.
fn picked_and_downloaded(
    mcp: &str,
    token: &str,
    sandbox: u16,
    data: &[u8],
    (prefix, extra, also): (&str, &[&str], Option<&str>),
) -> Value {
    let work = tempfile::tempdir().unwrap();
    let file = work.path().join("notes.bin");
    std::fs::write(&file, data).unwrap();
    let (checks, upload_id) = host(mcp, token, &file, sandbox, prefix, extra);
    every_check(&checks);
    if let Some(also) = also {
        assert!(checks.iter().any(|c| c == also), "{also}: {checks:?}");
    }
    let got = tempfile::tempdir().unwrap();
    let fetched = model_fetches(mcp, token, &upload_id, got.path());
    let downloaded = std::fs::read(got.path().join(fetched["filename"].as_str().unwrap())).unwrap();
    assert!(downloaded == data, "byte for byte");
    fetched
}

fn every_check(checks: &[String]) {
    crate::util::assert_checks(
        checks,
        &[
            "initialize: the extension announced and answered",
            "tools/list: _meta.ui.resourceUri and ui/resourceUri",
            "resources/read: text/html;profile=mcp-app, CSP origins, domain",
            "widget rendered in the sandbox, ready",
            "widget upload done",
            "the host was told: ui/update-model-context and ui/message",
            "no file bytes through MCP or the host",
            "CSP exact: an undeclared origin is blocked",
        ],
    );
}

/// The page's requests of a resumable upload are of 5 MiB, and a file
/// over 4 MiB goes in parts where the store takes them.
const IN_PARTS_OF_5_MIB: &[(&str, &str)] = &[
    ("SLUICE_PART_BYTES", "5242880"),
    ("SLUICE_SINGLE_PUT_MAX_BYTES", "4194304"),
];

/// A local server whose widget runs at a sandbox origin of its own (on a
/// free port), with `env` besides: the server, its data directory, the
/// sandbox's port, and alice's token.
fn widget_server(env: &[(&str, &str)]) -> (Server, tempfile::TempDir, u16, String) {
    let sandbox = free_port();
    let origin = format!("http://localhost:{sandbox}");
    let dir = tempfile::tempdir().unwrap();
    let mut all = vec![("SLUICE_WIDGET_ORIGINS", origin.as_str())];
    all.extend_from_slice(env);
    let server = Server::start_in(dir.path(), &all);
    let token = server.token("alice", &[]);
    (server, dir, sandbox, token)
}

#[test]
fn a_person_uploads_in_the_widget_and_the_model_downloads_it() {
    let (server, _dir, sandbox, token) = widget_server(IN_PARTS_OF_5_MIB);
    let mcp = format!("{}/mcp", server.base);
    let fetched = picked_and_downloaded(
        &mcp,
        &token,
        sandbox,
        &bytes(3 * 1024 * 1024 + 11, 31),
        ("", &[], None),
    );
    assert!(
        fetched["handle"]
            .as_str()
            .unwrap()
            .starts_with("$uploadedFile:")
    );

    // A file in three requests, the page reloaded after the first: the
    // same file picked again in the widget rendered again sends only the
    // rest, from where the server stands.
    picked_and_downloaded(
        &mcp,
        &token,
        sandbox,
        &bytes(11 * 1024 * 1024 + 7, 34),
        (
            "reload-",
            &["--reload"],
            Some("reloaded mid-upload, resumed: sent again only from byte 5242880"),
        ),
    );

    // Without a mouse, at 320 px: another request, another file.
    picked_and_downloaded(
        &mcp,
        &token,
        sandbox,
        &bytes(200 * 1024, 33),
        (
            "narrow-",
            &["--keyboard", "--width", "320"],
            Some("keyboard: Tab into the widget, Space, choose"),
        ),
    );
}

/// On the AWS backends the widget's PUTs (here, a file in parts, one of
/// them interrupted and resumed) go straight to S3 (s3s-fs behind the
/// template's CORS rule, admitting only the sandbox origin), and the policy
/// declares S3's origin beside the issuer's.
#[test]
fn the_widget_uploads_straight_to_s3() {
    let sandbox = free_port();
    let origin = format!("http://localhost:{sandbox}");
    let emulators = crate::util::Emulators::start();
    crate::util::provision(&emulators, "widget");
    let front = cors_front(
        emulators.s3_url.trim_start_matches("http://").to_owned(),
        template_cors_headers(),
        vec![origin.clone()],
    );
    let (server, _dir) = crate::util::aws_server(
        &emulators,
        "widget",
        &[
            ("SLUICE_S3_ENDPOINT_URL", &front),
            ("SLUICE_PART_BYTES", "5242880"),
            ("SLUICE_SINGLE_PUT_MAX_BYTES", "4194304"),
            ("SLUICE_WIDGET_ORIGINS", &origin),
        ],
    );
    let token = crate::util::aws_token(&emulators, "alice", &[]);
    let mcp = format!("{}/mcp", server.base);
    // Part 2's PUT fails as a dropped connection would (parts 1 and 3, on
    // their way at the same time, are stored); "Try again" sends only part 2.
    picked_and_downloaded(
        &mcp,
        &token,
        sandbox,
        &bytes(12 * 1024 * 1024 + 3, 32),
        (
            "s3-",
            &["--interrupt"],
            Some("interrupted, explained, resumed: sent again only part 2"),
        ),
    );

    // What the widget declares: the issuer's origin and S3's, nothing else.
    let content = widget_content(&server, &token);
    let connect = &content["_meta"]["ui"]["csp"]["connectDomains"];
    assert_eq!(connect, &json!([server.base, front]), "{content}");
}

/// The routes the widget calls answer a CORS preflight for the configured
/// sandbox origin, and not for any other; the page's own routes need none.
#[test]
fn the_upload_routes_answer_cors_for_the_widget_origin_only() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start_in(
        dir.path(),
        &[("SLUICE_WIDGET_ORIGINS", "https://abc.sandbox.example")],
    );
    let token = server.token("alice", &[]);
    let start = start_route(&server, &token);
    let allowed = preflight(&start, "https://abc.sandbox.example");
    assert_eq!(
        allowed.header("access-control-allow-origin"),
        Some("https://abc.sandbox.example")
    );
    assert!(
        allowed
            .header("access-control-allow-methods")
            .is_some_and(|m| m.contains("POST") && m.contains("PUT")),
        "{:?}",
        allowed.header("access-control-allow-methods")
    );
    let other = preflight(&start, "https://evil.example");
    assert_eq!(other.header("access-control-allow-origin"), None);
    // The start itself, from the widget's origin: allowed to be read.
    let started = request(
        "POST",
        &start,
        &[
            ("origin", "https://abc.sandbox.example"),
            ("content-type", "application/json"),
        ],
        Some(
            json!({"filename": "a.txt", "size": 2, "sha256": sluice::Sha256::of(b"hi")})
                .to_string()
                .as_bytes(),
        ),
    );
    assert_eq!(started.status, 200, "{}", started.text());
    assert_eq!(
        started.header("access-control-allow-origin"),
        Some("https://abc.sandbox.example")
    );
    // A "not now"'s Retry-After may be read from there too (the form waits it out).
    assert!(
        started
            .header("access-control-expose-headers")
            .is_some_and(|h| h.to_ascii_lowercase().contains("retry-after")),
        "{:?}",
        started.header("access-control-expose-headers")
    );
}

/// By default the widget may run on claude.ai's origin for this connector
/// (its `domain`), and the resource is exactly what the spec asks.
#[test]
fn the_widget_resource_names_claude_s_domain_by_default() {
    let (server, _dir) = Server::start();
    let token = server.token("alice", &[]);
    let mcp = format!("{}/mcp", server.base);
    let content = widget_content(&server, &token);
    assert_eq!(content["mimeType"], "text/html;profile=mcp-app");
    let domain = sluice::web::claude_domain(&mcp);
    assert_eq!(content["_meta"]["ui"]["domain"], domain.as_str());
    assert_eq!(
        content["_meta"]["ui"]["csp"]["connectDomains"],
        json!([server.base])
    );
    let html = content["text"].as_str().unwrap();
    assert!(
        !html.contains("src=\"http"),
        "nothing fetched from elsewhere"
    );
    // The upload routes answer CORS for that origin.
    let origin = format!("https://{domain}");
    let preflight = preflight(&start_route(&server, &token), &origin);
    assert_eq!(
        preflight.header("access-control-allow-origin"),
        Some(origin.as_str())
    );
    // Any other resource is not found.
    let missing = crate::util::mcp_response(
        &server.base,
        &token,
        "resources/read",
        json!({"uri": "ui://sluice/other.html"}),
    );
    assert!(
        missing["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("ui://sluice/upload.html")),
        "{missing}"
    );
}

/// The download view saves as Claude takes files (embedded content only,
/// after the person's click): a file within the view's embedding size is
/// fetched from sluice, checked and handed over embedded, once even when
/// the first save is refused; a larger one opens the person's page, whose
/// button saves it. Each in Chromium, in a host on the official ext-apps
/// pieces.
#[test]
fn a_person_saves_a_file_from_the_download_view() {
    let (server, _dir, sandbox, token) =
        widget_server(&[("SLUICE_VIEW_EMBED_MAX_BYTES", "1048576")]);
    for (mode, size) in [
        ("embed", 700 * 1024 + 5),
        ("refused", 300 * 1024),
        ("link", 2 * 1024 * 1024 + 3),
    ] {
        let data = bytes(size, 41);
        let ticket = server.upload(&token, "quarterly report.pdf", &data);
        let out = Command::new("node")
            .arg(root().join("tests/clients/apps-download-host.mjs"))
            .args(["--url", &format!("{}/mcp", server.base), "--token", &token])
            .args(["--handle", ticket["handle"].as_str().unwrap()])
            .args(["--sha256", &sluice::Sha256::of(&data).to_hex()])
            .args(["--sandbox-port", &sandbox.to_string()])
            .args(["--mode", mode])
            .arg("--shots")
            .arg(shots())
            .current_dir(root().join("tests/clients"))
            .output()
            .expect("node runs (make test installs the clients and Debian's chromium)");
        let checks = crate::util::client_checks("apps-download-host.mjs", &out);
        let mut expected = vec![
            "the view rendered in the sandbox, naming the file",
            "Save: the browser saved the file, SHA-256 checked",
            "no file bytes through MCP; the link is spent",
        ];
        match mode {
            "refused" => expected.push("a refused save keeps the checked bytes and asks again"),
            "link" => expected.push(
                "a file over the embedding size: the host opened the person's page, which spent nothing",
            ),
            _ => {}
        }
        for want in expected {
            assert!(
                checks.iter().any(|c| c == want),
                "{mode}: {want} missing: {checks:?}"
            );
        }
    }
}

/// Three files picked at once in the widget, one of them in parts: each
/// with its own bar, the host told once (`ui/message`), and the model gets
/// every file's handle from one `get_upload_status`.
#[test]
fn a_person_uploads_three_files_in_the_widget() {
    let (server, _dir, sandbox, token) = widget_server(IN_PARTS_OF_5_MIB);
    let mcp = format!("{}/mcp", server.base);
    let work = tempfile::tempdir().unwrap();
    let (files, list) =
        crate::browser::three_files(work.path(), ["one.txt", "two.bin", "three.csv"], 60);
    let (checks, upload_id) = host(
        &mcp,
        &token,
        Path::new(&list),
        sandbox,
        "three-",
        &["--files", "3"],
    );
    every_check(&checks);
    assert!(
        checks
            .iter()
            .any(|c| c == "3 files, each with its own bar, the host told once"),
        "{checks:?}"
    );
    let ready = tool_ok(&call_tool(
        &server.base,
        &token,
        "get_upload_status",
        json!({"upload_id": upload_id}),
    ));
    crate::browser::all_picked(&server, &token, &ready, &files);
}
