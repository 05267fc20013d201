//! Deleting a file before it expires (`delete_file`, `DELETE /files/{file}`):
//! the record and the bytes go, an upload under way (a stream, or in
//! parts on S3) is dropped, and every
//! handle and link of the file answers as expired at once, on every replica;
//! a second delete answers the same as the first.

use std::path::Path;

use serde_json::{Value, json};

use crate::util::{
    Server, bytes, call_tool, out_text, request, stored_objects, tool_error, tool_ok,
};

const MIB: usize = 1024 * 1024;

/// Parts of 5 MiB above 1 MiB, so a 12 MiB file goes in three.
const PARTS: &[(&str, &str)] = &[
    ("SLUICE_PART_BYTES", "5242880"),
    ("SLUICE_SINGLE_PUT_MAX_BYTES", "1048576"),
];

/// `DELETE /files/{file}` as `token`.
fn delete(base: &str, token: &str, file: &str) -> crate::util::Reply {
    let auth = format!("Bearer {token}");
    request(
        "DELETE",
        &format!("{base}/files/{file}"),
        &[("Authorization", &auth)],
        None,
    )
}

/// Runs an upload line that fails from its second part on: the first part
/// is stored, the upload in parts is under way.
fn upload_one_part(ticket: &Value, data: &[u8], name: &str) {
    let work = tempfile::tempdir().unwrap();
    std::fs::write(work.path().join(name), data).unwrap();
    let out = std::process::Command::new("sh")
        .arg("-c")
        .arg(ticket["command"].as_str().unwrap())
        .current_dir(work.path())
        .env(
            "PATH",
            sluice_testkit::counting_curl(work.path(), Some(2)).unwrap(),
        )
        .output()
        .unwrap();
    assert!(!out.status.success(), "{}", out_text(&out));
    let link = ticket["upload"]["url"].as_str().unwrap();
    assert_eq!(
        request("GET", &format!("{link}/parts"), &[], None).text(),
        "1\n"
    );
}

/// Every regular file under `dir` whose path contains `needle`.
fn files_named(dir: &Path, needle: &str) -> Vec<std::path::PathBuf> {
    sluice_testkit::files_under(dir)
        .into_iter()
        .filter(|p| p.to_string_lossy().contains(needle))
        .collect()
}

/// After a delete, on `server`: the handle answers expired (REST and the
/// tool), the link the uniform 404, and the file is in nobody's list.
fn all_dead(server: &Server, token: &str, handle: &str, link: &str) {
    let resolved = server.resolve(token, handle);
    assert_eq!(resolved.status, 400, "{}", resolved.text());
    assert!(resolved.text().contains("expired"), "{}", resolved.text());
    let again = call_tool(
        &server.base,
        token,
        "get_download_url",
        json!({ "file": handle }),
    );
    assert!(tool_error(&again).contains("expired"), "{again}");
    assert_eq!(request("GET", link, &[], None).status, 404);
    let listed = tool_ok(&call_tool(&server.base, token, "list_files", json!({})));
    assert!(
        !listed.to_string().contains(handle),
        "a deleted file is not listed: {listed}"
    );
}

#[test]
fn a_deleted_file_is_gone_with_its_bytes_handle_and_links() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start_in(dir.path(), PARTS);
    let alice = server.token("alice", &[]);
    let bob = server.token("bob", &[]);

    // Through the tool, by handle.
    let ticket = server.upload(&alice, "a.txt", b"hello, world");
    let handle = ticket["handle"].as_str().unwrap();
    let file_id = ticket["file_id"].as_str().unwrap();
    let link = server.download_url(&alice, handle);
    assert_eq!(stored_objects(dir.path()).len(), 1);
    // Another user can neither delete it by handle nor find it by id.
    let refused = call_tool(&server.base, &bob, "delete_file", json!({ "file": handle }));
    assert!(tool_error(&refused).contains("another user"), "{refused}");
    assert_eq!(delete(&server.base, &bob, file_id).status, 400);
    assert_eq!(stored_objects(dir.path()).len(), 1, "still there");

    let first = tool_ok(&call_tool(
        &server.base,
        &alice,
        "delete_file",
        json!({ "file": handle }),
    ));
    assert_eq!(first["file_id"], file_id);
    assert_eq!(first["deleted"], true);
    assert_eq!(first["filename"], "a.txt");
    assert!(stored_objects(dir.path()).is_empty(), "the bytes are gone");
    all_dead(&server, &alice, handle, &link);
    // A second delete, by handle or id, through the tool or REST, answers
    // the same as the first.
    for file in [handle, file_id] {
        let again = tool_ok(&call_tool(
            &server.base,
            &alice,
            "delete_file",
            json!({ "file": file }),
        ));
        assert_eq!(again, first);
        let rest = delete(&server.base, &alice, file);
        assert_eq!(rest.status, 200, "{}", rest.text());
        assert_eq!(rest.json(), first);
    }
    // Bob still cannot tell it existed by its id.
    assert_eq!(delete(&server.base, &bob, file_id).status, 400);

    // Through REST, by id, a resumable upload under way: its bytes go.
    let data = bytes(12 * MIB, 5);
    let ticket = server.request_upload(&alice, "big.bin", &data);
    let link = ticket["upload"]["url"].as_str().unwrap();
    let sent = request(
        "PATCH",
        link,
        &[
            ("Tus-Resumable", "1.0.0"),
            ("Content-Type", "application/offset+octet-stream"),
            ("Upload-Offset", "0"),
        ],
        Some(&data[..MIB]),
    );
    assert_eq!(sent.status, 204, "{}", sent.text());
    let file_id = ticket["file_id"].as_str().unwrap();
    assert!(!files_named(&dir.path().join("objects"), file_id).is_empty());
    let gone = delete(&server.base, &alice, file_id);
    assert_eq!(gone.status, 200, "{}", gone.text());
    assert_eq!(gone.json()["file_id"], file_id);
    let left = files_named(&dir.path().join("objects"), file_id);
    assert!(left.is_empty(), "bytes left: {left:?}");
    assert_eq!(
        request("HEAD", link, &[("Tus-Resumable", "1.0.0")], None).status,
        404,
        "its upload link is dead"
    );
    // The line run again cannot bring it back.
    let work = tempfile::tempdir().unwrap();
    std::fs::write(work.path().join("big.bin"), &data).unwrap();
    let out = crate::util::sh(ticket["command"].as_str().unwrap(), work.path());
    assert!(!out.status.success(), "{}", out_text(&out));
    assert!(files_named(&dir.path().join("objects"), file_id).is_empty());

    // A token without files:write may not delete.
    let reader = server.token("alice", &["files:read"]);
    let other = server.upload(&alice, "b.txt", b"b");
    let refused = delete(&server.base, &reader, other["file_id"].as_str().unwrap());
    assert_eq!(refused.status, 403, "{}", refused.text());
    assert_eq!(stored_objects(dir.path()).len(), 1);
}

/// A delete wins over an upload under way: the upload, half sent when the
/// file is deleted, ends 404 when the rest arrives, and nothing of it is
/// left on disk. (Before, it answered 200 and the bytes came back after
/// the delete.)
#[test]
fn a_delete_wins_over_an_upload_under_way() {
    use std::io::Write as _;
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start_in(dir.path(), &[]);
    let alice = server.token("alice", &[]);
    let data = bytes(2 * MIB, 3);
    let ticket = server.request_upload(&alice, "late.bin", &data);
    let url = ticket["upload"]["url"].as_str().unwrap();
    let path = url.strip_prefix(&server.base).unwrap();
    let mut stream = crate::util::stalled_request(
        &server.base,
        &format!("PUT {path} HTTP/1.1\r\nContent-Length: {}", data.len()),
        &data[..MIB],
    );
    // Under way: the server is writing its temporary file.
    let until = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while sluice_testkit::files_under(&dir.path().join("tmp")).is_empty()
        && std::time::Instant::now() < until
    {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    assert!(!sluice_testkit::files_under(&dir.path().join("tmp")).is_empty());
    let gone = delete(&server.base, &alice, ticket["file_id"].as_str().unwrap());
    assert_eq!(gone.status, 200, "{}", gone.text());
    stream.write_all(&data[MIB..]).unwrap();
    let head = crate::util::response_head(&mut stream, std::time::Duration::from_secs(30));
    assert!(head.starts_with("HTTP/1.1 404"), "{head}");
    assert!(stored_objects(dir.path()).is_empty(), "nothing left");
    let listed = tool_ok(&call_tool(&server.base, &alice, "list_files", json!({})));
    assert_eq!(listed["files"], json!([]), "{listed}");
}

/// A delete wins over a download under way: a download of 32 MiB read
/// slowly is cut before its last bytes once the file is deleted, so the
/// client never holds the whole file. (Before, the open file streamed on
/// to the end after the delete.)
#[test]
fn a_delete_wins_over_a_download_under_way() {
    use std::io::{Read as _, Write as _};
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start_in(dir.path(), &[]);
    let alice = server.token("alice", &[]);
    let data = bytes(32 * MIB, 8);
    let ticket = server.upload(&alice, "big.bin", &data);
    let handle = ticket["handle"].as_str().unwrap();
    let link = server.download_url(&alice, handle);
    let path = link.strip_prefix(&server.base).unwrap();
    let addr = server.base.trim_start_matches("http://");
    let mut stream = std::net::TcpStream::connect(addr).unwrap();
    stream
        .write_all(
            format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n").as_bytes(),
        )
        .unwrap();
    // The head, and whatever of the body came with it.
    stream
        .set_read_timeout(Some(std::time::Duration::from_secs(60)))
        .unwrap();
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    let end = loop {
        if let Some(i) = got.windows(4).position(|w| w == b"\r\n\r\n") {
            break i + 4;
        }
        let n = stream.read(&mut buf).unwrap();
        assert!(n > 0, "no head");
        got.extend_from_slice(&buf[..n]);
    };
    let head = String::from_utf8_lossy(&got[..end]).to_lowercase();
    assert!(head.starts_with("http/1.1 200"), "{head}");
    assert!(
        head.contains(&format!("content-length: {}", data.len())),
        "{head}"
    );
    let gone = delete(&server.base, &alice, handle);
    assert_eq!(gone.status, 200, "{}", gone.text());
    let _ = stream.read_to_end(&mut got);
    let body = got.len() - end;
    assert!(
        body < data.len(),
        "{body} bytes arrived of {}: the whole file after its delete",
        data.len()
    );
}

/// Resolving another user's file is not deleting it: a backend with
/// `files:resolve` reads the file it is handed but may not destroy it; one
/// granted `files:delete` may, and the audit line names who deleted it.
#[test]
fn deleting_another_users_file_takes_a_scope_of_its_own() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("sluice.log");
    let server = Server::start_logging(dir.path(), &[], &log);
    let alice = server.token("alice", &[]);
    let ticket = server.upload(&alice, "a.txt", b"hello");
    let handle = ticket["handle"].as_str().unwrap();
    let resolver = server.token("backend", &["files:resolve"]);
    assert_eq!(
        server.resolve(&resolver, handle).status,
        200,
        "it may read it"
    );
    let refused = delete(&server.base, &resolver, handle);
    assert_eq!(refused.status, 403, "{}", refused.text());
    assert_eq!(stored_objects(dir.path()).len(), 1, "still there");
    let deleter = server.token("cleaner", &["files:delete"]);
    let gone = delete(&server.base, &deleter, handle);
    assert_eq!(gone.status, 200, "{}", gone.text());
    assert!(stored_objects(dir.path()).is_empty());
    server.stop();
    let logged = std::fs::read_to_string(&log).unwrap();
    let line = logged
        .lines()
        .find(|l| l.contains("file deleted"))
        .unwrap_or_else(|| panic!("no audit line: {logged}"));
    assert!(line.contains("by=cleaner"), "{line}");
}

mod on_s3 {
    use super::*;
    use crate::util::{Emulators, aws_server, aws_token, provision};

    /// Deleted on one replica, dead at once on the other: the tombstone is
    /// one conditional write to the table both read, strongly consistent.
    /// The object goes from the bucket, and an upload in parts is aborted
    /// (s3s-fs keeps a multipart upload's parts as `.upload_id-<id>.part-N`
    /// files, which its AbortMultipartUpload removes). s3s-fs keeps no
    /// versions, so the version a link was pinned to is not checked here:
    /// S3Store::purge deletes it by its id on a versioned bucket.
    #[test]
    fn a_file_deleted_on_one_replica_is_gone_on_the_other() {
        let emulators = Emulators::start();
        provision(&emulators, "deleting");
        let (a, _a_dir) = aws_server(&emulators, "deleting", PARTS);
        let (b, _b_dir) = aws_server(&emulators, "deleting", PARTS);
        let alice = aws_token(&emulators, "alice", &[]);

        let ticket = a.upload(&alice, "shared.bin", &bytes(4096, 3));
        let handle = ticket["handle"].as_str().unwrap();
        let file_id = ticket["file_id"].as_str().unwrap();
        let link = a.download_url(&alice, handle);
        assert!(!files_named(emulators.s3_dir(), file_id).is_empty());
        let first = tool_ok(&call_tool(
            &b.base,
            &alice,
            "delete_file",
            json!({ "file": handle }),
        ));
        assert_eq!(first["deleted"], true);
        all_dead(&a, &alice, handle, &link);
        assert!(files_named(emulators.s3_dir(), file_id).is_empty());
        let again = delete(&a.base, &alice, file_id);
        assert_eq!(again.status, 200, "{}", again.text());
        assert_eq!(again.json(), first);

        let parts = || {
            std::fs::read_dir(emulators.s3_dir())
                .unwrap()
                .flatten()
                .filter(|e| e.file_name().to_string_lossy().starts_with(".upload_id-"))
                .count()
        };
        let before = parts();
        let data = bytes(11 * MIB, 9);
        let ticket = a.request_upload(&alice, "big.bin", &data);
        upload_one_part(&ticket, &data, "big.bin");
        assert_eq!(parts(), before + 1, "one part stored in the bucket");
        let handle = ticket["handle"].as_str().unwrap();
        let gone = delete(&b.base, &alice, handle);
        assert_eq!(gone.status, 200, "{}", gone.text());
        assert_eq!(parts(), before, "the upload in parts is aborted");
        let link = ticket["upload"]["url"].as_str().unwrap();
        assert_eq!(
            request("GET", &format!("{link}/parts"), &[], None).status,
            404
        );
    }
}

/// On a versioned bucket (moto's S3, which keeps versions; s3s-fs keeps
/// none), a file joined from parts and then deleted leaves no version of
/// its bytes: the abort's delete hid them behind a marker, and the purge
/// deletes every version and marker of the key by id. (Before, the joined
/// data stayed as a noncurrent version until the bucket's rule.)
mod on_versioned_s3 {
    use super::*;
    use sluice::store::{ObjectStore as _, PartStore as _};

    #[test]
    fn a_file_deleted_after_its_parts_leaves_no_version() {
        let (mut moto, port) = crate::util::start_moto();
        let bucket = sluice::config::S3Config {
            bucket: "versioned".into(),
            endpoint: Some(format!("http://127.0.0.1:{port}").parse().unwrap()),
        };
        let runtime = crate::contract::runtime();
        let left = runtime.block_on(async {
            let store = sluice_aws::S3Store::new(&sluice_testkit::emulators::sdk_config(), &bucket);
            let s3 = store.client();
            s3.create_bucket().bucket("versioned").send().await.unwrap();
            s3.put_bucket_versioning()
                .bucket("versioned")
                .versioning_configuration(
                    aws_sdk_s3::types::VersioningConfiguration::builder()
                        .status(aws_sdk_s3::types::BucketVersioningStatus::Enabled)
                        .build(),
                )
                .send()
                .await
                .unwrap();
            let data = bytes(6 * MIB, 9);
            let file = sluice::FileMeta {
                id: sluice::FileId::random(),
                owner: "alice".into(),
                filename: "big.bin".into(),
                content_type: "application/octet-stream".into(),
                size: data.len() as u64,
                sha256: sluice::Sha256::of(&data),
            };
            let key = file.object_key();
            // Joined from one part, as S3 joins an upload in parts.
            let id = s3
                .create_multipart_upload()
                .bucket("versioned")
                .key(key.as_str())
                .send()
                .await
                .unwrap()
                .upload_id()
                .unwrap()
                .to_owned();
            let part = s3
                .upload_part()
                .bucket("versioned")
                .key(key.as_str())
                .upload_id(&id)
                .part_number(1)
                .body(data.clone().into())
                .send()
                .await
                .unwrap();
            let parts = aws_sdk_s3::types::CompletedMultipartUpload::builder()
                .parts(
                    aws_sdk_s3::types::CompletedPart::builder()
                        .part_number(1)
                        .e_tag(part.e_tag().unwrap())
                        .build(),
                )
                .build();
            s3.complete_multipart_upload()
                .bucket("versioned")
                .key(key.as_str())
                .upload_id(&id)
                .multipart_upload(parts)
                .send()
                .await
                .unwrap();
            // What delete_file does: abort the upload in parts, purge.
            let plan = sluice::multipart::Plan::new(file.size, 5 * MIB as u64);
            store.abort(&key, &plan).await.unwrap();
            store.purge(&key).await.unwrap();
            let versions = s3
                .list_object_versions()
                .bucket("versioned")
                .prefix(key.as_str())
                .send()
                .await
                .unwrap();
            versions.versions().len() + versions.delete_markers().len()
        });
        let _ = moto.kill();
        let _ = moto.wait();
        assert_eq!(left, 0, "versions or markers left of a deleted file");
    }
}
