//! Faults injected into the real parts: the S3 emulator killed mid-upload,
//! at redemption and mid-download, and the local store's disk filled up.
//! Each leaves a clear answer (503, 507), nothing partial visible, no link
//! spent for nothing, and the same request working once the part is back.
//! (The ledger's faults are in `hardening.rs` (SQLite locked) and
//! `aws.rs` (DynamoDB down).)

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::json;

use crate::util::Emulators;
use crate::util::{Server, bytes, call_tool, out_text, request, sh, stored_objects};
use crate::util::{aws_server as start, aws_token as token_with, provision};

/// Runs `line` in `dir` in the background, its output kept.
fn spawn_line(line: &str, dir: &Path) -> std::process::Child {
    Command::new("sh")
        .args(["-c", line])
        .current_dir(dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// The file behind `handle`, through a download link and S3's redirect.
fn download_through_s3(server: &Server, token: &str, handle: &str) -> Vec<u8> {
    let download = server.download_ticket(token, handle);
    let got = request(
        "GET",
        download["download"]["url"].as_str().unwrap(),
        &[],
        None,
    );
    let location = got.header("location").expect("a redirect to S3").to_owned();
    request("GET", &location, &[], None).body
}

/// Waits until `path` holds at least `len` bytes: the transfer is under way.
fn wait_for_bytes(path: &Path, len: u64) {
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while std::fs::metadata(path).map(|m| m.len()).unwrap_or(0) < len {
        assert!(
            std::time::Instant::now() < deadline,
            "no transfer into {}",
            path.display()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn file_state(server: &Server, token: &str, file_id: &str) -> String {
    let listed = call_tool(&server.base, token, "list_files", json!({}));
    listed["structuredContent"]["files"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["file_id"] == file_id)
        .unwrap_or_else(|| panic!("{file_id} is listed: {listed}"))["state"]
        .as_str()
        .unwrap()
        .to_owned()
}

/// S3 dies while a client is sending a file through its presigned PUT: the
/// client's command fails, nothing of the file becomes visible (it stays
/// `pending`, a download is refused as not uploaded), and once S3 is back
/// the very same curl line stores it.
#[test]
fn s3_killed_mid_upload_leaves_nothing_and_the_same_line_works_after() {
    let mut emulators = Emulators::start();
    provision(&emulators, "fault-put");
    let (server, _dir) = start(&emulators, "fault-put", &[]);
    let token = token_with(&emulators, "alice", &[]);
    let data = bytes(4 * 1024 * 1024, 7);
    let ticket = server.request_upload(&token, "big.bin", &data);
    let line = ticket["command"].as_str().unwrap();
    let work = tempfile::tempdir().unwrap();
    std::fs::write(work.path().join("big.bin"), &data).unwrap();

    // The same line, slowed down so that S3 can die in the middle of it.
    let slowed = line.replacen(
        "curl --fail-with-body",
        "curl --limit-rate 512k --fail-with-body",
        1,
    );
    let upload = spawn_line(&slowed, work.path());
    std::thread::sleep(Duration::from_millis(1500));
    emulators.kill_s3();
    let out = upload.wait_with_output().unwrap();
    assert!(!out.status.success(), "the upload cannot have completed");

    emulators.restart_s3();
    let file_id = ticket["file_id"].as_str().unwrap();
    assert_eq!(file_state(&server, &token, file_id), "pending");
    let handle = ticket["handle"].as_str().unwrap();
    let refused = server.resolve(&token, handle);
    assert_eq!(refused.status, 409, "{}", refused.text());
    assert!(
        refused.message().contains("not been uploaded"),
        "{}",
        refused.text()
    );

    let out = sh(line, work.path());
    assert!(out.status.success(), "{}", out_text(&out));
    assert_eq!(file_state(&server, &token, file_id), "ready");
    assert_eq!(download_through_s3(&server, &token, handle), data);
}

/// S3 is out of reach when a line in parts starts (sluice answers 503,
/// "try again in a few seconds", with a Retry-After): the line itself
/// waits and asks again, as S3's own 503s (SlowDown) are asked again, and
/// once S3 is back within that minute it stores the file without being run
/// again. The same holds for each part's URL, its PUT and the completion:
/// every call of the script carries the same retries.
#[test]
fn a_line_in_parts_waits_out_a_storage_that_cannot_answer_right_now() {
    let mut emulators = Emulators::start();
    provision(&emulators, "fault-retry");
    let mib = 1024 * 1024;
    let (server, _dir) = start(
        &emulators,
        "fault-retry",
        &[
            ("SLUICE_SINGLE_PUT_MAX_BYTES", "5242880"),
            ("SLUICE_PART_BYTES", "5242880"),
        ],
    );
    let token = token_with(&emulators, "alice", &[]);
    let data = bytes(12 * mib + 5, 11);
    let ticket = server.request_upload(&token, "big.bin", &data);
    let line = ticket["command"].as_str().unwrap();
    let work = tempfile::tempdir().unwrap();
    std::fs::write(work.path().join("big.bin"), &data).unwrap();

    emulators.kill_s3();
    let file_id = ticket["file_id"].as_str().unwrap();
    let link = ticket["upload"]["url"].as_str().unwrap();
    let down = request("GET", &format!("{link}/parts"), &[], None);
    assert_eq!(down.status, 503, "{}", down.text());
    assert!(down.header("retry-after").is_some(), "{}", down.text());

    let upload = spawn_line(line, work.path());
    std::thread::sleep(Duration::from_secs(2));
    emulators.restart_s3();
    let out = upload.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", out_text(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("part 3 of 3 sent"),
        "it went in parts: {}",
        out_text(&out)
    );
    assert_eq!(file_state(&server, &token, file_id), "ready");
    let handle = ticket["handle"].as_str().unwrap();
    assert_eq!(download_through_s3(&server, &token, handle), data);
}

/// S3 is down when a download link is redeemed: a clear 503 that says to
/// try again, the link not spent, and the same link works once S3 is back.
#[test]
fn s3_down_at_redemption_is_503_and_the_link_is_not_spent() {
    let mut emulators = Emulators::start();
    provision(&emulators, "fault-get");
    let (server, _dir) = start(&emulators, "fault-get", &[]);
    let token = token_with(&emulators, "alice", &[]);
    let data = bytes(300 * 1024, 8);
    let ticket = server.upload(&token, "a.bin", &data);
    let handle = ticket["handle"].as_str().unwrap();
    let link = server.download_url(&token, handle);

    emulators.kill_s3();
    let down = request("GET", &link, &[], None);
    assert_eq!(down.status, 503, "{}", down.text());
    assert!(down.header("retry-after").is_some());
    assert!(down.message().contains("try again"), "{}", down.text());
    // Issuing another link needs S3 too: the same clear answer, not a 500.
    let issue = server.resolve(&token, handle);
    assert_eq!(issue.status, 503, "{}", issue.text());

    emulators.restart_s3();
    let back = request("GET", &link, &[], None);
    assert_eq!(back.status, 307, "the link was not spent: {}", back.text());
    let location = back.header("location").unwrap().to_owned();
    assert_eq!(request("GET", &location, &[], None).body, data);
    // Spent now, by the redemption that succeeded.
    assert_eq!(request("GET", &link, &[], None).status, 404);
}

/// S3 dies while a client downloads through the presigned URL it was
/// redirected to: the link was spent by that redirect, but the presigned
/// URL itself is what the client retries (it stays valid for its few
/// minutes), and it gives the whole file once S3 is back.
#[test]
fn s3_killed_mid_download_the_presigned_url_gives_the_file_after() {
    let mut emulators = Emulators::start();
    provision(&emulators, "fault-dl");
    let (server, _dir) = start(&emulators, "fault-dl", &[]);
    let token = token_with(&emulators, "alice", &[]);
    // Larger than what loopback's socket buffers can hold, so that killing
    // S3 cuts the transfer rather than leaving the rest queued in the kernel.
    let data = bytes(24 * 1024 * 1024, 9);
    let ticket = server.upload(&token, "dl.bin", &data);
    let download = server.download_ticket(&token, ticket["handle"].as_str().unwrap());
    let redirect = request(
        "GET",
        download["download"]["url"].as_str().unwrap(),
        &[],
        None,
    );
    assert_eq!(redirect.status, 307, "{}", redirect.text());
    let location = redirect.header("location").unwrap().to_owned();

    let work = tempfile::tempdir().unwrap();
    let partial = work.path().join("partial");
    let mut slow = Command::new("curl")
        .args(["-sS", "--fail", "--limit-rate", "1m", "-o"])
        .arg(&partial)
        .arg(&location)
        .spawn()
        .unwrap();
    wait_for_bytes(&partial, 256 * 1024);
    emulators.kill_s3();
    assert!(!slow.wait().unwrap().success(), "the download was cut");
    assert!(std::fs::metadata(&partial).unwrap().len() < data.len() as u64);

    emulators.restart_s3();
    assert_eq!(request("GET", &location, &[], None).body, data);
}

/// A tmpfs mounted for one test, unmounted on drop (before the directory
/// it was mounted on is removed).
struct Tmpfs(PathBuf, #[allow(dead_code)] tempfile::TempDir);

impl Tmpfs {
    fn mount(size: &str) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let out = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(dir.path())
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "mounting a tmpfs needs root (CI runs as root): {}",
            out_text(&out)
        );
        Self(dir.path().to_path_buf(), dir)
    }

    fn free(&self) -> u64 {
        let out = Command::new("df")
            .args(["--output=avail", "-B1"])
            .arg(&self.0)
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .last()
            .unwrap()
            .trim()
            .parse()
            .unwrap()
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.0).status();
    }
}

/// The disk under the data directory fills up during an upload: 507 with
/// words a person understands, nothing partial left (no object, no
/// temporary file), the link not spent, and the same curl line works once
/// space is freed.
#[test]
fn a_full_disk_is_507_with_nothing_partial_and_uploads_resume_after() {
    let disk = Tmpfs::mount("12m");
    let data_dir = disk.0.join("data");
    let server = Server::start_in(&data_dir, &[]);
    let token = server.token("alice", &[]);
    let data = bytes(3 * 1024 * 1024, 10);
    let ticket = server.request_upload(&token, "big.bin", &data);

    // Leave less room than the file needs.
    let filler = disk.0.join("filler");
    let room = 1024 * 1024;
    std::fs::write(&filler, vec![0u8; (disk.free() - room) as usize]).unwrap();

    let line = ticket["command"].as_str().unwrap();
    let work = tempfile::tempdir().unwrap();
    std::fs::write(work.path().join("big.bin"), &data).unwrap();
    let out = sh(line, work.path());
    assert!(!out.status.success());
    let said = out_text(&out);
    assert!(said.contains("507"), "{said}");
    assert!(said.contains("disk is full"), "{said}");
    assert!(stored_objects(&data_dir).is_empty(), "nothing stored");
    assert!(
        crate::util::files_under(&data_dir.join("tmp")).is_empty(),
        "no temporary file left"
    );

    // The server still answers, and once space returns the same link works.
    std::fs::remove_file(&filler).unwrap();
    let out = sh(line, work.path());
    assert!(out.status.success(), "{}", out_text(&out));
    let download = server.download_ticket(&token, ticket["handle"].as_str().unwrap());
    let got = request(
        "GET",
        download["download"]["url"].as_str().unwrap(),
        &[],
        None,
    );
    assert_eq!(got.status, 200);
    assert_eq!(got.body, data);
    drop(server);
}
