//! An import's outcome outlives a restart; a large import goes into S3 in parts.

use super::*;

/// An import's outcome is in the records, not only in the process that
/// fetched it: after a restart its status still says ready (with the
/// handle) or rejected (with the reason).
#[test]
fn an_imports_outcome_outlives_a_restart() {
    let data = bytes(70 * 1024, 62);
    let origin = Origin::start(routes, data.clone());
    let dir = tempfile::tempdir().unwrap();
    let port = origin.port.to_string();
    let env = [
        ("SLUICE_IMPORT_ALLOW_LOOPBACK", "true"),
        ("SLUICE_IMPORT_PORTS", port.as_str()),
    ];
    let server = Server::start_in(dir.path(), &env);
    let token = server.token("alice", SCOPES);
    let ready = tool_ok(&import(
        &server,
        &token,
        json!({"url": origin.url("/data.bin")}),
    ));
    assert_eq!(ready["state"], "ready", "{ready}");
    let refused = tool_ok(&import(
        &server,
        &token,
        json!({"url": origin.url("/missing")}),
    ));
    assert_eq!(refused["state"], "rejected", "{refused}");
    server.stop();

    let server = Server::start_in(dir.path(), &env);
    let token = server.token("alice", SCOPES);
    let status = |id: &Value| {
        tool_ok(small(&call_tool(
            &server.base,
            &token,
            "get_import_status",
            json!({"file_id": id}),
        )))
    };
    let again = status(&ready["file_id"]);
    assert_eq!(again["state"], "ready", "{again}");
    assert_eq!(again["handle"], ready["handle"]);
    assert_eq!(again["sha256"], sluice::Sha256::of(&data).to_hex());
    let again = status(&refused["file_id"]);
    assert_eq!(again["state"], "rejected", "{again}");
    assert!(
        again["reason"].as_str().unwrap().contains("HTTP 404"),
        "{again}"
    );
    assert_eq!(again["source"], "http://127.0.0.1");
    // Another user's import is still not theirs to ask about.
    let bob = server.token("bob", SCOPES);
    let theirs = call_tool(
        &server.base,
        &bob,
        "get_import_status",
        json!({"file_id": ready["file_id"]}),
    );
    assert!(tool_error(&theirs).contains("no file"), "{theirs}");
}

/// Where the store receives the bytes and takes parts (S3, here s3s-fs
/// with the records in SQLite), a file over the single-PUT size is
/// imported in parts as its body arrives, each part checked by the store
/// and the whole hashed on the way, and is ready without a second read;
/// declared or not. A body that is not the file declared leaves no object
/// and no part behind.
#[test]
fn a_large_import_goes_into_s3_in_parts() {
    const MIB: usize = 1024 * 1024;
    let data = bytes(12 * MIB + 5, 63);
    let origin = Origin::start(routes, data.clone());
    let emulators = crate::util::Emulators::start();
    tokio::runtime::Runtime::new()
        .unwrap()
        .block_on(emulators.create_bucket("imports"));
    let env = emulators.s3_env("imports");
    let port = origin.port.to_string();
    let mut vars: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    vars.extend([
        ("SLUICE_PART_BYTES", "5242880"),
        ("SLUICE_SINGLE_PUT_MAX_BYTES", "1048576"),
        ("SLUICE_IMPORT_ALLOW_LOOPBACK", "true"),
        ("SLUICE_IMPORT_PORTS", port.as_str()),
    ]);
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start_in(dir.path(), &vars);
    let token = server.token("alice", SCOPES);
    let digest = sluice::Sha256::of(&data).to_hex();
    let declared = tool_ok(&import(
        &server,
        &token,
        json!({"url": origin.url("/data.bin"), "size": data.len(), "sha256": digest}),
    ));
    assert_eq!(declared["state"], "ready", "{declared}");
    let (back, _) = downloaded(&server, &token, declared["handle"].as_str().unwrap());
    assert!(back == data, "the declared import comes back byte for byte");
    let undeclared = tool_ok(&import(
        &server,
        &token,
        json!({"url": origin.url("/named")}),
    ));
    assert_eq!(undeclared["state"], "ready", "{undeclared}");
    assert_eq!(undeclared["sha256"], digest);
    let (back, _) = downloaded(&server, &token, undeclared["handle"].as_str().unwrap());
    assert!(
        back == data,
        "the undeclared import comes back byte for byte"
    );

    let objects = |emulators: &crate::util::Emulators| {
        sluice_testkit::files_under(&emulators.s3_dir().join("imports"))
            .into_iter()
            .filter(|p| p.to_string_lossy().contains("/files/"))
            .count()
    };
    let before = objects(&emulators);
    let other = rejected(&import(
        &server,
        &token,
        json!({"url": origin.url("/other"), "size": data.len(), "sha256": digest}),
    ));
    assert!(other.contains("not the file declared"), "{other}");
    let shorter = rejected(&import(
        &server,
        &token,
        json!({"url": origin.url("/named"), "size": data.len() + 1, "sha256": digest}),
    ));
    assert!(shorter.contains("not the 12582918 declared"), "{shorter}");
    assert_eq!(
        objects(&emulators),
        before,
        "nothing kept of a rejected import"
    );
}
