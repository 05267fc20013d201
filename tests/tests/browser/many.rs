//! Three files through one page.

use super::*;

/// A page for three files: picked at once, each with its own bar (one of
/// them in parts), and the model gets every file's handle in one status;
/// then a picker that gives nothing for a multiple pick (the Claude mobile
/// app's) takes them one at a time.
#[test]
fn a_person_uploads_three_files_through_one_page() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start_in(
        dir.path(),
        &[
            ("SLUICE_PART_BYTES", "5242880"),
            ("SLUICE_SINGLE_PUT_MAX_BYTES", "1048576"),
        ],
    );
    let token = server.token("alice", &[]);
    let work = tempfile::tempdir().unwrap();
    let (files, list) = three_files(work.path(), ["a.txt", "b report.pdf", "c.bin"], 40);
    for mode in ["several", "one-at-a-time"] {
        let page = tool_ok(&call_tool(
            &server.base,
            &token,
            "request_browser_upload",
            json!({"files": 3}),
        ));
        assert_eq!(page["files"], 3);
        let upload_id = page["upload_id"].as_str().unwrap();
        let checks = browse(
            page["page_url"].as_str().unwrap(),
            Path::new(&list),
            mode,
            &format!("{mode}-"),
            900,
        );
        assert!(
            checks.iter().any(|c| c == "upload done"),
            "{mode}: {checks:?}"
        );
        all_picked(&server, &token, &status(&server, &token, upload_id), &files);
    }
    // A fourth file is not taken by a page for three, in words.
    let page = tool_ok(&call_tool(
        &server.base,
        &token,
        "request_browser_upload",
        json!({"files": 3}),
    ));
    let start =
        json!({"filename": "d.txt", "size": 1, "sha256": sluice::Sha256::of(b"d").to_hex()});
    let fourth = request(
        "POST",
        &format!("{}/start?file=3", page["page_url"].as_str().unwrap()),
        &[("content-type", "application/json")],
        Some(start.to_string().as_bytes()),
    );
    assert_eq!(fourth.status, 409, "{}", fourth.text());
    assert!(
        fourth.text().contains("takes no more files"),
        "{}",
        fourth.text()
    );
    let one = tool_ok(&call_tool(
        &server.base,
        &token,
        "request_browser_upload",
        json!({}),
    ));
    assert!(
        one.get("files").is_none(),
        "a page for one says nothing of files"
    );
    let refused = crate::util::tool_error(&call_tool(
        &server.base,
        &token,
        "request_browser_upload",
        json!({"files": 21}),
    ));
    assert!(refused.contains("between 1 and 20"), "{refused}");
}
