//! The MCP tools in-process (`sluice_testkit::inproc`): what each answers,
//! and that each refusal is a tool error saying what to do next.

use base64::Engine as _;
use serde_json::{Value, json};
use sluice::Scope;
use sluice_testkit::inproc::{Local, tool};

const ALL: &[Scope] = &[Scope::FilesRead, Scope::FilesWrite];

fn text(result: &Value) -> String {
    result["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

fn error_of(result: &Value) -> String {
    assert_eq!(result["isError"], true, "expected a tool error: {result}");
    text(result)
}

#[tokio::test]
async fn the_inline_fallback_round_trips_and_refuses_a_wrong_digest() {
    let local = Local::new();
    let mcp = sluice_mcp::router(local.sluice.clone());
    let token = local.token("alice", ALL);
    let data = b"small and inline";
    let encoded = base64::engine::general_purpose::STANDARD.encode(data);
    let wrong = tool(
        mcp.clone(),
        &token,
        "upload_small_file",
        json!({"filename": "a.txt", "data_base64": encoded, "sha256": sluice::Sha256::of(b"other").to_hex()}),
    )
    .await;
    assert!(error_of(&wrong).contains("nothing was stored"));
    let stored = tool(
        mcp.clone(),
        &token,
        "upload_small_file",
        json!({"filename": "a.txt", "data_base64": encoded, "sha256": sluice::Sha256::of(data).to_hex()}),
    )
    .await;
    let file_id = stored["structuredContent"]["file_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let read = tool(mcp, &token, "read_small_file", json!({"file": file_id})).await;
    let back = read["structuredContent"]["data_base64"].as_str().unwrap();
    assert_eq!(
        base64::engine::general_purpose::STANDARD
            .decode(back)
            .unwrap(),
        data
    );
}

#[tokio::test]
async fn a_file_not_uploaded_yet_says_to_run_the_upload_command() {
    let local = Local::new();
    let mcp = sluice_mcp::router(local.sluice.clone());
    let token = local.token("alice", ALL);
    let ticket = tool(
        mcp.clone(),
        &token,
        "request_upload",
        json!({"filename": "a.txt", "size": 3, "sha256": sluice::Sha256::of(b"abc").to_hex()}),
    )
    .await;
    let handle = ticket["structuredContent"]["handle"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        text(&ticket).contains("run `command` where the file is"),
        "{}",
        text(&ticket)
    );
    let refused = tool(
        mcp.clone(),
        &token,
        "get_download_url",
        json!({"file": handle}),
    )
    .await;
    assert_eq!(
        error_of(&refused),
        "this file has not been uploaded yet: run the command its upload request returned first"
    );
    let listed = tool(mcp.clone(), &token, "list_files", json!({})).await;
    assert_eq!(listed["structuredContent"]["files"][0]["state"], "pending");
    let unknown = tool(
        mcp,
        &token,
        "get_download_url",
        json!({"file": "AAAAAAAAAAAAAAAAAAAAAA"}),
    )
    .await;
    assert!(error_of(&unknown).ends_with("call list_files to see them, or pass the handle"));
}

#[tokio::test]
async fn the_browser_tools_give_a_page_and_its_status() {
    let local = Local::new();
    let mcp = sluice_mcp::router(local.sluice.clone());
    let token = local.token("alice", ALL);
    let page = tool(
        mcp.clone(),
        &token,
        "request_browser_upload",
        json!({"filename": "scan.pdf"}),
    )
    .await;
    let content = &page["structuredContent"];
    assert!(content["page_url"].as_str().unwrap().contains("/browser/"));
    assert!(text(&page).contains(content["page_url"].as_str().unwrap()));
    let status = tool(
        mcp.clone(),
        &token,
        "get_upload_status",
        json!({"upload_id": content["upload_id"]}),
    )
    .await;
    assert_eq!(status["structuredContent"]["state"], "pending");
    let bad = tool(
        mcp,
        &token,
        "get_upload_status",
        json!({"upload_id": "nope"}),
    )
    .await;
    assert!(error_of(&bad).contains("not an upload_id"));
}

#[tokio::test]
async fn list_files_refuses_a_page_size_out_of_range() {
    let local = Local::new();
    let mcp = sluice_mcp::router(local.sluice.clone());
    let token = local.token("alice", ALL);
    let refused = tool(mcp, &token, "list_files", json!({"limit": 500})).await;
    assert_eq!(
        error_of(&refused),
        "limit must be between 1 and 100, got 500"
    );
}

/// `get_upload_status` hands out a handle only for a page's upload: an id
/// made up from another of the caller's files (its file id is in
/// list_files) gets no handle.
#[tokio::test]
async fn get_upload_status_gives_no_handle_for_a_made_up_upload_id() {
    let local = Local::new();
    let mcp = sluice_mcp::router(local.sluice.clone());
    let writer = local.token("alice", &[Scope::FilesWrite]);
    let data = b"not uploaded through a page";
    let stored = tool(
        mcp.clone(),
        &writer,
        "upload_small_file",
        json!({
            "filename": "secret.txt",
            "data_base64": base64::engine::general_purpose::STANDARD.encode(data),
            "sha256": sluice::Sha256::of(data).to_hex(),
        }),
    )
    .await;
    let file_id = stored["structuredContent"]["file_id"].as_str().unwrap();
    for made_up in [
        format!("{file_id}.9999999999"),
        format!("{file_id}.9999999999.AAAAAAAAAAAAAAAAAAAAAA"),
    ] {
        let status = tool(
            mcp.clone(),
            &writer,
            "get_upload_status",
            json!({"upload_id": made_up}),
        )
        .await;
        assert!(error_of(&status).contains("not an upload_id"), "{status}");
        assert!(status["structuredContent"]["handle"].is_null(), "{status}");
    }
}
