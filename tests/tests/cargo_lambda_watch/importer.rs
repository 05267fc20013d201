//! The importer function and OAuth under the real `cargo lambda watch`.

use super::*;

/// With an authorization server instead of development tokens: the Python
/// SDK's own OAuth flow (discovery from the mcp function's prefix, dynamic
/// registration, PKCE, RFC 8707), and Claude Code's `claude mcp login`.
/// Imports on the AWS backends: the MCP and issuer functions check the
/// request and start the importer function, an asynchronous invocation
/// through the Lambda API (here cargo lambda watch's, as
/// `infra/cargo-lambda.env` says), which fetches the file from a server on
/// loopback into s3s-fs and writes the outcome to the import's record,
/// where the function that was asked reads it; the file then reaches an
/// action's File field by its handle, and a file a host hands over reaches
/// it through the importer too. Where the emulator differs
/// from AWS: cargo lambda watch answers an `Event` invocation only once the
/// function has ended (Lambda answers 202 at once and runs it after), so
/// the asking function finds the import ended at its first look.
#[test]
fn imports_run_in_the_importer_function_under_the_real_cargo_lambda_watch() {
    let data = sluice_testkit::bytes(300_000, 9);
    let origin = crate::imports::Origin::start(crate::imports::routes, data.clone());
    // An action whose File field takes the imported file (the actions
    // tests' upstream, which says what it received).
    let upstream = crate::actions::Upstream::start();
    let catalog_dir = tempfile::tempdir().unwrap();
    let catalog = catalog_dir.path().join("actions.toml");
    std::fs::write(&catalog, crate::actions::catalog(&upstream.url)).unwrap();
    let stack = Stack::start(
        &[],
        &[
            ("SLUICE_IMPORT_ALLOW_LOOPBACK", "true".into()),
            ("SLUICE_IMPORT_PORTS", origin.port.to_string()),
            ("SLUICE_ACTIONS_FILE", catalog.display().to_string()),
            // A typo: each function names it in its log at cold start.
            ("SLUICE_IMPORT_PORT", "1".into()),
        ],
    );
    let carol = token(&stack.env, "carol", &["files:read", "files:write"]);
    // The importer is compiled by its first invocation: a job of no
    // import, refused, before any import needs it.
    let nothing = stack.work.path().join("no-job.json");
    std::fs::write(
        &nothing,
        json!({"owner": "nobody", "file_id": "AAAAAAAAAAAAAAAAAAAAAA", "request": {"url": "http://127.0.0.1/"}, "declared": false}).to_string(),
    )
    .unwrap();
    let refused = stack.invoke("sluice-importer", &nothing);
    assert!(
        String::from_utf8_lossy(&refused.stdout).contains("no file")
            || String::from_utf8_lossy(&refused.stderr).contains("no file"),
        "{}",
        out_text(&refused)
    );

    // Declared, through the issuer's REST route.
    let imports = stack.url("sluice-issuer", "/imports");
    stack.compiled(&imports, 401);
    let declared = post_json(
        &imports,
        Some(&carol),
        &json!({"url": origin.url("/data.bin"), "size": data.len(), "sha256": sluice::Sha256::of(&data).to_hex()}),
    );
    assert_eq!(declared.status, 200, "{}", declared.text());
    let declared = declared.json();
    assert_eq!(
        declared["state"],
        "ready",
        "{declared}\n{}",
        stack.log_tail()
    );
    assert!(
        stack
            .output()
            .contains("SLUICE_IMPORT_PORT is not a setting: did you mean SLUICE_IMPORT_PORTS?"),
        "{}",
        stack.log_tail()
    );
    assert!(
        stack.output().contains("import stored"),
        "the importer function stored it:\n{}",
        stack.log_tail()
    );

    // Undeclared, through the MCP function's tool: pinned to what arrived,
    // its name from the server's Content-Disposition made plain.
    let mcp = stack.url("sluice-mcp", "");
    let named = crate::util::tool_ok(&crate::util::call_tool(
        &mcp,
        &carol,
        "import_file",
        json!({"url": origin.url("/named")}),
    ));
    assert_eq!(named["state"], "ready", "{named}");
    assert_eq!(named["filename"], "evil name.sh");
    assert_eq!(named["sha256"], sluice::Sha256::of(&data).to_hex());

    // Rejected: its reason, read back by the status tool.
    let missing = crate::util::tool_ok(&crate::util::call_tool(
        &mcp,
        &carol,
        "import_file",
        json!({"url": origin.url("/missing")}),
    ));
    assert_eq!(missing["state"], "rejected", "{missing}");
    let status = crate::util::tool_ok(&crate::util::call_tool(
        &mcp,
        &carol,
        "get_import_status",
        json!({"file_id": missing["file_id"]}),
    ));
    assert!(
        status["reason"].as_str().unwrap().contains("HTTP 404"),
        "{status}"
    );

    // It reaches an action's File field, by its handle; and a file a host
    // hands over (`{download_url, file_id}`) is imported through the
    // importer on the action's way in.
    let runs = token(
        &stack.env,
        "carol",
        &["files:read", "files:write", "actions:execute"],
    );
    let sha = sluice::Sha256::of(&data).to_hex();
    for document in [
        declared["handle"].clone(),
        json!({"download_url": origin.url("/data.bin"), "file_id": "file_handed", "file_name": "handed.bin"}),
    ] {
        let echoed = crate::util::tool_ok(&crate::util::call_tool(
            &mcp,
            &runs,
            "action_echo",
            json!({"document": document}),
        ));
        let file = &echoed["fields"]["document"]["file"];
        assert_eq!(file["sha256"], sha, "{echoed}");
        assert_eq!(file["size"], data.len(), "{echoed}");
    }

    // The imported file comes back byte for byte through the resolver's
    // line (a presigned GET of s3s-fs).
    let resolved = post_json(
        &stack.url("sluice-resolver", "/resolve"),
        Some(&carol),
        &json!({"handle": declared["handle"]}),
    );
    assert_eq!(resolved.status, 200, "{}", resolved.text());
    let down = stack.work.path().join("imported");
    std::fs::create_dir(&down).unwrap();
    let fetched = sh(resolved.json()["command"].as_str().unwrap(), &down);
    assert!(fetched.status.success(), "{}", out_text(&fetched));
    let saved = std::fs::read_dir(&down)
        .unwrap()
        .flatten()
        .next()
        .unwrap()
        .path();
    assert!(std::fs::read(saved).unwrap() == data, "the bytes served");

    zips_are_built_into_the_bucket_by_the_importer(&stack, &carol, &declared, &named, &data);
}

/// The imported files as one zip: the importer function builds it into the
/// bucket in parts when the link is issued (under the watch, before the
/// tool answers: an `Event` invocation is answered once the function
/// ends), and the resolver answers a preview's `HEAD` spending nothing,
/// then a `307` to a presigned GET of s3s-fs that spends the link. A zip
/// whose file's stored bytes are not its pin is never built: the link
/// says why (`410`).
fn zips_are_built_into_the_bucket_by_the_importer(
    stack: &Stack,
    carol: &str,
    declared: &serde_json::Value,
    named: &serde_json::Value,
    data: &[u8],
) {
    let mcp = stack.url("sluice-mcp", "");
    let zipped = crate::util::call_tool(
        &mcp,
        carol,
        "get_download_urls",
        json!({"files": [declared["handle"], named["handle"]], "zip": true}),
    );
    assert_ne!(zipped["isError"], true, "{zipped}\n{}", stack.log_tail());
    let zipped = crate::util::tool_ok(&zipped);
    let zip = &zipped["zip"];
    let url = zip["url"].as_str().unwrap();
    assert!(
        stack.output().contains("zip built into the store"),
        "{}",
        stack.log_tail()
    );
    assert_eq!(request("HEAD", url, &[], None).status, 200, "a preview");
    let got = stack.work.path().join("zipped");
    std::fs::create_dir(&got).unwrap();
    let fetched = sh(zip["command"].as_str().unwrap(), &got);
    assert!(fetched.status.success(), "{}", out_text(&fetched));
    let name = zip["file_name"].as_str().unwrap();
    let test = sh(&format!("unzip -t '{name}'"), &got);
    assert!(test.status.success(), "{}", out_text(&test));
    let read = crate::zip::python_reads(&got.join(name));
    let entries = read["entries"].as_object().unwrap();
    assert_eq!(entries.len(), 3, "two files and SHA256SUMS: {read}");
    let sha = sluice::Sha256::of(data).to_hex();
    for (entry, digest) in entries.iter().filter(|(e, _)| *e != "SHA256SUMS") {
        assert_eq!(digest, &json!(sha), "{entry}");
    }
    assert_eq!(request("GET", url, &[], None).status, 404, "spent");

    // A zip not in the bucket yet (here: taken away once built, as on AWS
    // before the importer is done): 503 with Retry-After, nothing spent.
    let later = crate::util::tool_ok(&crate::util::call_tool(
        &mcp,
        carol,
        "get_download_urls",
        json!({"files": [named["handle"]], "zip": true}),
    ));
    let zips: Vec<PathBuf> = walk(&stack.work.path().join("s3"))
        .into_iter()
        .filter(|p| p.to_string_lossy().ends_with(".zip"))
        .collect();
    assert_eq!(zips.len(), 2, "{zips:?}");
    for zip in zips {
        std::fs::remove_file(zip).unwrap();
    }
    let waiting = request("GET", later["zip"]["url"].as_str().unwrap(), &[], None);
    assert_eq!(waiting.status, 503, "{}", waiting.text());
    assert!(
        waiting.text().contains("still being built"),
        "{}",
        waiting.text()
    );
    assert!(waiting.header("retry-after").is_some(), "{waiting:?}");

    // The declared file's bytes changed in the bucket (same size, so only
    // reading them can tell): its zip is not built, and its link says so.
    let id = declared["file_id"].as_str().unwrap();
    let object = walk(&stack.work.path().join("s3"))
        .into_iter()
        .find(|p| {
            p.to_string_lossy().contains(&format!("/{id}/"))
                && !p.to_string_lossy().contains(".zip")
        })
        .expect("the declared file's object in s3s-fs");
    let mut changed = data.to_vec();
    changed[0] ^= 0xff;
    std::fs::write(&object, &changed).unwrap();
    let refused = crate::util::tool_ok(&crate::util::call_tool(
        &mcp,
        carol,
        "get_download_urls",
        json!({"files": [declared["handle"]], "zip": true}),
    ));
    let gone = request("GET", refused["zip"]["url"].as_str().unwrap(), &[], None);
    assert_eq!(gone.status, 410, "{}", gone.text());
    assert!(
        gone.text().contains("could not be built"),
        "{}",
        gone.text()
    );
}

/// Every file below `dir`.
fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            found.extend(walk(&path));
        } else {
            found.push(path);
        }
    }
    found
}

#[test]
fn oauth_works_under_the_real_cargo_lambda_watch() {
    let auth = crate::oauth::AuthServer::start("RS256");
    let add: Vec<(&str, String)> = auth.env();
    let stack = Stack::start(&["SLUICE_DEV_TOKENS"], &add);
    check_discovery(&stack);
    stack.assert_oauth_py_passes(&auth);

    // `claude mcp list` before `claude mcp login` matters here: login alone
    // looks for the metadata at the origin's root, which cargo lambda watch
    // cannot route (every path there starts with a function's prefix), and
    // then fails at client registration (`docs/aws.md`, Claude Code troubleshooting).
    crate::claude::Claude::new().signs_in_and_connects(&stack.mcp_url());
}
