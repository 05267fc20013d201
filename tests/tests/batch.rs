//! Many files in one call and one line (`request_uploads`,
//! `get_download_urls`), locally and on s3s-fs + dynalite: 200 files of
//! mixed sizes (some in parts) go up with one line, which resumes; files
//! the user stored already are not sent again (they are not even on disk
//! when the line runs); every file comes back with one line, byte for
//! byte; another user's identical file is never revealed.

use std::path::Path;

use serde_json::{Value, json};

use crate::util::{
    Emulators, Server, aws_server, aws_token, bytes, call_tool, is_part_body, noted_puts, out_text,
    provision, run_noting_puts, tool_error, tool_ok,
};

const MIB: usize = 1024 * 1024;

/// Files over 1 MiB go in parts of 5 MiB (S3's smallest).
const PARTS: [(&str, &str); 2] = [
    ("SLUICE_PART_BYTES", "5242880"),
    ("SLUICE_SINGLE_PUT_MAX_BYTES", "1048576"),
];

/// `n` files under `dir`: paths in a few folders (names repeat across
/// folders), sizes from a few bytes to 6 MiB (every 40th in parts).
fn folder(dir: &Path, n: usize, seed: u64) -> Vec<(String, Vec<u8>)> {
    (0..n)
        .map(|i| {
            let size = match i % 40 {
                0 => 6 * MIB + i,
                1 => MIB + 7,
                k => 10 + k * 997 + i,
            };
            let path = format!("d{}/f{}.bin", i % 3, i / 3);
            let data = bytes(size, seed + i as u64);
            let full = dir.join(&path);
            std::fs::create_dir_all(full.parent().unwrap()).unwrap();
            std::fs::write(&full, &data).unwrap();
            (path, data)
        })
        .collect()
}

fn entries(files: &[(String, Vec<u8>)]) -> Value {
    Value::Array(
        files
            .iter()
            .map(|(path, data)| {
                json!({"path": path, "size": data.len(), "sha256": sluice::Sha256::of(data).to_hex()})
            })
            .collect(),
    )
}

/// Runs `line` in `dir`, noting what each PUT sends ([`run_noting_puts`]).
fn run_logging_puts(line: &str, dir: &Path) -> std::process::Output {
    run_noting_puts(line, dir, None).0
}

/// The files the last run of [`run_logging_puts`] in `dir` PUT whole (not
/// a part's body: the copy of its slot, or stdin).
fn whole_puts(dir: &Path) -> Vec<String> {
    noted_puts(dir)
        .into_iter()
        .filter(|body| !is_part_body(body))
        .collect()
}

/// The answer's text and `structuredContent` each within 1 KiB and 64 B a file.
fn within_budget(result: &Value, files: usize) {
    let budget = 1024 + 64 * files;
    let text = result["content"][0]["text"].as_str().unwrap();
    let structured = result["structuredContent"].to_string();
    assert!(text.len() <= budget, "text {} > {budget}", text.len());
    assert!(
        structured.len() <= budget,
        "structured {} > {budget}",
        structured.len()
    );
}

/// The whole story on one server, with tokens for alice and bob.
fn many_files_up_and_down(server: &Server, alice: &str, bob: &str, streams: bool) {
    let work = tempfile::tempdir().unwrap();
    let files = folder(work.path(), 200, 1);
    let asked = call_tool(
        &server.base,
        alice,
        "request_uploads",
        json!({"files": entries(&files)}),
    );
    within_budget(&asked, files.len());
    let ticket = tool_ok(&asked);
    assert_eq!(
        ticket["counts"],
        json!({"send": 200, "stored": 0, "refused": 0})
    );
    let ids: Vec<String> = ticket["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["file_id"].as_str().unwrap().to_owned())
        .collect();
    let line = ticket["command"].as_str().unwrap().to_owned();

    // Interrupted: ten files are not there when the line first runs.
    let aside = tempfile::tempdir().unwrap();
    for (path, _) in files.iter().take(10) {
        std::fs::rename(
            work.path().join(path),
            aside.path().join(path.replace('/', "_")),
        )
        .unwrap();
    }
    let first = run_logging_puts(&line, work.path());
    assert!(!first.status.success());
    assert!(
        out_text(&first).contains("10 of 200 files were not sent: run the same line again"),
        "{}",
        out_text(&first)
    );
    for (path, _) in files.iter().take(10) {
        std::fs::rename(
            aside.path().join(path.replace('/', "_")),
            work.path().join(path),
        )
        .unwrap();
    }
    // Run again, it sends only those ten.
    let second = run_logging_puts(&line, work.path());
    assert!(second.status.success(), "{}", out_text(&second));
    let mut resent = whole_puts(work.path());
    resent.sort();
    let mut missing: Vec<String> = files
        .iter()
        .take(10)
        // Locally every file goes whole, as one stream; on S3 a file over
        // a MiB goes in parts.
        .filter(|(_, d)| streams || d.len() <= MIB)
        .map(|(p, _)| format!("./{p}"))
        .collect();
    missing.sort();
    assert_eq!(resent, missing, "only the files not sent the first time");
    // A third run has nothing left to send.
    let third = run_logging_puts(&line, work.path());
    assert!(third.status.success(), "{}", out_text(&third));
    assert!(out_text(&third).contains("every file of this batch is stored"));

    // Down again with one call (the batch's handle) and one line, byte for
    // byte; names that repeat across folders get " (2)", " (3)".
    let down = call_tool(
        &server.base,
        alice,
        "get_download_urls",
        json!({"files": [ticket["handle"]]}),
    );
    within_budget(&down, files.len());
    let down = tool_ok(&down);
    let items = down["files"].as_array().unwrap();
    assert_eq!(items.len(), 200);
    // A host that takes file references (ChatGPT) gets one for each of the
    // first files that fit the answer's budget, each its own single-use
    // link: the first one fetched gives the first file's bytes.
    let refs = items
        .iter()
        .take_while(|i| i["file_ref"].is_object())
        .count();
    assert!(refs >= 1, "{}", items[0]);
    assert!(
        items[refs..].iter().all(|i| i["file_ref"].is_null()),
        "references stop at the first that does not fit"
    );
    let first = &items[0]["file_ref"];
    assert_eq!(first["file_id"], items[0]["file_id"]);
    let host = tempfile::tempdir().unwrap();
    let fetched = crate::util::sh(
        &format!(
            "curl -fsSL -o fetched '{}'",
            first["download_url"].as_str().unwrap()
        ),
        host.path(),
    );
    assert!(fetched.status.success(), "{}", out_text(&fetched));
    assert_eq!(
        std::fs::read(host.path().join("fetched")).unwrap(),
        files[0].1,
        "the first file's bytes"
    );
    let here = tempfile::tempdir().unwrap();
    let out = crate::util::sh(down["command"].as_str().unwrap(), here.path());
    assert!(out.status.success(), "{}", out_text(&out));
    for ((path, data), (item, id)) in files.iter().zip(items.iter().zip(&ids)) {
        assert_eq!(item["file_id"].as_str().unwrap(), id);
        let own = path.rsplit('/').next().unwrap();
        let name = item["name"].as_str().unwrap_or(own);
        assert_eq!(
            &std::fs::read(here.path().join(name)).unwrap(),
            data,
            "{path} as {name}"
        );
    }
    // The line is single-use.
    let again = crate::util::sh(down["command"].as_str().unwrap(), here.path());
    assert!(!again.status.success());
    assert!(
        out_text(&again).contains("used already or has expired"),
        "{}",
        out_text(&again)
    );

    // Nothing sent twice: the same bytes again, under other paths, with one
    // new file; the stored ones are not even on disk when the line runs.
    let next = tempfile::tempdir().unwrap();
    let mut again_files: Vec<(String, Vec<u8>)> = files
        .iter()
        .step_by(50)
        .map(|(p, d)| (format!("copy/{}", p.replace('/', "-")), d.clone()))
        .collect();
    again_files.push(("copy/new.txt".into(), b"a file alice never stored".to_vec()));
    std::fs::create_dir_all(next.path().join("copy")).unwrap();
    std::fs::write(
        next.path().join("copy/new.txt"),
        &again_files.last().unwrap().1,
    )
    .unwrap();
    let asked = tool_ok(&call_tool(
        &server.base,
        alice,
        "request_uploads",
        json!({"files": entries(&again_files)}),
    ));
    assert_eq!(
        asked["counts"],
        json!({"send": 1, "stored": 4, "refused": 0})
    );
    let states: Vec<&str> = asked["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["state"].as_str().unwrap())
        .collect();
    assert_eq!(states, ["stored", "stored", "stored", "stored", "send"]);
    let out = run_logging_puts(asked["command"].as_str().unwrap(), next.path());
    assert!(out.status.success(), "{}", out_text(&out));
    assert_eq!(whole_puts(next.path()), ["./copy/new.txt"]);
    // The stored copies are files of their own, under their new names.
    let down = tool_ok(&call_tool(
        &server.base,
        alice,
        "get_download_urls",
        json!({"files": [asked["handle"]]}),
    ));
    let back = tempfile::tempdir().unwrap();
    let out = crate::util::sh(down["command"].as_str().unwrap(), back.path());
    assert!(out.status.success(), "{}", out_text(&out));
    for (path, data) in &again_files {
        let name = path.rsplit('/').next().unwrap();
        assert_eq!(
            &std::fs::read(back.path().join(name)).unwrap(),
            data,
            "{name}"
        );
    }

    // Bob's answer for a file alice has is that of a new file: send it.
    let bobs = vec![files[5].clone()];
    let asked = tool_ok(&call_tool(
        &server.base,
        bob,
        "request_uploads",
        json!({"files": entries(&bobs)}),
    ));
    assert_eq!(
        asked["counts"],
        json!({"send": 1, "stored": 0, "refused": 0})
    );
    assert!(asked["command"].is_string());
}

#[test]
fn two_hundred_files_go_up_and_come_back_with_one_line_each_way_locally() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start_in(dir.path(), &PARTS);
    let (alice, bob) = (server.token("alice", &[]), server.token("bob", &[]));
    many_files_up_and_down(&server, &alice, &bob, true);
}

#[test]
fn two_hundred_files_go_up_and_come_back_with_one_line_each_way_on_s3() {
    let emulators = Emulators::start();
    provision(&emulators, "batches");
    let (server, _dir) = aws_server(&emulators, "batches", &PARTS);
    let (alice, bob) = (
        aws_token(&emulators, "alice", &[]),
        aws_token(&emulators, "bob", &[]),
    );
    many_files_up_and_down(&server, &alice, &bob, false);
}

/// A refused entry does not sink the others; a batch beyond the caps is
/// refused whole; bad batches are refused with what to do.
#[test]
fn refusals_are_per_file_or_whole_and_say_which() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start_in(dir.path(), &[("SLUICE_MAX_PENDING_FILES", "3")]);
    let alice = server.token("alice", &[]);
    let sha = sluice::Sha256::of(b"x").to_hex();
    let result = call_tool(
        &server.base,
        &alice,
        "request_uploads",
        json!({"files": [
            {"path": "ok.txt", "size": 1, "sha256": sha},
            {"path": "../etc/passwd", "size": 1, "sha256": sha},
            {"path": "/abs.txt", "size": 1, "sha256": sha},
            {"path": "dir/fine.txt", "size": 1, "sha256": sha, "filename": "renamed.txt"},
        ]}),
    );
    let ticket = tool_ok(&result);
    assert_eq!(
        ticket["counts"],
        json!({"send": 2, "stored": 0, "refused": 2})
    );
    let files = ticket["files"].as_array().unwrap();
    assert!(
        files[1]["error"].as_str().unwrap().contains(".."),
        "{files:?}"
    );
    assert!(
        files[2]["error"].as_str().unwrap().contains("relative"),
        "{files:?}"
    );
    // Two pending now; three more would pass the cap of three: refused whole.
    let three: Vec<Value> = (0..3)
        .map(|i| json!({"path": format!("f{i}"), "size": 1, "sha256": sha}))
        .collect();
    let refused = tool_error(&call_tool(
        &server.base,
        &alice,
        "request_uploads",
        json!({"files": three}),
    ));
    assert!(
        refused.contains("refused whole, nothing was issued"),
        "{refused}"
    );
    // Nothing of it was recorded: one more still fits.
    let one = tool_ok(&call_tool(
        &server.base,
        &alice,
        "request_uploads",
        json!({"files": [three[0]]}),
    ));
    assert_eq!(one["counts"]["send"], 1);
    let empty = tool_error(&call_tool(
        &server.base,
        &alice,
        "request_uploads",
        json!({"files": []}),
    ));
    assert!(empty.contains("1 to 1000"), "{empty}");
    // A download list of files not uploaded says so for each, with no line.
    let down = tool_ok(&call_tool(
        &server.base,
        &alice,
        "get_download_urls",
        json!({"files": [ticket["handle"]]}),
    ));
    assert!(down["command"].is_null(), "{down}");
    assert!(
        down["files"][0]["error"]
            .as_str()
            .unwrap()
            .contains("not been uploaded"),
        "{down}"
    );
    // Another user's batch handle is not theirs to use.
    let bob = server.token("bob", &[]);
    let other = tool_error(&call_tool(
        &server.base,
        &bob,
        "get_download_urls",
        json!({"files": [ticket["handle"]]}),
    ));
    assert!(other.contains("another user"), "{other}");
}

/// A server that takes batches of a thousand files more than once.
fn roomy_server(dir: &Path) -> Server {
    Server::start_in(
        dir,
        &[
            ("SLUICE_MAX_PENDING_FILES", "2000"),
            ("SLUICE_ISSUE_BURST", "2000"),
        ],
    )
}

/// The server's resident memory, in KiB.
fn rss_kib(server: &Server) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{}/status", server.pid())).unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap()
}

/// One batch handle of 1,000 files named 1,000 times (a 35 KB call) is
/// counted before anything is built for it: `get_download_urls` and an
/// action's FileList field refuse it at once, and the server's memory
/// does not grow (before the fix it built a million handles: +72 MB).
#[test]
fn a_batch_handle_named_a_thousand_times_is_refused_before_anything_is_built() {
    let dir = tempfile::tempdir().unwrap();
    let server = roomy_server(dir.path());
    let alice = server.token("alice", &[]);
    let document = server.upload(&alice, "cover.txt", b"the cover")["handle"].clone();
    let sha = sluice::Sha256::of(b"x").to_hex();
    let files: Vec<Value> = (0..1000)
        .map(|i| json!({"path": format!("f{i}.txt"), "size": 1, "sha256": sha}))
        .collect();
    let batch = tool_ok(&call_tool(
        &server.base,
        &alice,
        "request_uploads",
        json!({ "files": files }),
    ));
    let handle = batch["handle"].clone();
    let many = vec![handle.clone(); 1000];
    let before = rss_kib(&server);
    let refused = tool_error(&call_tool(
        &server.base,
        &alice,
        "get_download_urls",
        json!({ "files": many }),
    ));
    assert!(refused.contains("1 to 1000"), "{refused}");
    let grown = rss_kib(&server).saturating_sub(before);
    assert!(
        grown < 16 * 1024,
        "get_download_urls grew the server by {grown} KiB"
    );
    let refused = tool_error(&call_tool(
        &server.base,
        &alice,
        "action_attach_document",
        json!({ "review_id": 1, "document": document, "extras": many }),
    ));
    assert!(refused.contains("extras"), "{refused}");
    let grown = rss_kib(&server).saturating_sub(before);
    assert!(
        grown < 16 * 1024,
        "the action grew the server by {grown} KiB"
    );
}

/// A thousand identical entries (the same path, size and digest of a file
/// the user stored already) make at most one copy in the store: the first
/// is copied, the rest are refused as listed twice. (Before, each made a
/// store-side copy: on S3 up to 5 GiB apiece, with no bound on bytes.)
#[test]
fn a_thousand_identical_entries_make_at_most_one_copy() {
    let dir = tempfile::tempdir().unwrap();
    let server = roomy_server(dir.path());
    let alice = server.token("alice", &[]);
    let data = bytes(4096, 11);
    server.upload(&alice, "kept.bin", &data);
    let before = crate::util::stored_objects(dir.path()).len();
    let entry = json!({"path": "kept.bin", "size": data.len(), "sha256": sluice::Sha256::of(&data).to_hex()});
    let ticket = tool_ok(&call_tool(
        &server.base,
        &alice,
        "request_uploads",
        json!({ "files": vec![entry; 1000] }),
    ));
    assert_eq!(
        ticket["counts"],
        json!({"send": 0, "stored": 1, "refused": 999}),
        "{}",
        ticket["counts"]
    );
    assert!(
        ticket["files"][1]["error"]
            .as_str()
            .unwrap()
            .contains("listed twice"),
        "{}",
        ticket["files"][1]
    );
    assert_eq!(crate::util::stored_objects(dir.path()).len(), before + 1);
}
