//! The flows a deployment serves, through the deployment's own routes: the
//! HTTP API read from `template.yaml` ([`crate::front`]) in front of the
//! three functions under the real `cargo lambda watch`, on s3s-fs and
//! dynalite, every URL on the stage's one origin. Anything a flow calls
//! that the template does not route gets API Gateway's 404 here, as it
//! would deployed (uploads in parts once did).

use std::path::Path;

use serde_json::json;
use sluice::Sha256;

use crate::cargo_lambda_watch::{Reached, Stack, check_discovery, token};
use crate::util::{call_tool, out_text, request, sh, tool_ok};

const MIB: usize = 1024 * 1024;

/// A preflight from `origin` for `method` at `url`: the origin it allows.
fn preflight(url: &str, origin: &str, method: &str) -> (u16, Option<String>) {
    let answer = request(
        "OPTIONS",
        url,
        &[
            ("Origin", origin),
            ("Access-Control-Request-Method", method),
            ("Access-Control-Request-Headers", "content-type"),
        ],
        None,
    );
    let allowed = answer
        .header("access-control-allow-origin")
        .map(str::to_owned);
    (answer.status, allowed)
}

fn sha256_of_file(path: &Path) -> Sha256 {
    Sha256::of(&std::fs::read(path).unwrap())
}

#[test]
fn every_flow_works_through_the_templates_routes() {
    let stack = Stack::reached(Reached::ThroughApi { s3_cors: true }, &[], &[]);
    let api = stack.api.clone().unwrap();
    let mcp_base = api.as_str();

    // OAuth discovery: the 401's challenge (renamed by API Gateway, put
    // back by the template's response mapping) and the metadata it names.
    check_discovery(&stack);

    // What the template does not route is API Gateway's 404, not a function's.
    for (method, path) in [
        ("GET", "/u/x/elsewhere"),
        ("DELETE", "/u/x"),
        ("OPTIONS", "/uploads"),
        ("GET", "/"),
    ] {
        let answer = request(method, &format!("{api}{path}"), &[], None);
        assert_eq!(answer.status, 404, "{method} {path}");
        assert_eq!(answer.json()["message"], "Not Found", "{method} {path}");
    }

    // A 200 MiB file in parts with request_upload's own line, then back
    // with get_download_url's.
    let alice = token(&stack.env, "alice", &["files:read", "files:write"]);
    let up = stack.work.path().join("up");
    std::fs::create_dir(&up).unwrap();
    let data = sluice_testkit::bytes(200 * MIB + 3, 35);
    let digest = Sha256::of(&data);
    std::fs::write(up.join("big.bin"), &data).unwrap();
    drop(data);
    let ticket = tool_ok(&call_tool(
        mcp_base,
        &alice,
        "request_upload",
        json!({"filename": "big.bin", "size": 200 * MIB + 3, "sha256": digest.to_hex()}),
    ));
    let line = ticket["command"].as_str().unwrap();
    assert!(line.contains(&format!("{api}/u/")), "{line}");
    let uploaded = sh(line, &up);
    stack.assert_succeeded("the upload line", &uploaded);
    assert!(
        String::from_utf8_lossy(&uploaded.stderr).contains("part"),
        "it went in parts: {}",
        out_text(&uploaded)
    );
    let download = tool_ok(&call_tool(
        mcp_base,
        &alice,
        "get_download_url",
        json!({"file": ticket["file_id"]}),
    ));
    let line = download["command"].as_str().unwrap();
    assert!(line.contains(&format!("{api}/l/")), "{line}");
    let down = stack.work.path().join("down");
    std::fs::create_dir(&down).unwrap();
    let fetched = sh(line, &down);
    assert!(fetched.status.success(), "{}", out_text(&fetched));
    assert_eq!(sha256_of_file(&down.join("big.bin")), digest);
    std::fs::remove_file(up.join("big.bin")).unwrap();
    std::fs::remove_file(down.join("big.bin")).unwrap();

    // The in-chat widget's preflights, from claude.ai's origin for this
    // connector (the default), reach the issuer's CORS layer; another
    // origin is not allowed.
    let widget = format!("https://{}", sluice::web::claude_domain(&stack.mcp_url()));
    let page = tool_ok(&call_tool(
        mcp_base,
        &alice,
        "request_browser_upload",
        json!({"filename": "scan.bin"}),
    ));
    let page_url = page["page_url"].as_str().unwrap().to_owned();
    assert!(
        page_url.starts_with(&format!("{api}/browser/")),
        "{page_url}"
    );
    let start = format!("{page_url}/start");
    assert_eq!(
        preflight(&start, &widget, "POST"),
        (200, Some(widget.clone())),
        "{start}"
    );
    let (_, other) = preflight(&start, "https://elsewhere.example", "POST");
    assert_eq!(other, None, "an undeclared origin is not allowed");
    let link = ticket["upload"]["url"].as_str().unwrap();
    for (path, method) in [
        ("", "PUT"),
        ("", "PATCH"),
        ("", "HEAD"),
        ("/sh", "GET"),
        ("/parts", "GET"),
        ("/parts/1", "POST"),
        ("/complete", "POST"),
    ] {
        assert_eq!(
            preflight(&format!("{link}{path}"), &widget, method),
            (200, Some(widget.clone())),
            "{link}{path}"
        );
    }

    // The page, in a real browser: a file over the single-PUT size goes in
    // parts straight to S3 (behind the template's CORS rule), and the model
    // downloads it byte for byte.
    let file = stack.work.path().join("scan.bin");
    let data = sluice_testkit::bytes(70 * MIB + 11, 36);
    std::fs::write(&file, &data).unwrap();
    let checks = crate::browser::browse(&page_url, &file, "upload", "deployed-parts-", 900);
    assert!(checks.iter().any(|c| c == "upload done"), "{checks:?}");
    let status = tool_ok(&call_tool(
        mcp_base,
        &alice,
        "get_upload_status",
        json!({"upload_id": page["upload_id"]}),
    ));
    assert_eq!(status["state"], "ready", "{status}");
    let download = tool_ok(&call_tool(
        mcp_base,
        &alice,
        "get_download_url",
        json!({"file": status["file_id"]}),
    ));
    let fetched = sh(download["command"].as_str().unwrap(), &down);
    assert!(fetched.status.success(), "{}", out_text(&fetched));
    assert_eq!(sha256_of_file(&down.join("scan.bin")), Sha256::of(&data));
}

/// With an authorization server instead of development tokens, through the
/// template's routes: the official Python SDK's own OAuth flow (discovery
/// from the stage's 401, dynamic registration, PKCE, RFC 8707) and a tool
/// call with the token it obtained.
#[test]
fn oauth_works_through_the_templates_routes() {
    let auth = crate::oauth::AuthServer::start("RS256");
    let stack = Stack::reached(
        Reached::ThroughApi { s3_cors: false },
        &["SLUICE_DEV_TOKENS"],
        &auth.env(),
    );
    check_discovery(&stack);
    stack.assert_oauth_py_passes(&auth);
}
