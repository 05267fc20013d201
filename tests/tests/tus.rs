//! The upload link as one resumable stream where sluice receives the bytes
//! (tus 1.0, `sluice::service::uploads::stream`): `HEAD` says where it stands,
//! `PATCH` appends from there, and every bad request of DESIGN.md's table
//! is refused with nothing written; the model's line resumes after it is
//! cut and the server restarted; clients nobody here wrote (tuspy,
//! tus-js-client) upload, stop, and resume across a restart.

use std::path::Path;
use std::time::Duration;

use crate::util::{
    Reply, Server, bytes, call_tool, out_text, post_json, request, response_status, sh,
    stalled_request, stored_objects, tool_ok,
};

const TUS: (&str, &str) = ("Tus-Resumable", "1.0.0");
const OCTETS: (&str, &str) = ("Content-Type", "application/offset+octet-stream");

/// The upload link of a new file of `data`, from `POST /uploads`.
fn link_for(server: &Server, data: &[u8]) -> String {
    let token = server.token("alice", &[]);
    let ticket = server.request_upload(&token, "f.bin", data);
    ticket["upload"]["url"].as_str().unwrap().to_owned()
}

fn head(link: &str) -> Reply {
    request("HEAD", link, &[TUS], None)
}

/// Where the upload stands, as `HEAD` says.
fn offset(link: &str) -> u64 {
    let reply = head(link);
    assert_eq!(reply.status, 200, "{}", reply.text());
    reply.header("upload-offset").unwrap().parse().unwrap()
}

fn patch(link: &str, at: u64, body: &[u8]) -> Reply {
    patch_with(link, at, body, &[])
}

/// A `PATCH` of `body` at `at`, with `more` headers.
fn patch_with(link: &str, at: u64, body: &[u8], more: &[(&str, &str)]) -> Reply {
    let at = at.to_string();
    let mut headers = vec![TUS, OCTETS, ("Upload-Offset", at.as_str())];
    headers.extend_from_slice(more);
    request("PATCH", link, &headers, Some(body))
}

/// A `PATCH` that declares the file's digest (`Repr-Digest`, as it is sent).
fn patch_declaring(link: &str, at: u64, body: &[u8], digest: &str) -> Reply {
    patch_with(link, at, body, &[("Repr-Digest", digest)])
}

/// `Repr-Digest`'s member for the SHA-256 of `data`.
fn repr_digest(data: &[u8]) -> String {
    format!("sha-256=:{}:", sluice::Sha256::of(data).to_base64())
}

/// A page's file started as the page starts it, before it has hashed the
/// file (no `sha256`): its upload link, and the page's `upload_id`.
fn started_to_come(server: &Server, token: &str, data: &[u8]) -> (String, String) {
    let page = tool_ok(&call_tool(
        &server.base,
        token,
        "request_browser_upload",
        serde_json::json!({"filename": "scan.pdf"}),
    ));
    let start_url = format!("{}/start", page["page_url"].as_str().unwrap());
    let start = |name: &str| {
        post_json(
            &start_url,
            None,
            &serde_json::json!({"filename": name, "size": data.len()}),
        )
    };
    let first = start("scan.pdf");
    assert_eq!(first.status, 200, "{}", first.text());
    let link = first.json()["stream"]["link"].as_str().unwrap().to_owned();
    // Started again (a reload): the same file by its name and size; a file
    // of another name is another file.
    let again = start("scan.pdf");
    assert_eq!(again.status, 200, "{}", again.text());
    assert_eq!(again.json()["file_id"], first.json()["file_id"]);
    let other = start("other.pdf");
    assert_eq!(other.status, 409, "{}", other.text());
    (link, page["upload_id"].as_str().unwrap().to_owned())
}

/// Whether a writer holds the lock of an upload's stream under
/// `data_dir`, as `/proc/locks` lists it (looking takes no lock).
fn stream_locked(data_dir: &Path) -> bool {
    use std::os::unix::fs::MetadataExt as _;
    let locks = std::fs::read_to_string("/proc/locks").unwrap_or_default();
    sluice_testkit::files_under(&data_dir.join("objects").join("parts"))
        .iter()
        .filter(|p| p.file_name().is_some_and(|n| n == "stream"))
        .filter_map(|p| std::fs::metadata(p).ok())
        .any(|m| {
            let inode = format!(":{} ", m.ino());
            locks
                .lines()
                .any(|l| l.contains("FLOCK") && l.contains(&inode))
        })
}

/// The bytes of the stream an upload keeps so far, on disk.
fn staged_bytes(data_dir: &Path) -> u64 {
    sluice_testkit::files_under(&data_dir.join("objects").join("parts"))
        .iter()
        .filter(|p| p.file_name().is_some_and(|n| n == "stream"))
        .map(|p| std::fs::metadata(p).unwrap().len())
        .sum()
}

#[test]
fn head_and_patch_speak_tus_and_the_last_byte_makes_the_file_ready() {
    let (server, _dir) = Server::start();
    let data = bytes(300_000, 1);
    let link = link_for(&server, &data);

    let h = head(&link);
    assert_eq!(h.status, 200);
    assert_eq!(h.header("tus-resumable"), Some("1.0.0"));
    assert_eq!(h.header("upload-offset"), Some("0"));
    assert_eq!(h.header("upload-length"), Some("300000"));
    assert_eq!(h.header("cache-control"), Some("no-store"));
    assert!(
        h.header("upload-expires")
            .is_some_and(|v| v.ends_with("GMT"))
    );

    let first = patch(&link, 0, &data[..100_000]);
    assert_eq!(first.status, 204, "{}", first.text());
    assert_eq!(first.header("upload-offset"), Some("100000"));
    assert_eq!(offset(&link), 100_000);
    assert!(
        stored_objects(&server.data_dir).is_empty(),
        "nothing readable yet"
    );

    let last = patch(&link, 100_000, &data[100_000..]);
    assert_eq!(last.status, 204, "{}", last.text());
    assert_eq!(last.header("upload-offset"), Some("300000"));
    // Ready at once: no completion request.
    assert_eq!(offset(&link), 300_000);
    let objects = stored_objects(&server.data_dir);
    assert_eq!(objects.len(), 1);
    assert_eq!(std::fs::read(&objects[0]).unwrap(), data);
    assert_eq!(staged_bytes(&server.data_dir), 0);

    // OPTIONS (not a preflight) says what the server speaks.
    let options = request("OPTIONS", &link, &[], None);
    assert_eq!(options.status, 204);
    assert_eq!(options.header("tus-version"), Some("1.0.0"));
    assert_eq!(options.header("tus-extension"), Some("expiration"));
    assert!(
        options
            .header("tus-max-size")
            .unwrap()
            .parse::<u64>()
            .unwrap()
            > 0
    );
}

/// DESIGN.md's bad input, for the stream: each refused with its status,
/// and nothing written (the upload stands where it stood).
#[test]
fn bad_appends_are_refused_and_write_nothing() {
    let (server, _dir) = Server::start();
    let data = bytes(10_000, 2);
    let link = link_for(&server, &data);
    assert_eq!(patch(&link, 0, &data[..4000]).status, 204);

    // Another offset: 409, and where it stands.
    for at in [0, 3999, 4001, 10_000] {
        let wrong = patch(
            &link,
            at,
            &data[at as usize..(at as usize + 10).min(10_000)],
        );
        assert_eq!(wrong.status, 409, "offset {at}: {}", wrong.text());
        assert_eq!(wrong.header("upload-offset"), Some("4000"));
        assert!(
            wrong.message().contains("stands at byte 4000"),
            "{}",
            wrong.message()
        );
    }
    // No version, another version: 412 with the version spoken.
    let at = [("Upload-Offset", "4000")];
    for headers in [
        vec![OCTETS, at[0]],
        vec![("Tus-Resumable", "0.2.2"), OCTETS, at[0]],
    ] {
        let refused = request("PATCH", &link, &headers, Some(&data[4000..]));
        assert_eq!(refused.status, 412, "{}", refused.text());
        assert_eq!(refused.header("tus-version"), Some("1.0.0"));
    }
    // Another content type: 415.
    for ct in ["application/octet-stream", "text/plain"] {
        let refused = request(
            "PATCH",
            &link,
            &[TUS, ("Content-Type", ct), at[0]],
            Some(&data[4000..]),
        );
        assert_eq!(refused.status, 415, "{ct}: {}", refused.text());
    }
    // No offset, or one that is not plain digits: 400.
    for bad in ["", "+4000", "4000.0", "-1"] {
        let refused = request(
            "PATCH",
            &link,
            &[TUS, OCTETS, ("Upload-Offset", bad)],
            Some(&data[4000..]),
        );
        assert_eq!(refused.status, 400, "{bad:?}: {}", refused.text());
    }
    // Bytes past the length: 413, nothing past it kept.
    let mut longer = data[4000..].to_vec();
    longer.push(0);
    let past = patch(&link, 4000, &longer);
    assert_eq!(past.status, 413, "{}", past.text());
    assert_eq!(offset(&link), 4000);
    assert_eq!(staged_bytes(&server.data_dir), 4000);
    // Chunked (no length to refuse up front): cut at the last checkpoint.
    let chunked = request(
        "PATCH",
        &link,
        &[TUS, OCTETS, at[0], ("Transfer-Encoding", "chunked")],
        Some(&longer),
    );
    assert_eq!(chunked.status, 413, "{}", chunked.text());
    assert_eq!(offset(&link), 4000);
    assert_eq!(staged_bytes(&server.data_dir), 4000);
    assert!(stored_objects(&server.data_dir).is_empty());

    // After all that, the rest goes on from where it stood.
    assert_eq!(patch(&link, 4000, &data[4000..]).status, 204);
    assert_eq!(
        std::fs::read(&stored_objects(&server.data_dir)[0]).unwrap(),
        data
    );

    // A finished link: as a PUT to it is answered (409, uploaded already).
    let finished = patch(&link, 10_000, b"x");
    assert_eq!(finished.status, 409, "{}", finished.text());
    let put = request("PUT", &link, &[], Some(&data));
    assert_eq!(put.status, finished.status);

    // A foreign (forged) link, and HEAD of it: as today, 404.
    // (Its last character changed: to `y` where it was `x`, one link in 64.)
    let last = if link.ends_with('x') { 'y' } else { 'x' };
    let forged = format!("{}{last}", &link[..link.len() - 1]);
    assert_eq!(patch(&forged, 0, b"x").status, 404);
    assert_eq!(head(&forged).status, 404);
}

/// A stream, its checkpoint and the object it becomes are sluice's alone
/// (0600), as a file uploaded in one PUT is.
#[test]
fn a_stream_and_its_object_are_private() {
    use std::os::unix::fs::{MetadataExt as _, PermissionsExt as _};
    let (server, _dir) = Server::start();
    let data = bytes(100_000, 9);
    let link = link_for(&server, &data);
    assert_eq!(patch(&link, 0, &data[..50_000]).status, 204);
    let staged = sluice_testkit::files_under(&server.data_dir.join("objects").join("parts"));
    assert_eq!(staged.len(), 2, "the stream and its checkpoint: {staged:?}");
    for path in staged {
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600, "{}", path.display());
    }
    assert_eq!(patch(&link, 50_000, &data[50_000..]).status, 204);
    let object = &stored_objects(&server.data_dir)[0];
    let mode = std::fs::metadata(object).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    assert_eq!(
        std::fs::metadata(object).unwrap().nlink(),
        1,
        "the stream moved, not linked twice"
    );
}

/// The last byte decides: bytes that are not the file pinned are freed at
/// once, nothing is readable, and the answer says to ask again.
#[test]
fn a_stream_of_other_bytes_is_freed_at_its_last_byte() {
    let (server, _dir) = Server::start();
    let data = bytes(50_000, 3);
    let link = link_for(&server, &data);
    assert_eq!(patch(&link, 0, &data[..20_000]).status, 204);
    let other = bytes(30_000, 4);
    let refused = patch(&link, 20_000, &other);
    assert_eq!(refused.status, 400, "{}", refused.text());
    assert!(
        refused.message().contains("not the file declared"),
        "{}",
        refused.message()
    );
    assert!(
        refused.message().contains("ask for a new upload"),
        "{}",
        refused.message()
    );
    assert!(stored_objects(&server.data_dir).is_empty());
    assert_eq!(staged_bytes(&server.data_dir), 0);
    assert_eq!(offset(&link), 0);
}

/// An expired link: what the link answers today (404), to HEAD and PATCH.
#[test]
fn an_expired_link_is_refused_as_today() {
    let dir = tempfile::tempdir().unwrap();
    // Three seconds, not one: a link's expiry is a whole second, so a
    // one-second link issued late in a second lived a tenth of one, and a
    // loaded machine's first PATCH came after it (seen once in CI).
    let server = Server::start_in(
        dir.path(),
        &[
            ("SLUICE_HANDLE_TTL_SECS", "3"),
            ("SLUICE_UPLOAD_TTL_SECS", "3"),
        ],
    );
    let data = bytes(1000, 5);
    let link = link_for(&server, &data);
    assert_eq!(patch(&link, 0, &data[..10]).status, 204);
    std::thread::sleep(Duration::from_millis(3100));
    let put = request("PUT", &link, &[], Some(&data));
    assert_eq!(put.status, 404, "{}", put.text());
    assert_eq!(patch(&link, 10, &data[10..]).status, 404);
    assert_eq!(head(&link).status, 404);
}

/// Two writers of one link at once, in one process and in two processes
/// sharing the data directory: one writes, the other is refused (409)
/// before a byte of it is read, and the file comes out right.
#[test]
fn two_writers_of_one_link_one_writes_the_other_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let one = Server::start_in(dir.path(), &[]);
    let two = Server::start_in(dir.path(), &[]);
    let data = bytes(200_000, 6);
    let link = link_for(&one, &data);
    let path = link
        .split_once("/u/")
        .map(|(_, t)| format!("/u/{t}"))
        .unwrap();

    // A writer that sent 1000 bytes and stalls, on the first process.
    let stalled = stalled_request(
        &one.base,
        &format!(
            "PATCH {path} HTTP/1.1\r\nTus-Resumable: 1.0.0\r\nContent-Type: application/offset+octet-stream\r\n\
             Upload-Offset: 0\r\nContent-Length: {}",
            data.len()
        ),
        &data[..1000],
    );
    // Until the stalled writer holds the stream's lock (as another process
    // sees it).
    let until = std::time::Instant::now() + Duration::from_secs(30);
    while !stream_locked(dir.path()) {
        assert!(
            std::time::Instant::now() < until,
            "the first writer never held the stream"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    for server in [&one, &two] {
        let other = format!("{}{path}", server.base);
        let refused = patch(&other, 0, &data);
        assert_eq!(refused.status, 409, "{}: {}", server.base, refused.text());
        assert!(
            refused.message().contains("in progress"),
            "{}",
            refused.message()
        );
    }
    // The stalled writer goes away: what it sent is kept, and the file
    // is finished through the other process.
    stalled.shutdown(std::net::Shutdown::Both).unwrap();
    drop(stalled);
    let other = format!("{}{path}", two.base);
    let mut at = None;
    for _ in 0..100 {
        let reply = patch(&other, 1000, &data[1000..]);
        if reply.status == 204 {
            at = reply.header("upload-offset").map(str::to_owned);
            break;
        }
        assert_eq!(reply.status, 409, "{}", reply.text());
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(at.as_deref(), Some("200000"));
    let objects = stored_objects(dir.path());
    assert_eq!(std::fs::read(&objects[0]).unwrap(), data);
    let _ = response_status(
        &mut std::net::TcpStream::connect(one.base.trim_start_matches("http://")).unwrap(),
        Duration::from_millis(1),
    );
}

/// The model's line: cut off part way, the server restarted, run again: it
/// sends from where the server stands (never from the start), and the file
/// is stored; run once more, it sends nothing.
#[test]
fn the_line_resumes_after_a_cut_and_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start_in(dir.path(), &[]);
    let data = bytes(96 * 1024 * 1024, 7);
    let token = server.token("alice", &[]);
    let ticket = server.request_upload(&token, "big.bin", &data);
    let line = ticket["command"].as_str().unwrap().to_owned();
    let link = ticket["upload"]["url"].as_str().unwrap().to_owned();
    assert!(line.contains("-X PATCH") && !line.contains("/sh"), "{line}");
    let work = tempfile::tempdir().unwrap();
    std::fs::write(work.path().join("big.bin"), &data).unwrap();

    // Cut: the line's curl sends slowly, and is killed once the server
    // has checkpointed part of it (64 MiB: HEAD says so); then the server
    // is killed too.
    let slow = work.path().join("bin");
    curl_limited(&slow, "20M");
    let mut cut = {
        use std::os::unix::process::CommandExt as _;
        std::process::Command::new("sh")
            .args(["-c", &line])
            .current_dir(work.path())
            .env(
                "PATH",
                format!("{}:{}", slow.display(), std::env::var("PATH").unwrap()),
            )
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .process_group(0)
            .spawn()
            .unwrap()
    };
    let until = std::time::Instant::now() + Duration::from_secs(60);
    while offset(&link) == 0 && std::time::Instant::now() < until {
        std::thread::sleep(Duration::from_millis(100));
    }
    let group = cut.id().to_string();
    let killed = std::process::Command::new("kill")
        .args(["-s", "KILL", "--", &format!("-{group}")])
        .status()
        .unwrap();
    assert!(killed.success());
    let _ = cut.wait();
    drop(server);
    let server = Server::start_in(dir.path(), &[]);
    let old_base = link.split("/u/").next().unwrap().to_owned();
    let link = link.replace(&old_base, &server.base);
    let line = line.replace(&old_base, &server.base);
    let kept = offset(&link);
    assert!(kept >= 64 << 20 && kept < data.len() as u64, "kept {kept}");

    let out = sh(&line, work.path());
    assert!(out.status.success(), "{}", out_text(&out));
    let said = out_text(&out);
    assert!(
        said.contains(&format!("{}/{} stored", data.len(), data.len())),
        "{said}"
    );
    assert_eq!(offset(&link), data.len() as u64);
    let objects = stored_objects(dir.path());
    assert_eq!(
        sluice::Sha256::of(&std::fs::read(&objects[0]).unwrap()),
        sluice::Sha256::of(&data)
    );

    let again = sh(&line, work.path());
    assert!(again.status.success(), "{}", out_text(&again));
    assert!(
        out_text(&again).contains("sluice: stored"),
        "{}",
        out_text(&again)
    );
}

/// tuspy (PyPI), a tus client of another language: it uploads part of the
/// file to the link and stops; the server restarts; it takes the upload up
/// again from the server's offset (not from the start) and finishes it.
#[test]
fn tuspy_resumes_the_link_across_a_restart() {
    let python = sluice_testkit::root().join(".venv/bin/python");
    resumes_across_a_restart(8, |link, file, stop| {
        let mut cmd = std::process::Command::new(&python);
        cmd.arg(sluice_testkit::root().join("tests/clients/tus_upload.py"));
        client_args(&mut cmd, link, file, stop);
        cmd
    });
}

/// tus-js-client (npm), the library the page and the widget send files
/// with, here in Node: the same.
#[test]
fn tus_js_client_resumes_the_link_across_a_restart() {
    resumes_across_a_restart(10, |link, file, stop| {
        let mut cmd = std::process::Command::new("node");
        cmd.arg(sluice_testkit::root().join("tests/clients/tus_upload.mjs"))
            .current_dir(sluice_testkit::root().join("tests/clients"));
        client_args(&mut cmd, link, file, stop);
        cmd
    });
}

/// A tus client's arguments: the link, the file, 1 MiB requests, and where
/// to stop, if it does.
fn client_args(cmd: &mut std::process::Command, link: &str, file: &Path, stop: Option<u64>) {
    cmd.arg(link).arg(file).arg((1024 * 1024).to_string());
    if let Some(stop) = stop {
        cmd.arg(stop.to_string());
    }
}

/// A tus client (`client(link, file, stop_at)`, which prints where it
/// started and where it ended as JSON) uploads 2 MiB of a file of `seed`
/// and stops; the server restarts; the client takes the upload up from
/// the server's offset and finishes it, byte for byte.
fn resumes_across_a_restart(
    seed: u64,
    client: impl Fn(&str, &Path, Option<u64>) -> std::process::Command,
) {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start_in(dir.path(), &[]);
    let data = bytes(5 * 1024 * 1024 + 17, seed);
    let link = link_for(&server, &data);
    let work = tempfile::tempdir().unwrap();
    let file = work.path().join("f.bin");
    std::fs::write(&file, &data).unwrap();
    let run = |link: &str, stop: Option<u64>| {
        let out = client(link, &file, stop).output().unwrap();
        assert!(out.status.success(), "{}", out_text(&out));
        serde_json::from_slice::<serde_json::Value>(&out.stdout).unwrap()
    };
    let first = run(&link, Some(2 * 1024 * 1024));
    assert_eq!(first["started"], 0, "{first}");
    let kept = offset(&link);
    assert!(
        kept >= 2 * 1024 * 1024 && kept < data.len() as u64,
        "kept {kept}"
    );
    drop(server);
    let server = Server::start_in(dir.path(), &[]);
    let link = format!("{}/u/{}", server.base, link.split("/u/").nth(1).unwrap());
    let second = run(&link, None);
    assert_eq!(
        second["started"], kept,
        "resumed from the server's offset: {second}"
    );
    assert_eq!(second["offset"], data.len(), "{second}");
    let objects = stored_objects(dir.path());
    assert_eq!(std::fs::read(&objects[0]).unwrap(), data);
}

/// A `curl` in `dir` that is the real one sending at most `rate` a second
/// (a line a test can cut part way).
fn curl_limited(dir: &Path, rate: &str) {
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::create_dir_all(dir).unwrap();
    let real = String::from_utf8(
        std::process::Command::new("sh")
            .args(["-c", "command -v curl"])
            .output()
            .unwrap()
            .stdout,
    )
    .unwrap();
    let script = dir.join("curl");
    std::fs::write(
        &script,
        format!(
            "#!/bin/sh\nexec {} --limit-rate {rate} \"$@\"\n",
            real.trim()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// A person's page starts sending before it has hashed the file, and
/// declares the digest with the last bytes: until then the file lists no
/// digest; bytes that may be the last are refused without one (or with one
/// that is not a SHA-256), nothing written; with it the file is ready,
/// pinned to the digest declared.
#[test]
fn a_page_declares_the_digest_with_the_last_bytes() {
    let (server, _dir) = Server::start();
    let token = server.token("alice", &[]);
    let data = bytes(10_000, 5);
    // The mark of a digest to come is no digest a client may declare.
    let marked = post_json(
        &format!("{}/uploads", server.base),
        Some(&token),
        &serde_json::json!({"filename": "f.bin", "size": 58, "sha256": sluice::Sha256::TO_COME}),
    );
    assert_eq!(marked.status, 400, "{}", marked.text());
    assert!(
        marked.text().contains("mark of a digest still to come"),
        "{}",
        marked.text()
    );
    let (link, upload_id) = started_to_come(&server, &token, &data);
    let listed = tool_ok(&call_tool(
        &server.base,
        &token,
        "list_files",
        serde_json::json!({}),
    ));
    let file = &listed["files"][0];
    assert_eq!(file["state"], "pending", "{listed}");
    assert!(file.get("sha256").is_none(), "no digest yet: {listed}");

    assert_eq!(patch(&link, 0, &data[..4000]).status, 204);
    let last = patch(&link, 4000, &data[4000..]);
    assert_eq!(last.status, 400, "{}", last.text());
    assert!(
        last.text().contains("declared with its last bytes"),
        "{}",
        last.text()
    );
    for bad in ["sha-256=:bm90IGEgZGlnZXN0:", "sha-256=abc", "md5=:AAAA:"] {
        let refused = patch_declaring(&link, 4000, &data[4000..], bad);
        assert_eq!(refused.status, 400, "{bad}: {}", refused.text());
    }
    assert_eq!(offset(&link), 4000, "nothing was written");

    let done = patch_declaring(&link, 4000, &data[4000..], &repr_digest(&data));
    assert_eq!(done.status, 204, "{}", done.text());
    assert_eq!(offset(&link), 10_000);
    let status = tool_ok(&call_tool(
        &server.base,
        &token,
        "get_upload_status",
        serde_json::json!({"upload_id": upload_id}),
    ));
    assert_eq!(status["state"], "ready", "{status}");
    assert_eq!(status["sha256"], sluice::Sha256::of(&data).to_hex());
    let objects = stored_objects(&server.data_dir);
    assert_eq!(std::fs::read(&objects[0]).unwrap(), data);
}

/// A digest declared stands: another on a later request is refused with
/// nothing written, and bytes that are not the file declared are refused
/// at their last byte and freed, as for a file pinned when it was asked for.
#[test]
fn a_digest_declared_stands_and_other_bytes_are_refused() {
    let (server, _dir) = Server::start();
    let token = server.token("alice", &[]);
    let data = bytes(10_000, 6);
    let (link, _) = started_to_come(&server, &token, &data);
    let other = bytes(10_000, 8);
    // Declared early, with the first bytes: allowed.
    let first = patch_declaring(&link, 0, &data[..4000], &repr_digest(&other));
    assert_eq!(first.status, 204, "{}", first.text());
    let again = patch_declaring(&link, 4000, &data[4000..], &repr_digest(&data));
    assert_eq!(again.status, 409, "{}", again.text());
    assert!(
        again
            .text()
            .contains("declared before, and this request declares another"),
        "{}",
        again.text()
    );
    assert_eq!(offset(&link), 4000, "nothing was written");
    let last = patch(&link, 4000, &data[4000..]);
    assert_eq!(last.status, 400, "{}", last.text());
    assert!(
        last.text().contains("not the file declared"),
        "{}",
        last.text()
    );
    assert!(stored_objects(&server.data_dir).is_empty());
    assert_eq!(staged_bytes(&server.data_dir), 0, "the bytes were freed");

    // A file pinned when it was asked for takes its own digest declared
    // again, and refuses another.
    let link = link_for(&server, &data);
    let refused = patch_declaring(&link, 0, &data, &repr_digest(&other));
    assert_eq!(refused.status, 409, "{}", refused.text());
    let same = patch_declaring(&link, 0, &data, &repr_digest(&data));
    assert_eq!(same.status, 204, "{}", same.text());
}
