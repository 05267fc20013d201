//! Actions with File and FileList fields, end to end: the official MCP
//! clients (and raw JSON-RPC) against the real server, which calls an
//! upstream written independently in Python's standard library
//! (`tests/clients/upstream.py`) and decoding what it receives there.

use std::path::{Path, PathBuf};
use std::process::{Child, Command};

use serde_json::{Value, json};

use crate::mcp_clients::root;
use crate::util::{
    BIN, Server, bytes, call_tool, out_text, request, sh, stored_objects, tool_error, tool_names,
    tool_ok,
};

/// The key sluice presents to the test upstream.
pub const UPSTREAM_KEY: &str = "test-upstream-key";

/// The Python upstream; killed on drop.
pub struct Upstream {
    child: Child,
    /// Its base URL.
    pub url: String,
}

impl Upstream {
    pub fn start() -> Self {
        let mut command = Command::new("python3");
        command
            .arg(root().join("tests/clients/upstream.py"))
            .arg(UPSTREAM_KEY);
        let (child, port) = crate::util::spawn_announcing(command);
        Self {
            child,
            url: format!("http://127.0.0.1:{port}"),
        }
    }

    /// What each POST received: path, declared and read lengths, complete.
    pub fn log(&self) -> Vec<Value> {
        let reply = request("GET", &format!("{}/log", self.url), &[], None);
        assert_eq!(reply.status, 200);
        reply.json().as_array().unwrap().clone()
    }
}

impl Drop for Upstream {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The catalog every test here runs (see `tests/clients/actions.py`).
pub fn catalog(upstream: &str) -> String {
    format!(
        r#"
[[actions]]
name = "echo"
description = "Describe what was received."
url = "{upstream}/echo"
auth = {{ header = "Authorization", value = "Bearer {UPSTREAM_KEY}" }}
[[actions.fields]]
name = "note"
type = "String"
[[actions.fields]]
name = "count"
type = "Number"
[[actions.fields]]
name = "document"
type = "File"
required = true
[[actions.fields]]
name = "extras"
type = "FileList"

[[actions]]
name = "echo_link"
description = "Describe what was received, files as links."
url = "{upstream}/echo"
file_delivery = "link"
auth = {{ header = "Authorization", value = "Bearer {UPSTREAM_KEY}" }}
[[actions.fields]]
name = "document"
type = "File"
required = true

[[actions]]
name = "limited"
description = "Takes only small images."
url = "{upstream}/echo"
auth = {{ header = "Authorization", value = "Bearer {UPSTREAM_KEY}" }}
[[actions.fields]]
name = "document"
type = "File"
accept = ["image/*"]
max_size = 10

[[actions]]
name = "stall"
description = "Never answers in time."
url = "{upstream}/stall"
timeout_secs = 2
auth = {{ header = "Authorization", value = "Bearer {UPSTREAM_KEY}" }}

[[actions]]
name = "fail"
description = "Always fails."
url = "{upstream}/fail"
auth = {{ header = "Authorization", value = "Bearer {UPSTREAM_KEY}" }}

[[actions]]
name = "export"
description = "Export a report."
url = "{upstream}/export"
auth = {{ header = "Authorization", value = "Bearer {UPSTREAM_KEY}" }}
[[actions.fields]]
name = "size"
type = "Number"
[[actions.fields]]
name = "name"
type = "String"
"#
    )
}

/// Writes the catalog for `upstream` into `dir` and returns its path.
pub fn write_catalog(dir: &Path, upstream: &str) -> PathBuf {
    let path = dir.join("actions.toml");
    std::fs::write(&path, catalog(upstream)).unwrap();
    path
}

/// A local server running the test catalog, with extra variables.
fn server(upstream: &Upstream, extra: &[(&str, &str)]) -> (Server, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let catalog = write_catalog(dir.path(), &upstream.url);
    let data = dir.path().join("data");
    let mut env = vec![("SLUICE_ACTIONS_FILE", catalog.to_str().unwrap())];
    env.extend_from_slice(extra);
    (Server::start_in(&data, &env), dir)
}

const ALL: &[&str] = &["files:read", "files:write", "actions:execute"];

/// Runs a client script against `base` with `tokens` (all, other user,
/// files only); returns its checks.
pub fn run_actions_client(
    program: &str,
    script: &str,
    base: &str,
    tokens: [String; 3],
    upstream: &Upstream,
) -> Vec<String> {
    let work = tempfile::tempdir().unwrap();
    let [token, other, files_only] = tokens;
    let out = Command::new(program)
        .arg(root().join("tests/clients").join(script))
        .args(["--url", &format!("{base}/mcp")])
        .args(["--token", &token, "--other-token", &other])
        .args(["--files-only-token", &files_only])
        .args(["--upstream", &upstream.url])
        .arg("--workdir")
        .arg(work.path())
        .current_dir(root().join("tests/clients"))
        .output()
        .unwrap_or_else(|e| panic!("{program} could not run ({e}): run `make test`"));
    crate::util::client_checks(script, &out)
}

/// The checks `actions.py` must report, wherever it runs.
pub const PYTHON_CHECKS: &[&str] = &[
    "happy path: the name arrives intact, bytes verified",
    "FileList of two",
    "handle in a String field delivered as plain text",
    "handle replayed within its TTL, through execute_action",
    "data URI on a File field delivered",
    "bare string, malformed data URI, non-array, unknown and missing fields refused by name",
    "forged handle refused",
    "another user's handle refused",
    "max_size and accept refused before any read",
    "25 references with 2 concurrent reads",
    "stalled upstream: timeout error",
    "upstream 500: readable error quoting it",
    "link delivery: fetched once, then 404",
    "export_report returns a link whose download is byte-identical; 10 KiB stays inline",
    "a file from a result passes on to another action",
    "content changed after the URL was issued: refused, upstream never called",
    "without actions:execute: 403",
];

pub fn assert_checks(checks: &[String], expected: &[&str]) {
    for e in expected {
        assert!(
            checks.iter().any(|c| c == e),
            "missing check {e:?}: {checks:?}"
        );
    }
}

#[test]
fn the_python_sdk_client_runs_actions_with_files() {
    let upstream = Upstream::start();
    let (server, _dir) = server(&upstream, &[("SLUICE_ACTION_MAX_CONCURRENT_READS", "2")]);
    let checks = run_actions_client(
        root().join(".venv/bin/python").to_str().unwrap(),
        "actions.py",
        &server.base,
        [
            server.token("alice", ALL),
            server.token("bob", ALL),
            server.token("alice", &["files:read", "files:write"]),
        ],
        &upstream,
    );
    assert_checks(&checks, PYTHON_CHECKS);
    // Every call that reached the upstream carried the configured key.
    let log = upstream.log();
    assert!(!log.is_empty());
    assert!(
        log.iter()
            .all(|e| e["auth"] == format!("Bearer {UPSTREAM_KEY}")),
        "{log:?}"
    );
}

#[test]
fn the_typescript_sdk_client_runs_actions_with_files() {
    let upstream = Upstream::start();
    let (server, _dir) = server(&upstream, &[]);
    let checks = run_actions_client(
        "node",
        "actions.mjs",
        &server.base,
        [
            server.token("alice", ALL),
            server.token("bob", ALL),
            server.token("alice", &["files:read", "files:write"]),
        ],
        &upstream,
    );
    assert_checks(
        &checks,
        &[
            "action_echo: File and FileList delivered, name intact",
            "handle in a String field delivered as plain text",
            "export: link download byte-identical",
            "bare string refused naming the field",
        ],
    );
}

/// Uploads `data` as `name` with the returned curl line; returns the handle.
fn upload(server: &Server, token: &str, name: &str, data: &[u8]) -> String {
    server.upload(token, name, data)["handle"]
        .as_str()
        .unwrap()
        .to_owned()
}

#[test]
fn an_expired_handle_is_refused_naming_the_field_and_the_next_step() {
    let upstream = Upstream::start();
    let (server, _dir) = server(
        &upstream,
        &[
            ("SLUICE_HANDLE_TTL_SECS", "2"),
            ("SLUICE_UPLOAD_TTL_SECS", "2"),
        ],
    );
    let token = server.token("alice", ALL);
    // One PUT to the link (the line's HEAD and PATCH are two requests, which
    // a loaded machine can stretch past a short link). Expiry is a whole
    // second: a two-second link issued late in a second lives a second at
    // least (a one-second one, a tenth of one: seen once in a full run).
    let ticket = server.request_upload(&token, "a.txt", b"hello");
    let url = ticket["upload"]["url"].as_str().unwrap();
    let put = crate::util::request("PUT", url, &[], Some(b"hello"));
    assert_eq!(put.status, 200, "{}", put.text());
    let handle = ticket["handle"].as_str().unwrap().to_owned();
    std::thread::sleep(std::time::Duration::from_millis(3100));
    let message = tool_error(&call_tool(
        &server.base,
        &token,
        "action_echo",
        json!({"document": handle}),
    ));
    assert!(message.starts_with("Field \"document\": "), "{message}");
    assert!(message.contains("expired"), "{message}");
    assert!(
        message.contains("request a new upload (request_upload"),
        "{message}"
    );
    assert!(upstream.log().is_empty(), "the upstream was not called");
}

/// A read that stalls (here: an object replaced by a FIFO no one writes to)
/// fails after the read timeout and frees its slot: with one slot, the next
/// action still runs.
#[test]
fn a_read_that_times_out_frees_its_slot() {
    let upstream = Upstream::start();
    let (server, _dir) = server(
        &upstream,
        &[
            ("SLUICE_ACTION_MAX_CONCURRENT_READS", "1"),
            ("SLUICE_ACTION_READ_TIMEOUT_SECS", "1"),
        ],
    );
    let token = server.token("alice", ALL);
    let stalled = upload(&server, &token, "empty.bin", b"");
    let object = stored_objects(&server.data_dir).pop().unwrap();
    crate::util::stall_reads_of(&object);

    let message = tool_error(&call_tool(
        &server.base,
        &token,
        "action_echo",
        json!({"document": stalled}),
    ));
    assert!(message.contains("Field \"document\""), "{message}");
    assert!(message.contains("longer than 1 s"), "{message}");

    let fine = upload(&server, &token, "fine.txt", b"fine");
    let got = tool_ok(&call_tool(
        &server.base,
        &token,
        "action_echo",
        json!({"document": fine}),
    ));
    assert_eq!(
        got["fields"]["document"]["file"]["sha256"],
        sluice::Sha256::of(b"fine").to_hex()
    );
    // Release the reader still blocked on the FIFO.
    crate::util::release_fifo(&object);
}

/// The stored bytes changed after upload (same size): the upstream receives
/// the body up to the held-back last chunk and never a complete one.
#[test]
fn a_stored_file_that_no_longer_matches_never_reaches_the_upstream_whole() {
    let upstream = Upstream::start();
    let (server, _dir) = server(&upstream, &[]);
    let token = server.token("alice", ALL);
    let data = bytes(3 << 20, 11);
    let handle = upload(&server, &token, "big.bin", &data);
    let object = stored_objects(&server.data_dir).pop().unwrap();
    let mut corrupted = data.clone();
    *corrupted.last_mut().unwrap() ^= 1;
    std::fs::write(&object, &corrupted).unwrap();

    let message = tool_error(&call_tool(
        &server.base,
        &token,
        "action_echo",
        json!({"document": handle}),
    ));
    assert!(message.contains("Field \"document\""), "{message}");
    assert!(message.contains("does not match"), "{message}");
    // The tool can answer before the upstream has written down the body it
    // saw cut (seen once in a full run): its log is read until it has.
    let waited = std::time::Instant::now();
    let mut log = upstream.log();
    while log.is_empty() && waited.elapsed() < std::time::Duration::from_secs(10) {
        std::thread::sleep(std::time::Duration::from_millis(50));
        log = upstream.log();
    }
    assert_eq!(log.len(), 1, "{log:?}");
    assert_eq!(log[0]["complete"], false, "{log:?}");
    assert!(
        log[0]["read"].as_u64().unwrap() < log[0]["declared"].as_u64().unwrap(),
        "{log:?}"
    );
}

#[test]
fn the_total_bytes_cap_is_checked_before_any_read() {
    let upstream = Upstream::start();
    let (server, _dir) = server(&upstream, &[("SLUICE_ACTION_MAX_BYTES", "1000")]);
    let token = server.token("alice", ALL);
    let a = upload(&server, &token, "a.bin", &bytes(600, 1));
    let b = upload(&server, &token, "b.bin", &bytes(600, 2));
    let message = tool_error(&call_tool(
        &server.base,
        &token,
        "action_echo",
        json!({"document": a, "extras": [b]}),
    ));
    assert!(message.contains("1200 bytes"), "{message}");
    assert!(message.contains("limit of 1000 bytes"), "{message}");
    assert!(upstream.log().is_empty());
    // One of them alone fits.
    tool_ok(&call_tool(
        &server.base,
        &token,
        "action_echo",
        json!({"document": a}),
    ));
}

/// The upstream has run by the time its answer is read: a file in it whose
/// name sluice cannot keep is kept under a plain name, not refused.
#[test]
fn a_result_file_with_an_unusable_name_is_kept_under_a_plain_one() {
    let upstream = Upstream::start();
    let (server, _dir) = server(&upstream, &[]);
    let token = server.token("alice", ALL);
    let got = tool_ok(&call_tool(
        &server.base,
        &token,
        "action_export",
        json!({"size": 20_000, "name": "x".repeat(2000)}),
    ));
    assert_eq!(got["report"]["filename"], "export-result.pdf", "{got}");
    assert_eq!(got["report"]["size"], 20_000);
    assert_eq!(got["report"]["sha256"], got["report_sha256"]);
}

#[test]
fn without_actions_the_action_tools_are_not_listed() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start_in(dir.path(), &[("SLUICE_EXAMPLE_ACTIONS", "false")]);
    let names = tool_names(&server.base, &server.token("alice", ALL));
    assert!(names.iter().any(|n| n == "request_upload"), "{names:?}");
    for absent in ["list_actions", "execute_action"] {
        assert!(!names.iter().any(|n| n == absent), "{names:?}");
    }
    assert!(!names.iter().any(|n| n.starts_with("action_")), "{names:?}");
}

/// What `sluice` says when it refuses to start with the catalog `toml`
/// (it must refuse).
fn refused_catalog(toml: &str) -> String {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("actions.toml");
    std::fs::write(&path, toml).unwrap();
    let out = Command::new(BIN)
        .env_clear()
        .env("SLUICE_DATA_DIR", dir.path())
        .env("SLUICE_PORT", "0")
        .env("SLUICE_ACTIONS_FILE", &path)
        .output()
        .unwrap();
    assert!(!out.status.success(), "{}", out_text(&out));
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn a_bad_catalog_stops_the_process_naming_action_and_field() {
    let stderr = refused_catalog(
        "[[actions]]\nname = \"attach\"\ndescription = \"d\"\nurl = \"https://x.example\"\n\
         [[actions.fields]]\nname = \"document\"\ntype = \"Blob\"\n",
    );
    assert!(stderr.contains("\"attach\""), "{stderr}");
    assert!(stderr.contains("\"document\""), "{stderr}");
    assert!(stderr.contains("Blob"), "{stderr}");
}

/// A name whose tool a client would cut or a model API refuse stops the
/// start, naming the action and the limit.
#[test]
fn an_action_name_too_long_for_a_tool_stops_the_process() {
    let name = "attach_the_signed_contract_to_the_customer_record";
    let stderr = refused_catalog(&format!(
        "[[actions]]\nname = \"{name}\"\ndescription = \"d\"\nurl = \"https://x.example\"\n"
    ));
    assert!(stderr.contains(name), "{stderr}");
    assert!(stderr.contains("more than 44"), "{stderr}");
}

/// `sluice` with no configuration: the example upstream and its two
/// actions, driven as a model would, with the returned curl lines.
#[test]
fn the_example_actions_work_with_no_configuration() {
    let (server, _dir) = Server::start();
    let token = server.token("dev", ALL);
    let names = tool_names(&server.base, &token);
    for name in ["action_attach_document", "action_export_report"] {
        assert!(names.iter().any(|n| n == name), "{names:?}");
    }
    let name = "rapport final;v2 (été).pdf";
    let data = bytes(200_000, 5);
    let document = upload(&server, &token, name, &data);
    let extra = upload(&server, &token, "notes.txt", b"notes");
    let got = tool_ok(&call_tool(
        &server.base,
        &token,
        "action_attach_document",
        json!({"review_id": 42, "document": document, "extras": [extra]}),
    ));
    assert_eq!(got["review_id"], 42);
    assert_eq!(got["attached_by"], "dev");
    assert_eq!(got["files"][0]["name"], name);
    assert_eq!(got["files"][0]["content_type"], "application/pdf");
    assert_eq!(got["files"][0]["size"], data.len());
    assert_eq!(
        got["files"][0]["sha256"],
        sluice::Sha256::of(&data).to_hex()
    );
    assert_eq!(got["files"][1]["name"], "notes.txt");

    let report = tool_ok(&call_tool(
        &server.base,
        &token,
        "execute_action",
        json!({"action": "export_report", "fields": {"review_id": 7}}),
    ))["report"]
        .clone();
    assert_eq!(report["size"], 1 << 20, "{report}");
    let work = tempfile::tempdir().unwrap();
    let out = sh(report["command"].as_str().unwrap(), work.path());
    assert!(out.status.success(), "{}", out_text(&out));
    let saved = std::fs::read(work.path().join("review-7-report.csv")).unwrap();
    assert_eq!(saved.len(), 1 << 20);
    assert_eq!(sluice::Sha256::of(&saved).to_hex(), report["sha256"]);
}

/// The same flows on the aws backends: files in s3s-fs (uploaded with the
/// presigned PUTs the curl lines carry), records there too, links spent in
/// the DynamoDB emulator.
#[test]
fn actions_run_on_the_aws_backends() {
    use crate::util::{aws_server as start, aws_token as token_with, provision};
    let emulators = crate::util::Emulators::start();
    provision(&emulators, "actions");
    let upstream = Upstream::start();
    let dir = tempfile::tempdir().unwrap();
    let catalog = write_catalog(dir.path(), &upstream.url);
    let (server, _server_dir) = start(
        &emulators,
        "actions",
        &[
            ("SLUICE_ACTIONS_FILE", catalog.to_str().unwrap()),
            ("SLUICE_ACTION_MAX_CONCURRENT_READS", "2"),
        ],
    );
    let checks = run_actions_client(
        root().join(".venv/bin/python").to_str().unwrap(),
        "actions.py",
        &server.base,
        [
            token_with(&emulators, "alice", ALL),
            token_with(&emulators, "bob", ALL),
            token_with(&emulators, "alice", &["files:read", "files:write"]),
        ],
        &upstream,
    );
    assert_checks(&checks, PYTHON_CHECKS);
}

/// The `mcp` function under the emulated Lambda runtime reads its catalog
/// from the bucket at cold start (`SLUICE_ACTIONS_S3_KEY`) and streams a
/// file from S3 to the upstream.
#[test]
fn the_mcp_function_runs_actions_with_a_catalog_from_s3() {
    use crate::lambda::{event, invoke};
    let emulators = crate::util::Emulators::start();
    let upstream = Upstream::start();
    tokio::runtime::Runtime::new().unwrap().block_on(async {
        let (store, _) = emulators.provision("lambda-actions").await;
        store
            .client()
            .put_object()
            .bucket("lambda-actions")
            .key("config/actions.toml")
            .body(catalog(&upstream.url).into_bytes().into())
            .send()
            .await
            .expect("catalog uploaded");
    });
    // A file uploaded through a sluice on the same bucket and secret.
    let (server, _server_dir) = crate::util::aws_server(&emulators, "lambda-actions", &[]);
    let token = crate::util::aws_token(&emulators, "alice", ALL);
    let data = bytes(2 << 20, 9);
    let handle = upload(&server, &token, "rapport final;v2 (été).pdf", &data);

    let mut env = emulators.env("lambda-actions");
    env.push(("SLUICE_ACTIONS_S3_KEY", "config/actions.toml".into()));
    env.push(("SLUICE_PUBLIC_URL", "https://files.example.com".into()));
    let call = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "action_echo", "arguments": {"document": handle}}});
    let response = invoke(
        "mcp",
        &env,
        vec![event(
            "POST",
            "/mcp",
            json!({"authorization": format!("Bearer {token}"), "content-type": "application/json",
                   "accept": "application/json, text/event-stream", "host": "files.example.com",
                   "mcp-protocol-version": "2025-11-25"}),
            Some(&call.to_string()),
        )],
    )
    .remove(0);
    assert_eq!(response["statusCode"], 200, "{response}");
    let body: Value = serde_json::from_str(response["body"].as_str().unwrap()).unwrap();
    let file = &body["result"]["structuredContent"]["fields"]["document"]["file"];
    assert_eq!(file["sha256"], sluice::Sha256::of(&data).to_hex(), "{body}");
    assert_eq!(file["name"], "rapport final;v2 (été).pdf");
    let log = upstream.log();
    assert_eq!(log.len(), 1);
    assert_eq!(log[0]["complete"], true);
}

/// A batch's handle (`request_uploads`) in a FileList field stands for its
/// files, in order, alone or among other handles; in a File field it is
/// refused as not a file.
#[test]
fn a_batch_handle_fills_a_file_list() {
    let upstream = Upstream::start();
    let (server, _dir) = server(&upstream, &[]);
    let token = server.token("alice", ALL);
    let work = tempfile::tempdir().unwrap();
    let files: Vec<(String, Vec<u8>)> = (0..3)
        .map(|i| {
            (
                format!("part{i}.txt"),
                format!("page {i} of the contract").into_bytes(),
            )
        })
        .collect();
    let entries: Vec<Value> = files
        .iter()
        .map(|(name, data)| {
            std::fs::write(work.path().join(name), data).unwrap();
            json!({"path": name, "size": data.len(), "sha256": sluice::Sha256::of(data).to_hex()})
        })
        .collect();
    let batch = crate::util::tool_ok(&call_tool(
        &server.base,
        &token,
        "request_uploads",
        json!({"files": entries}),
    ));
    let out = crate::util::sh(batch["command"].as_str().unwrap(), work.path());
    assert!(out.status.success(), "{}", crate::util::out_text(&out));
    let single = upload(&server, &token, "cover.txt", b"the cover letter");
    let result = crate::util::tool_ok(&call_tool(
        &server.base,
        &token,
        "action_echo",
        json!({"document": single, "extras": [batch["handle"], single]}),
    ));
    let extras = result["fields"]["extras"].as_array().unwrap();
    let names: Vec<&str> = extras
        .iter()
        .map(|e| e["file"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        ["part0.txt", "part1.txt", "part2.txt", "cover.txt"],
        "{result}"
    );
    for ((_, data), got) in files.iter().zip(extras) {
        assert_eq!(got["file"]["sha256"], sluice::Sha256::of(data).to_hex());
    }
    let refused = tool_error(&call_tool(
        &server.base,
        &token,
        "action_echo",
        json!({"document": batch["handle"]}),
    ));
    assert!(refused.starts_with("Field \"document\": "), "{refused}");
}
