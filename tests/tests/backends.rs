//! Backends composed by configuration: the bytes in an S3-compatible bucket
//! (s3s-fs) with the records, the ledger and the outbox in SQLite on this
//! machine (`SLUICE_STORE=s3`, records left at `sqlite`): one VM on MinIO,
//! R2, B2 or S3 itself, no DynamoDB. The DynamoDB emulator is stopped
//! before the server starts, so nothing of this can lean on it.

use serde_json::json;

use crate::util::{Emulators, Server, bytes, call_tool, out_text, request, sh, tool_ok};

const MIB: usize = 1024 * 1024;

/// Creates bucket `name` on the emulator, and nothing else.
fn bucket(emulators: &Emulators, name: &str) {
    tokio::runtime::Runtime::new()
        .unwrap()
        .block_on(emulators.create_bucket(name));
}

/// A server whose bytes are in bucket `name` and whose records are in
/// `data_dir`, sending files over 1 MiB in parts of 5 MiB.
fn on_bucket_with_sqlite(emulators: &Emulators, name: &str, data_dir: &std::path::Path) -> Server {
    let env = emulators.s3_env(name);
    let mut vars: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    vars.extend([
        ("SLUICE_PART_BYTES", "5242880"),
        ("SLUICE_SINGLE_PUT_MAX_BYTES", "1048576"),
    ]);
    Server::start_in(data_dir, &vars)
}

/// The objects s3s-fs keeps for bucket `name` (files under its directory,
/// without its own metadata and upload staging).
fn bucket_objects(emulators: &Emulators, name: &str) -> Vec<std::path::PathBuf> {
    sluice_testkit::files_under(&emulators.s3_dir().join(name))
        .into_iter()
        .filter(|p| p.to_string_lossy().contains("/files/"))
        .filter(|p| !p.file_name().unwrap().to_string_lossy().starts_with("."))
        .collect()
}

#[test]
fn s3_bytes_with_sqlite_records_round_trip_on_one_machine() {
    let mut emulators = Emulators::start();
    emulators.stop_dynamodb();
    bucket(&emulators, "onevm");
    let data_dir = tempfile::tempdir().unwrap();
    let server = on_bucket_with_sqlite(&emulators, "onevm", data_dir.path());
    // One machine: the token comes from the secret it generated and keeps.
    let token = server.token("alice", &[]);
    let small = bytes(300 * 1024, 3);
    let large = bytes(11 * MIB + 7, 5);
    let mut handles = Vec::new();
    for (name, data) in [("small.bin", &small), ("large.bin", &large)] {
        let ticket = server.request_upload(&token, name, data);
        let line = ticket["command"].as_str().unwrap();
        if data.len() > MIB {
            assert!(line.contains("/sh"), "a large file goes in parts: {line}");
        }
        let work = tempfile::tempdir().unwrap();
        std::fs::write(work.path().join(name), data).unwrap();
        let out = sh(line, work.path());
        assert!(out.status.success(), "{name}: {}", out_text(&out));
        handles.push((
            name,
            data.clone(),
            ticket["handle"].as_str().unwrap().to_owned(),
            ticket["file_id"].as_str().unwrap().to_owned(),
        ));
    }
    // The bytes went to the bucket, none to the data directory, whose
    // SQLite files hold the records.
    assert_eq!(
        bucket_objects(&emulators, "onevm").len(),
        2,
        "both files are in the bucket"
    );
    assert!(
        crate::util::stored_objects(data_dir.path()).is_empty(),
        "no object in the data directory"
    );
    assert!(data_dir.path().join("files.sqlite3").exists());
    assert!(data_dir.path().join("ledger.sqlite3").exists());

    // A restart on the same directory and bucket still knows every file.
    server.stop();
    let server = on_bucket_with_sqlite(&emulators, "onevm", data_dir.path());
    let listed = tool_ok(&call_tool(&server.base, &token, "list_files", json!({})));
    let text = listed.to_string();
    for (name, ..) in &handles {
        assert!(
            text.contains(name),
            "{name} is listed after a restart: {text}"
        );
    }
    for (name, data, handle, _) in &handles {
        let download = server.download_ticket(&token, handle);
        let line = download["command"].as_str().unwrap();
        assert!(
            !line.contains(&emulators.s3_url),
            "the model sees sluice's link, not the bucket's: {line}"
        );
        let work = tempfile::tempdir().unwrap();
        let out = sh(line, work.path());
        assert!(out.status.success(), "{name}: {}", out_text(&out));
        assert_eq!(
            &std::fs::read(work.path().join(name)).unwrap(),
            data,
            "{name}"
        );
    }
    // A download link is single-use through the SQLite ledger.
    let (_, _, handle, _) = &handles[0];
    let link = server.download_url(&token, handle);
    let first = request("GET", &link, &[], None);
    assert_eq!(first.status, 307);
    assert!(
        first
            .header("location")
            .unwrap()
            .starts_with(&emulators.s3_url)
    );
    assert_eq!(request("GET", &link, &[], None).status, 404, "spent");

    // Deleting a file takes its object out of the bucket.
    let (_, _, _, file_id) = &handles[1];
    let auth = format!("Bearer {token}");
    let deleted = request(
        "DELETE",
        &format!("{}/files/{file_id}", server.base),
        &[("Authorization", &auth)],
        None,
    );
    assert!(deleted.status < 300, "{}", deleted.text());
    assert_eq!(
        bucket_objects(&emulators, "onevm").len(),
        1,
        "the deleted file's object is gone"
    );
}

/// A server told to keep its bytes in S3 says what it lacks before it
/// serves, and the start line names both backends.
#[test]
fn the_bucket_is_required_and_the_start_names_both_backends() {
    let emulators = Emulators::start();
    bucket(&emulators, "named");
    let data_dir = tempfile::tempdir().unwrap();
    let out = std::process::Command::new(crate::util::BIN)
        .env_clear()
        .env("SLUICE_DATA_DIR", data_dir.path())
        .env("SLUICE_PORT", "0")
        .env("SLUICE_STORE", "s3")
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("SLUICE_S3_BUCKET"), "{err}");
    let server = on_bucket_with_sqlite(&emulators, "named", data_dir.path());
    let said = server.printed_starting("backends: ");
    assert!(
        said.contains("s3://named") && said.contains("SQLite"),
        "{said}"
    );
}

/// A line in parts PUTs to the bucket, not to sluice: when the bucket is
/// what it cannot reach, the line names the bucket's host (tried again by
/// the line's one probe, the script probing nothing of its own), and not
/// sluice's, which answered.
#[test]
fn a_bucket_the_line_cannot_reach_is_named() {
    let mut emulators = Emulators::start();
    bucket(&emulators, "gone");
    let data_dir = tempfile::tempdir().unwrap();
    let server = on_bucket_with_sqlite(&emulators, "gone", data_dir.path());
    let token = server.token("alice", &[]);
    let data = bytes(6 * MIB, 9);
    let ticket = server.request_upload(&token, "big.bin", &data);
    let line = ticket["command"].as_str().unwrap();
    assert!(line.contains("/sh"), "in parts: {line}");
    emulators.kill_s3();
    let work = tempfile::tempdir().unwrap();
    std::fs::write(work.path().join("big.bin"), &data).unwrap();
    let out = sh(line, work.path());
    assert!(!out.status.success(), "{}", out_text(&out));
    let said = String::from_utf8_lossy(&out.stderr);
    let s3_host = emulators.s3_url.trim_start_matches("http://");
    let sluice_host = server.base.trim_start_matches("http://");
    assert_eq!(said.matches("is unreachable").count(), 1, "{said}");
    assert!(
        said.contains(&format!("{s3_host} is unreachable")),
        "{said}"
    );
    assert!(
        !said.contains(&format!("{sluice_host} is unreachable")),
        "{said}"
    );
}

/// The README's command for one machine on an S3-compatible bucket, run as
/// written: only the endpoint (the emulator's), the credentials (the
/// emulator's) and `cargo run` (the binary under test, on a data directory
/// of the test's, on a free port) change. The server it starts keeps its
/// bytes in the bucket the command names and its records in SQLite.
#[test]
fn the_readme_command_for_a_bucket_runs_as_written() {
    let emulators = Emulators::start();
    let blocks = crate::readme::sh_blocks("README.md", "# sluice");
    let block = blocks
        .iter()
        .find(|b| b.contains("SLUICE_STORE=s3"))
        .expect("the README's bucket command");
    let bucket_name = block
        .split_whitespace()
        .find_map(|w| w.strip_prefix("SLUICE_S3_BUCKET="))
        .expect("the command names its bucket");
    bucket(&emulators, bucket_name);
    let data_dir = tempfile::tempdir().unwrap();
    let env = emulators.s3_env(bucket_name);
    let secret = |name: &str| env.iter().find(|(k, _)| *k == name).unwrap().1.clone();
    let script = block
        .replace("https://minio.internal:9000", &emulators.s3_url)
        .replace(
            "AWS_ACCESS_KEY_ID=…",
            &format!("AWS_ACCESS_KEY_ID={}", secret("AWS_ACCESS_KEY_ID")),
        )
        .replace(
            "AWS_SECRET_ACCESS_KEY=…",
            &format!("AWS_SECRET_ACCESS_KEY={}", secret("AWS_SECRET_ACCESS_KEY")),
        )
        .replace(
            "cargo run --profile fast -p sluice-local --features aws",
            &format!(
                "SLUICE_DATA_DIR='{}' AWS_EC2_METADATA_DISABLED=true exec '{}'",
                data_dir.path().display(),
                crate::util::BIN
            ),
        );
    assert!(!script.contains("cargo run"), "{script}");
    let mut command = std::process::Command::new("bash");
    command.args(["-c", &script]);
    let server =
        sluice_testkit::process::Spawned::sluice(command).expect("the command starts sluice");
    let said = server
        .printed_starting("backends: ", std::time::Duration::from_secs(10))
        .expect("the start names its backends");
    assert!(
        said.contains(&format!("s3://{bucket_name}")) && said.contains("SQLite"),
        "{said}"
    );
    let token = crate::util::token_for(data_dir.path(), "alice", &[]);
    let data = bytes(2000, 8);
    let reply = crate::util::post_json(
        &format!("{}/uploads", server.base),
        Some(&token),
        &json!({"filename": "r.bin", "size": data.len(), "sha256": sluice::Sha256::of(&data).to_hex()}),
    );
    assert_eq!(reply.status, 200, "{}", reply.text());
    let work = tempfile::tempdir().unwrap();
    std::fs::write(work.path().join("r.bin"), &data).unwrap();
    let out = sh(reply.json()["command"].as_str().unwrap(), work.path());
    assert!(out.status.success(), "{}", out_text(&out));
    assert_eq!(
        bucket_objects(&emulators, bucket_name).len(),
        1,
        "the file is in the bucket"
    );
}
