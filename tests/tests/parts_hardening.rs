//! Uploads in parts under careless and hostile link holders (local store):
//! the quota counts exactly what parts stored, one completion proves a
//! file at a time, and what is staged or joined is readable by sluice
//! alone. Each test failed on the code before its fix (issue 35: P1, P3, P9).

use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};

use crate::util::{Server, bytes, out_text, request, sh, stall_reads_of};

const MIB: usize = 1024 * 1024;

/// Parts of 5 MiB above 1 MiB, a quota of `quota` bytes that one user may
/// fill, and no cap on declared bytes below it.
fn server(dir: &Path, quota: usize) -> Server {
    Server::start_in(
        dir,
        &[
            ("SLUICE_PART_BYTES", "5242880"),
            ("SLUICE_SINGLE_PUT_MAX_BYTES", "1048576"),
            ("SLUICE_QUOTA_BYTES", &quota.to_string()),
            ("SLUICE_MAX_STORED_BYTES_PER_USER", &quota.to_string()),
            ("SLUICE_MAX_PENDING_BYTES", "1000000000000"),
        ],
    )
}

/// Issues `declared` (size and SHA-256 of those bytes) and returns its
/// upload link.
fn issue(server: &Server, token: &str, name: &str, declared: &[u8]) -> String {
    let ticket = server.request_upload(token, name, declared);
    ticket["upload"]["url"].as_str().unwrap().to_owned()
}

/// Sends part `n` (of 5 MiB parts) of `data` to `link`: its status.
fn put_part(link: &str, data: &[u8], n: usize) -> u16 {
    let part = &data[(n - 1) * 5 * MIB..(n * 5 * MIB).min(data.len())];
    let digest = sluice::Sha256::of(part).to_base64();
    request(
        "PUT",
        &format!("{link}/parts/{n}"),
        &[("x-amz-checksum-sha256", &digest)],
        Some(part),
    )
    .status
}

/// The staging file of the only upload in parts under `data_dir`.
fn staging(data_dir: &Path) -> PathBuf {
    sluice_testkit::files_under(&data_dir.join("objects/parts"))
        .into_iter()
        .find(|p| p.file_name().is_some_and(|n| n == "data"))
        .expect("a staging file")
}

/// Opens the FIFO at `path` for writing once a reader has opened it (the
/// one completion reading the staging file); that reader then waits on its
/// reads until the returned end is dropped, when it reads the end of the
/// file.
fn writer_once_read(path: &Path) -> std::fs::File {
    let (sent, got) = std::sync::mpsc::channel();
    let path = path.to_owned();
    std::thread::spawn(move || {
        let _ = sent.send(std::fs::OpenOptions::new().write(true).open(path));
    });
    got.recv_timeout(std::time::Duration::from_secs(30))
        .expect("a completion opened the staging file")
        .unwrap()
}

fn complete(link: &str) -> crate::util::Reply {
    request("POST", &format!("{link}/complete"), &[], None)
}

/// P1 a: completions of parts whose whole is another file, at once, free
/// the parts' bytes once. (Before: each freed the whole size, and the store
/// then took more than its quota.)
#[test]
fn concurrent_disproven_completions_free_the_parts_bytes_once() {
    let dir = tempfile::tempdir().unwrap();
    let server = server(dir.path(), 40 * MIB);
    let token = server.token("alice", &[]);
    let kept = bytes(20 * MIB, 50);
    server.upload(&token, "kept.bin", &kept);
    // 15 MiB whose declared SHA-256 is another file's: stored (35 MiB in
    // all), then refused whole by every completion.
    let liar = bytes(15 * MIB, 51);
    let link = issue(&server, &token, "liar.bin", &bytes(15 * MIB, 52));
    for n in 1..=3 {
        assert_eq!(put_part(&link, &liar, n), 204);
    }
    let statuses = crate::util::concurrently(8, move |_| complete(&link).status);
    assert!(statuses.contains(&400), "{statuses:?}");
    assert!(
        statuses.iter().all(|s| [400, 409].contains(s)),
        "{statuses:?}"
    );

    // 20 MiB stored of 40: a file of 25 MiB (another user's, within his
    // own share) does not fit.
    let big = bytes(25 * MIB, 53);
    let ticket = server.request_upload(&server.token("bob", &[]), "big.bin", &big);
    let work = tempfile::tempdir().unwrap();
    std::fs::write(work.path().join("big.bin"), &big).unwrap();
    let out = sh(ticket["command"].as_str().unwrap(), work.path());
    assert!(!out.status.success(), "over the quota: {}", out_text(&out));
    assert!(out_text(&out).contains("507"), "{}", out_text(&out));
}

/// P1 b: a staging file counts the parts it holds, not its length: a
/// file of 25 MiB whose last part alone arrived takes 5 MiB of the quota
/// when the store is opened again. (Before: its sparse length, 25 MiB.)
#[test]
fn a_staging_file_counts_the_parts_it_holds() {
    let dir = tempfile::tempdir().unwrap();
    let server = server(dir.path(), 30 * MIB);
    let token = server.token("alice", &[]);
    let partial = bytes(25 * MIB, 54);
    let link = issue(&server, &token, "partial.bin", &partial);
    assert_eq!(put_part(&link, &partial, 5), 204);
    server.stop();
    let server = self::server(dir.path(), 30 * MIB);
    // 5 MiB counted: 20 MiB more fit in 30.
    let more = bytes(20 * MIB, 55);
    let ticket = server.request_upload(&server.token("bob", &[]), "more.bin", &more);
    let work = tempfile::tempdir().unwrap();
    std::fs::write(work.path().join("more.bin"), &more).unwrap();
    let out = sh(ticket["command"].as_str().unwrap(), work.path());
    assert!(out.status.success(), "{}", out_text(&out));
}

/// P3: 24 completions at once are answered by one proof: while it reads
/// the joined parts (held here on a FIFO), every other completion is told
/// at once that it is under way, and reads nothing. (Before: each read the
/// whole file again: 24 completions cost 33 times one.)
#[test]
fn concurrent_completions_are_answered_by_one_proof() {
    let dir = tempfile::tempdir().unwrap();
    let server = server(dir.path(), 100 * MIB);
    let token = server.token("alice", &[]);
    let data = bytes(11 * MIB, 56);
    let link = issue(&server, &token, "once.bin", &data);
    for n in 1..=3 {
        assert_eq!(put_part(&link, &data, n), 204);
    }
    // Started afresh, sluice has no running hash of these parts: its join
    // reads the staging file whole, which this test stalls.
    let old_base = server.base.clone();
    server.stop();
    let server = self::server(dir.path(), 100 * MIB);
    let link = link.replacen(&old_base, &server.base, 1);
    let staged = staging(dir.path());
    stall_reads_of(&staged);
    let first = {
        let link = link.clone();
        std::thread::spawn(move || complete(&link))
    };
    let writer = writer_once_read(&staged);
    let others = {
        let link = link.clone();
        crate::util::concurrently(23, move |_| {
            let answer = complete(&link);
            assert!(
                answer.text().contains("already being joined and proven"),
                "{}",
                answer.text()
            );
            answer.status
        })
    };
    assert!(others.iter().all(|s| *s == 409), "{others:?}");
    // The one proof goes on: here it reads what the FIFO gives, nothing,
    // so the parts are not the file declared.
    drop(writer);
    let first = first.join().unwrap();
    assert_eq!(first.status, 400, "{}", first.text());
}

/// P9: the staging file and a file joined from its parts are sluice's
/// alone (0600, as a file uploaded in one PUT is), and the joined file is
/// the staging file moved, not a second name for it. (Before: 0644, and a
/// hard link.)
#[test]
fn staged_and_joined_files_are_private() {
    let dir = tempfile::tempdir().unwrap();
    let server = server(dir.path(), 100 * MIB);
    let token = server.token("alice", &[]);
    let data = bytes(6 * MIB, 57);
    let link = issue(&server, &token, "private.bin", &data);
    assert_eq!(put_part(&link, &data, 1), 204);
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&staging(dir.path())), 0o600);
    assert_eq!(put_part(&link, &data, 2), 204);
    assert_eq!(complete(&link).status, 200);
    let joined: Vec<PathBuf> = sluice_testkit::files_under(&dir.path().join("objects/files"));
    assert_eq!(joined.len(), 1, "{joined:?}");
    assert_eq!(mode(&joined[0]), 0o600);
    use std::os::unix::fs::MetadataExt as _;
    assert_eq!(std::fs::metadata(&joined[0]).unwrap().nlink(), 1);
}
