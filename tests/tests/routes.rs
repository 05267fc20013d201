//! Each router in-process, with no socket (`sluice_testkit::inproc`): what
//! its routes answer, and that errors reach the wire in their one shape.

use http::StatusCode;
use sluice::Scope;
use sluice::service::uploads::issue::UploadRequest;
use sluice_testkit::inproc::{BASE, Local, call};

fn sha256_hex(data: &[u8]) -> String {
    sluice::Sha256::of(data).to_hex()
}

#[tokio::test]
async fn issuing_needs_a_bearer_token_and_the_challenge_names_the_metadata() {
    let local = Local::new();
    let router = sluice_issuer::router(local.sluice.clone());
    let body = serde_json::json!({"filename": "a.txt", "size": 5, "sha256": sha256_hex(b"hello")});
    let refused = call(
        router.clone(),
        "POST",
        "/uploads",
        &[("content-type", "application/json")],
        body.to_string(),
    )
    .await;
    assert_eq!(refused.status, StatusCode::UNAUTHORIZED);
    let challenge = refused.headers["www-authenticate"].to_str().unwrap();
    assert!(
        challenge.contains(&format!(
            "resource_metadata=\"{BASE}/.well-known/oauth-protected-resource/mcp\""
        )),
        "{challenge}"
    );
    assert_eq!(refused.json()["www_authenticate"], challenge);

    let token = local.token("alice", &[Scope::FilesRead]);
    let auth = format!("Bearer {token}");
    let headers = [
        ("content-type", "application/json"),
        ("authorization", auth.as_str()),
    ];
    let no_scope = call(
        router.clone(),
        "POST",
        "/uploads",
        &headers,
        body.to_string(),
    )
    .await;
    assert_eq!(no_scope.status, StatusCode::FORBIDDEN);
    assert_eq!(no_scope.json()["error"], "insufficient_scope");

    let token = local.token("alice", &[Scope::FilesWrite]);
    let auth = format!("Bearer {token}");
    let headers = [
        ("content-type", "application/json"),
        ("authorization", auth.as_str()),
    ];
    let ticket = call(router, "POST", "/uploads", &headers, body.to_string()).await;
    assert_eq!(ticket.status, StatusCode::OK);
    assert!(
        ticket.json()["handle"]
            .as_str()
            .unwrap()
            .starts_with("$uploadedFile:")
    );
}

#[tokio::test]
async fn an_upload_then_a_download_go_through_the_routes_once() {
    let local = Local::new();
    let data = b"hello, in-process";
    let ticket = local
        .sluice
        .uploads()
        .issue_upload(
            "alice",
            UploadRequest {
                filename: "a.txt".into(),
                size: data.len() as u64,
                sha256: sluice::Sha256::of(data),
                content_type: None,
            },
        )
        .await
        .unwrap();
    let path = ticket.upload.url.strip_prefix(BASE).unwrap().to_owned();
    let issuer = sluice_issuer::router(local.sluice.clone());
    let short = call(issuer.clone(), "PUT", &path, &[], &data[..5]).await;
    assert_eq!(short.status, StatusCode::BAD_REQUEST, "{:?}", short.json());
    assert!(
        short.json()["message"]
            .as_str()
            .unwrap()
            .contains("nothing was stored")
    );
    let stored = call(issuer.clone(), "PUT", &path, &[], &data[..]).await;
    assert_eq!(stored.status, StatusCode::OK, "{:?}", stored.json());
    let again = call(issuer, "PUT", &path, &[], &data[..]).await;
    assert_eq!(again.status, StatusCode::CONFLICT);

    let file = local
        .sluice
        .files()
        .find_file("alice", &ticket.file_id)
        .await
        .unwrap();
    let download = local
        .sluice
        .downloads()
        .issue_download("alice", &file)
        .await
        .unwrap();
    let link = download.download.url.strip_prefix(BASE).unwrap().to_owned();
    let resolver = sluice_resolver::router(local.sluice.clone());
    let head = call(resolver.clone(), "HEAD", &link, &[], "").await;
    assert_eq!(head.status, StatusCode::OK, "HEAD is answered");
    assert_eq!(head.headers["content-length"], data.len().to_string());
    assert_eq!(head.headers["accept-ranges"], "bytes");
    assert!(head.body.is_empty());
    let got = call(resolver.clone(), "GET", &link, &[], "").await;
    assert_eq!(got.status, StatusCode::OK);
    assert_eq!(&got.body[..], data);
    let spent = call(resolver.clone(), "GET", &link, &[], "").await;
    let garbage = call(resolver, "GET", "/l/garbage", &[], "").await;
    assert_eq!(spent.status, StatusCode::NOT_FOUND);
    assert_eq!(spent.body, garbage.body, "one 404 whatever the reason");
}

#[tokio::test]
async fn the_page_routes_serve_the_page_its_assets_and_refuse_a_bad_token_in_words() {
    let local = Local::new();
    let issuer = sluice_issuer::router(local.sluice.clone());
    let page = local
        .sluice
        .pages()
        .request_browser_upload("alice", Default::default())
        .unwrap();
    let path = page.page_url.strip_prefix(BASE).unwrap();
    let shown = call(issuer.clone(), "GET", path, &[], "").await;
    assert_eq!(shown.status, StatusCode::OK);
    assert!(
        shown.headers["content-security-policy"]
            .to_str()
            .unwrap()
            .contains("script-src 'self'")
    );
    let script = call(issuer.clone(), "GET", "/browser/assets/page.js", &[], "").await;
    assert_eq!(script.status, StatusCode::OK);
    let bad = call(issuer, "GET", "/browser/not-a-token", &[], "").await;
    assert!(String::from_utf8_lossy(&bad.body).contains("This upload link is not valid"));
}

#[tokio::test]
async fn the_mcp_route_lists_tools_and_checks_each_calls_scope() {
    let local = Local::new();
    let mcp = sluice_mcp::router(local.sluice.clone());
    let post = |token: String, message: serde_json::Value| {
        let mcp = mcp.clone();
        async move { sluice_testkit::inproc::mcp(mcp, &token, message).await }
    };
    let reader = local.token("bob", &[Scope::FilesRead]);
    let list = post(
        reader.clone(),
        serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}),
    )
    .await;
    assert_eq!(list.status, StatusCode::OK, "{:?}", list.json());
    let names: Vec<String> = list.json()["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_owned())
        .collect();
    let mut expected: Vec<String> = sluice_mcp::table::TOOLS
        .iter()
        .filter(|t| t.scope != Scope::ActionsExecute)
        .map(|t| t.name.to_owned())
        .collect();
    expected.sort();
    let mut sorted = names.clone();
    sorted.sort();
    assert_eq!(
        sorted, expected,
        "no actions are configured, so no action tools"
    );
    for tool in list.json()["result"]["tools"].as_array().unwrap() {
        let name = tool["name"].as_str().unwrap();
        let spec = sluice_mcp::table::lookup(name).unwrap();
        assert_eq!(
            tool["outputSchema"],
            serde_json::Value::Object((*(spec.output)()).clone()),
            "{name}"
        );
    }
    let call_upload = serde_json::json!({
        "jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": "request_upload", "arguments": {"filename": "a.txt", "size": 1, "sha256": sha256_hex(b"a")}},
    });
    let refused = post(reader, call_upload.clone()).await;
    assert_eq!(refused.status, StatusCode::FORBIDDEN);
    assert!(
        refused.headers["www-authenticate"]
            .to_str()
            .unwrap()
            .contains("scope=\"files:write\"")
    );
    let writer = local.token("bob", &[Scope::FilesWrite]);
    let issued = post(writer, call_upload).await;
    assert_eq!(issued.status, StatusCode::OK);
    let result = &issued.json()["result"];
    assert_ne!(result["isError"], true, "{result}");
    assert!(
        result["structuredContent"]["handle"]
            .as_str()
            .unwrap()
            .starts_with("$uploadedFile:")
    );
}

/// A body that sends nothing and never ends: a route that reads before it
/// checks would wait on it for ever.
fn endless_body() -> axum::body::Body {
    axum::body::Body::from_stream(futures_util::stream::pending::<
        Result<bytes::Bytes, std::io::Error>,
    >())
}

/// `POST path` with `header` and a body that never comes: the answer,
/// which must arrive without the body (within 10 s).
async fn answered_without_the_body(
    router: axum::Router,
    path: &str,
    header: (&str, &str),
) -> sluice_testkit::inproc::Answer {
    tokio::time::timeout(
        std::time::Duration::from_secs(10),
        call(router, "POST", path, &[header], endless_body()),
    )
    .await
    .expect("answered without reading the body")
}

#[tokio::test]
async fn a_page_start_with_a_bad_token_is_refused_before_its_body_is_read() {
    let local = Local::new();
    let issuer = sluice_issuer::router(local.sluice.clone());
    let answered = answered_without_the_body(
        issuer.clone(),
        "/browser/not-a-page/start",
        ("content-type", "application/json"),
    )
    .await;
    assert_eq!(answered.status, StatusCode::FORBIDDEN);
    // A good token, and a body over the start's small limit.
    let page = local
        .sluice
        .pages()
        .request_browser_upload("alice", Default::default())
        .unwrap();
    let path = format!("{}/start", page.page_url.strip_prefix(BASE).unwrap());
    let huge = vec![b' '; 64 * 1024];
    let refused = call(
        issuer,
        "POST",
        &path,
        &[("content-type", "application/json")],
        huge,
    )
    .await;
    assert_eq!(refused.status, StatusCode::PAYLOAD_TOO_LARGE);
}

#[tokio::test]
async fn the_example_upstream_checks_its_key_before_reading_a_body() {
    let router = sluice_local::example::router(sluice_local::example::ExampleKey::random());
    let answered = answered_without_the_body(
        router,
        "/example-upstream/attach_document",
        ("authorization", "Bearer not-the-key"),
    )
    .await;
    assert_eq!(answered.status, StatusCode::UNAUTHORIZED);
}
