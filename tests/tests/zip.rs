//! Many files as one zip: `get_download_urls {files, zip: true}` answers
//! one single-use link; the zip streams as it is built (entries stored,
//! checked against their SHA-256 as they are read, a `SHA256SUMS` entry),
//! `unzip -t` and Python's `zipfile` read it, and it is cut, never
//! complete, when a file goes while it streams.

use serde_json::json;

use crate::util::{Server, bytes, call_tool, out_text, request, sh, tool_error, tool_ok};

/// Uploads each `(name, data)` as alice; gives their handles.
fn uploaded(server: &Server, token: &str, files: &[(&str, Vec<u8>)]) -> Vec<String> {
    files
        .iter()
        .map(|(name, data)| {
            server.upload(token, name, data)["handle"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect()
}

/// What Python's `zipfile` reads of `zip`: each entry's name and SHA-256,
/// and the zip's SHA256SUMS, after `testzip` found every CRC right.
pub(crate) fn python_reads(zip: &std::path::Path) -> serde_json::Value {
    let script = r#"
import hashlib, json, sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as z:
    assert z.testzip() is None, "a CRC is wrong"
    entries = {i.filename: hashlib.sha256(z.read(i)).hexdigest() for i in z.infolist()}
    stored = all(i.compress_type == zipfile.ZIP_STORED for i in z.infolist())
    print(json.dumps({"entries": entries, "stored": stored, "sums": z.read("SHA256SUMS").decode()}))
"#;
    let out = std::process::Command::new("python3")
        .args(["-c", script])
        .arg(zip)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", out_text(&out));
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn many_files_go_down_as_one_zip_that_unzip_and_python_read() {
    let (server, _dir) = Server::start();
    let token = server.token("alice", &[]);
    let files = [
        ("big.bin", bytes(3 * 1024 * 1024 + 7, 51)),
        ("notes.txt", b"hello\n".to_vec()),
        ("empty.txt", Vec::new()),
        // A file of the name the zip's own list takes is saved under another.
        ("SHA256SUMS", b"mine\n".to_vec()),
    ];
    let handles = uploaded(&server, &token, &files);
    let answer = tool_ok(&call_tool(
        &server.base,
        &token,
        "get_download_urls",
        json!({"files": handles, "zip": true}),
    ));
    let zip = &answer["zip"];
    let url = zip["url"].as_str().unwrap();
    assert!(
        answer.get("command").is_none(),
        "the zip instead of the line: {answer}"
    );
    assert_eq!(zip["file_ref"]["download_url"], zip["url"]);
    assert_eq!(zip["file_ref"]["mime_type"], "application/zip");
    assert!(url.len() <= 100, "{url}");

    // A preview spends nothing: the headers, the page.
    let head = request("HEAD", url, &[], None);
    assert_eq!(head.status, 200);
    assert_eq!(head.header("content-type"), Some("application/zip"));
    let page = request("GET", url, &[("Accept", "text/html")], None);
    assert!(page.text().contains("4 files"), "{}", page.text());

    let work = tempfile::tempdir().unwrap();
    let out = sh(zip["command"].as_str().unwrap(), work.path());
    assert!(out.status.success(), "{}", out_text(&out));
    let saved = work.path().join(zip["file_name"].as_str().unwrap());
    let test = sh(
        &format!(
            "unzip -t {}",
            sluice::curl::shell_quote(saved.to_str().unwrap())
        ),
        work.path(),
    );
    assert!(test.status.success(), "unzip -t: {}", out_text(&test));

    let read = python_reads(&saved);
    assert_eq!(read["stored"], true, "entries stored, not recompressed");
    let entries = read["entries"].as_object().unwrap();
    assert_eq!(entries.len(), files.len() + 1, "{entries:?}");
    for (name, data) in &files {
        let sha = sluice::Sha256::of(data).to_hex();
        let name = if *name == "SHA256SUMS" {
            "SHA256SUMS (2)"
        } else {
            name
        };
        assert_eq!(entries[name], sha, "{name}");
        assert!(
            read["sums"]
                .as_str()
                .unwrap()
                .contains(&format!("{sha}  {name}\n"))
        );
    }
    // `sha256sum -c` reads the zip's list as it is.
    let check = sh(
        &format!(
            "unzip -q {} && sha256sum -c SHA256SUMS",
            sluice::curl::shell_quote(saved.to_str().unwrap())
        ),
        work.path(),
    );
    assert!(check.status.success(), "{}", out_text(&check));
    assert_eq!(request("GET", url, &[], None).status, 404, "spent");
}

/// A file deleted after the zip was issued: refused before any byte. A
/// file deleted while its zip streams: the zip is cut, never complete.
#[test]
fn a_zip_without_one_of_its_files_is_refused_or_cut() {
    let (server, _dir) = Server::start();
    let token = server.token("alice", &[]);
    let zip_of = |handles: &[String]| {
        let answer = tool_ok(&call_tool(
            &server.base,
            &token,
            "get_download_urls",
            json!({"files": handles, "zip": true}),
        ));
        answer["zip"]["url"].as_str().unwrap().to_owned()
    };
    let delete = |handle: &str| {
        tool_ok(&call_tool(
            &server.base,
            &token,
            "delete_file",
            json!({"file": handle}),
        ));
    };

    let handles = uploaded(
        &server,
        &token,
        &[("a.txt", b"a".to_vec()), ("b.txt", b"b".to_vec())],
    );
    let url = zip_of(&handles);
    delete(&handles[1]);
    let refused = request("GET", &url, &[], None);
    assert_eq!(refused.status, 404, "{}", refused.text());
    assert!(!refused.body.starts_with(b"PK"), "not a byte of a zip");

    // A large file first, read slowly; the small one deleted meanwhile.
    let handles = uploaded(
        &server,
        &token,
        &[
            ("big.bin", bytes(24 * 1024 * 1024, 52)),
            ("small.txt", b"s".to_vec()),
        ],
    );
    let url = zip_of(&handles);
    let work = tempfile::tempdir().unwrap();
    let slow = std::process::Command::new("curl")
        .args(["-sS", "--limit-rate", "4M", "-o", "cut.zip"])
        .arg(&url)
        .current_dir(work.path())
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_secs(1));
    delete(&handles[1]);
    let out = slow.wait_with_output().unwrap();
    assert!(!out.status.success(), "the zip was cut: curl fails");
    let test = sh("unzip -t cut.zip", work.path());
    assert!(!test.status.success(), "never a complete archive");
}

/// A stored object that is not its file any more (a disk's corruption):
/// its entry fails its SHA-256 as it is read, and the zip is cut there.
#[test]
fn an_entry_that_is_not_its_file_cuts_the_zip() {
    let (server, _dir) = Server::start();
    let token = server.token("alice", &[]);
    let data = bytes(3 * 1024 * 1024, 53);
    let handles = uploaded(
        &server,
        &token,
        &[("first.txt", b"first".to_vec()), ("big.bin", data.clone())],
    );
    let object = crate::util::stored_objects(&server.data_dir)
        .into_iter()
        .find(|p| std::fs::metadata(p).unwrap().len() == data.len() as u64)
        .unwrap();
    let mut corrupt = data;
    corrupt[2 * 1024 * 1024] ^= 0xff;
    std::fs::write(&object, &corrupt).unwrap();
    let answer = tool_ok(&call_tool(
        &server.base,
        &token,
        "get_download_urls",
        json!({"files": handles, "zip": true}),
    ));
    let work = tempfile::tempdir().unwrap();
    let out = sh(answer["zip"]["command"].as_str().unwrap(), work.path());
    assert!(!out.status.success(), "the zip was cut: {}", out_text(&out));
    let name = answer["zip"]["file_name"].as_str().unwrap();
    let test = sh(&format!("unzip -t '{name}'"), work.path());
    assert!(!test.status.success(), "never a complete archive");
}

#[test]
fn a_zip_of_more_files_than_a_batch_takes_is_refused_before_anything() {
    let (server, _dir) = Server::start();
    let token = server.token("alice", &[]);
    let many: Vec<String> = (0..1001).map(|i| format!("file{i}")).collect();
    let result = call_tool(
        &server.base,
        &token,
        "get_download_urls",
        json!({"files": many, "zip": true}),
    );
    let error = tool_error(&result);
    assert!(error.contains("1000"), "{error}");
}
