//! The malware gate with a real clamd (Debian's `clamav-daemon`, with a
//! signature database written at test time: `sluice_testkit::clamd`): a
//! clean file turns ready after its scan; the test signatures' files are
//! rejected with the signature's name and gone from disk; with clamd
//! stopped, files stay `scanning` and every path that hands out bytes
//! refuses them (a download link, an action's data URI and link, a batch
//! download, a stored copy, the small-file fallback), until clamd is back.

mod at_once;
mod on_guardduty;

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use sluice_testkit::clamd::{Clamd, EICAR, EICAR_SIGNATURE, MARKER, MARKER_SIGNATURE};

use crate::actions::{Upstream, write_catalog};
use crate::imports::downloaded;
use sluice_testkit::files_under;

use crate::util::{Server, bytes, call_tool, request, stored_objects, tool_error, tool_ok};

const ALL: &[&str] = &["files:read", "files:write", "actions:execute"];

/// `file_id`'s entry in `list_files` once its state is `want`, within a
/// minute (clamd's retries wait up to 30 s).
pub(crate) fn until_state(server: &Server, token: &str, file_id: &str, want: &str) -> Value {
    let started = Instant::now();
    loop {
        let listed = tool_ok(&call_tool(&server.base, token, "list_files", json!({})));
        let entry = listed["files"]
            .as_array()
            .unwrap()
            .iter()
            .find(|f| f["file_id"] == file_id)
            .cloned()
            .unwrap_or_else(|| panic!("{file_id} not listed: {listed}"));
        if entry["state"] == want {
            return entry;
        }
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "{file_id} never {want}: {entry}"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// The state `list_files` shows for `file_id` now.
fn state_of(server: &Server, token: &str, file_id: &str) -> Value {
    let listed = tool_ok(&call_tool(&server.base, token, "list_files", json!({})));
    listed["files"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["file_id"] == file_id)
        .map(|f| f["state"].clone())
        .unwrap_or(Value::Null)
}

/// Whether any file under `dir` holds `needle`.
fn any_file_holds(dir: &Path, needle: &[u8]) -> bool {
    files_under(dir)
        .iter()
        .any(|p| std::fs::read(p).is_ok_and(|data| data.windows(needle.len()).any(|w| w == needle)))
}

/// Sample `name` with label `verdict`, as the Prometheus client's parser
/// reads a scrape (0 when not exposed yet).
fn metric(server: &Server, name: &str, verdict: &str) -> f64 {
    use crate::metrics::{parsed, scrape, value};
    value(
        &parsed(&scrape(server, &[]).text()),
        name,
        &[("verdict", verdict)],
    )
}

#[test]
fn a_clean_file_turns_ready_and_the_test_signatures_files_are_rejected_and_gone() {
    let work = tempfile::tempdir().unwrap();
    let clamd_dir = Clamd::dir_in(work.path());
    let clamd = Clamd::start(&clamd_dir);
    let data_dir = work.path().join("data");
    let log = work.path().join("sluice.log");
    let address = clamd.address();
    let server = Server::start_logging(
        &data_dir,
        &[("SLUICE_SCAN", "clamd"), ("SLUICE_CLAMD", &address)],
        &log,
    );
    let token = server.token("alice", ALL);

    // Clean: scanning, then ready, then downloaded byte for byte.
    let clean = bytes(2 * 1024 * 1024 + 3, 7);
    let ticket = server.upload(&token, "report.bin", &clean);
    let id = ticket["file_id"].as_str().unwrap();
    let entry = until_state(&server, &token, id, "ready");
    assert!(entry.get("reason").is_none(), "{entry}");
    let handle = ticket["handle"].as_str().unwrap();
    assert!(downloaded(&server, &token, handle).0 == clean);

    // The EICAR test file: rejected with the signature's name, its bytes
    // gone from disk, never delivered.
    let eicar = server.upload(&token, "eicar.com", EICAR);
    let eicar_id = eicar["file_id"].as_str().unwrap();
    let entry = until_state(&server, &token, eicar_id, "rejected");
    assert_eq!(
        entry["reason"],
        format!("malware: {EICAR_SIGNATURE}"),
        "{entry}"
    );
    assert!(
        !any_file_holds(&data_dir.join("objects"), EICAR),
        "the infected bytes are gone from disk"
    );
    let refused = tool_error(&call_tool(
        &server.base,
        &token,
        "get_download_url",
        json!({"file": eicar["handle"]}),
    ));
    assert!(
        refused.contains("rejected by its malware scan"),
        "{refused}"
    );
    assert!(refused.contains(EICAR_SIGNATURE), "{refused}");
    let resolved = server.resolve(&token, eicar["handle"].as_str().unwrap());
    assert_eq!(resolved.status, 409, "{}", resolved.text());

    // A larger file carrying the marker somewhere in its middle.
    let mut marked = bytes(1024 * 1024, 3);
    marked.splice(500_000..500_000, MARKER.iter().copied());
    let marked_ticket = server.upload(&token, "notes.txt", &marked);
    let entry = until_state(
        &server,
        &token,
        marked_ticket["file_id"].as_str().unwrap(),
        "rejected",
    );
    assert_eq!(entry["reason"], format!("malware: {MARKER_SIGNATURE}"));
    assert_eq!(
        stored_objects(&data_dir).len(),
        1,
        "only the clean file's object is kept"
    );

    // Counted by verdict, and each verdict has its audit line naming the
    // scanner and its version.
    assert_eq!(metric(&server, "sluice_scans_total", "clean"), 1.0);
    assert_eq!(metric(&server, "sluice_scans_total", "infected"), 2.0);
    assert!(metric(&server, "sluice_scan_seconds_count", "clean") >= 1.0);
    server.stop();
    let log = std::fs::read_to_string(&log).unwrap();
    let scanned: Vec<&str> = log
        .lines()
        .filter(|l| l.contains("sluice::audit") && l.contains("change=\"scanned\""))
        .collect();
    assert_eq!(scanned.len(), 3, "{scanned:#?}");
    assert!(
        scanned.iter().any(|l| l.contains(id)
            && l.contains("verdict=\"clean\"")
            && l.contains("by=\"ClamAV ")),
        "{scanned:#?}"
    );
    assert!(
        scanned
            .iter()
            .any(|l| l.contains(eicar_id) && l.contains(EICAR_SIGNATURE)),
        "{scanned:#?}"
    );
    assert!(
        log.lines()
            .any(|l| l.contains("change=\"rejected\"") && l.contains(eicar_id)),
        "the rejection has its audit line"
    );
}

/// A server whose clamd is not running (yet), with the test actions, and
/// one file of alice's held `scanning`: what the tests of each path that
/// hands out bytes start from.
struct Held {
    server: Server,
    token: String,
    handle: String,
    id: String,
    data: Vec<u8>,
    upstream: Upstream,
    clamd_dir: std::path::PathBuf,
    _work: tempfile::TempDir,
}

impl Held {
    fn new() -> Self {
        let work = tempfile::tempdir().unwrap();
        let clamd_dir = Clamd::dir_in(work.path());
        let upstream = Upstream::start();
        let catalog = write_catalog(work.path(), &upstream.url);
        let address = Clamd::address_in(&clamd_dir);
        let server = Server::start_in(
            &work.path().join("data"),
            &[
                ("SLUICE_SCAN", "clamd"),
                ("SLUICE_CLAMD", &address),
                ("SLUICE_ACTIONS_FILE", catalog.to_str().unwrap()),
            ],
        );
        let token = server.token("alice", ALL);
        let data = b"quarter,revenue\nq1,100\nq2,140\n".repeat(60);
        let ticket = server.upload(&token, "numbers.csv", &data);
        let (id, handle) = (
            ticket["file_id"].as_str().unwrap().to_owned(),
            ticket["handle"].as_str().unwrap().to_owned(),
        );
        let held = Self {
            server,
            token,
            handle,
            id,
            data,
            upstream,
            clamd_dir,
            _work: work,
        };
        assert_eq!(held.state(), "scanning");
        held
    }

    fn state(&self) -> Value {
        state_of(&self.server, &self.token, &self.id)
    }

    fn call(&self, tool: &str, args: Value) -> Value {
        call_tool(&self.server.base, &self.token, tool, args)
    }

    /// A batch entry of the held file's bytes, under `path`.
    fn same_bytes(&self, path: &str) -> Value {
        json!([{"path": path, "size": self.data.len(), "sha256": sluice::Sha256::of(&self.data).to_hex()}])
    }
}

/// What every path says of a file still scanning.
fn says_scanning(what: &str, message: &str) {
    assert!(message.contains("being scanned"), "{what}: {message}");
}

#[test]
fn while_scanning_no_download_link_is_issued() {
    let held = Held::new();
    let message = tool_error(&held.call("get_download_url", json!({"file": held.handle})));
    says_scanning("get_download_url", &message);
    assert!(
        message.contains("call list_files"),
        "the next step: {message}"
    );
    let resolved = held.server.resolve(&held.token, &held.handle);
    assert_eq!(resolved.status, 409, "{}", resolved.text());
    says_scanning("POST /resolve", &resolved.text());
}

/// `action` run with the held file in its File field: refused, naming the
/// field, and its upstream never called.
fn refuses_the_action(action: &str) {
    let held = Held::new();
    let message = tool_error(&held.call(action, json!({"document": held.handle})));
    says_scanning(action, &message);
    assert!(message.starts_with("Field \"document\""), "{message}");
    assert!(
        held.upstream.log().is_empty(),
        "the upstream was never called"
    );
}

#[test]
fn while_scanning_no_action_gets_it_as_a_data_uri() {
    refuses_the_action("action_echo");
}

#[test]
fn while_scanning_no_action_gets_a_link_to_it() {
    refuses_the_action("action_echo_link");
}

#[test]
fn while_scanning_no_batch_download_takes_it() {
    let held = Held::new();
    let batch = held.call("get_download_urls", json!({"files": [held.handle]}));
    says_scanning("get_download_urls", &batch.to_string());
    assert!(
        !batch.to_string().contains("/g/"),
        "no batch line for a file scanning: {batch}"
    );
}

#[test]
fn while_scanning_it_is_no_source_of_a_stored_copy() {
    let held = Held::new();
    let asked = tool_ok(&held.call(
        "request_uploads",
        json!({"files": held.same_bytes("again.csv")}),
    ));
    assert_eq!(asked["counts"]["stored"], 0, "{asked}");
    assert_eq!(
        asked["counts"]["send"], 1,
        "its bytes are asked for again: {asked}"
    );
}

#[test]
fn while_scanning_the_small_file_fallback_refuses_it() {
    let held = Held::new();
    let message = tool_error(&held.call("read_small_file", json!({"file": held.handle})));
    says_scanning("read_small_file", &message);
}

/// With clamd stopped the file stays `scanning` (for seconds, retried);
/// once clamd is back, the retried scan passes it, and each path delivers
/// it; a stored copy of it is ready at once (a copy of a clean file is
/// clean).
#[test]
fn with_the_scanner_stopped_the_file_waits_then_every_path_delivers_it() {
    let held = Held::new();
    for _ in 0..3 {
        std::thread::sleep(Duration::from_secs(1));
        assert_eq!(held.state(), "scanning");
    }
    let _clamd = Clamd::start(&held.clamd_dir);
    until_state(&held.server, &held.token, &held.id, "ready");
    assert!(downloaded(&held.server, &held.token, &held.handle).0 == held.data);
    let echoed = tool_ok(&held.call("action_echo", json!({"document": held.handle})));
    let digest = sluice::Sha256::of(&held.data).to_hex();
    assert!(echoed.to_string().contains(&digest), "{echoed}");
    let small = tool_ok(&held.call("read_small_file", json!({"file": held.handle})));
    assert_eq!(small["size"], held.data.len(), "{small}");
    let batch = tool_ok(&held.call("get_download_urls", json!({"files": [held.handle]})));
    assert!(batch["command"].is_string(), "{batch}");
    let asked = tool_ok(&held.call(
        "request_uploads",
        json!({"files": held.same_bytes("copy.csv")}),
    ));
    assert_eq!(asked["counts"]["stored"], 1, "{asked}");
    let copy_id = asked["files"][0]["file_id"].as_str().unwrap();
    assert_eq!(state_of(&held.server, &held.token, copy_id), "ready");
}

/// An import that brought its file in says `scanning`, with no handle,
/// until the scan passes; then `ready` with its handle.
#[test]
fn an_imported_file_is_scanning_until_its_verdict() {
    let data = bytes(50_000, 51);
    let origin = crate::imports::Origin::start(crate::imports::routes, data.clone());
    let work = tempfile::tempdir().unwrap();
    let clamd_dir = Clamd::dir_in(work.path());
    let (address, port) = (Clamd::address_in(&clamd_dir), origin.port.to_string());
    let server = Server::start_in(
        &work.path().join("data"),
        &[
            ("SLUICE_SCAN", "clamd"),
            ("SLUICE_CLAMD", &address),
            ("SLUICE_IMPORT_ALLOW_LOOPBACK", "true"),
            ("SLUICE_IMPORT_PORTS", &port),
        ],
    );
    let token = server.token("alice", ALL);
    let got = tool_ok(&call_tool(
        &server.base,
        &token,
        "import_file",
        json!({"url": origin.url("/data.bin")}),
    ));
    assert_eq!(got["state"], "scanning", "{got}");
    assert!(
        got.get("handle").is_none(),
        "no handle before the verdict: {got}"
    );
    let _clamd = Clamd::start(&clamd_dir);
    let started = Instant::now();
    let ready = loop {
        let status = tool_ok(&call_tool(
            &server.base,
            &token,
            "get_import_status",
            json!({"file_id": got["file_id"]}),
        ));
        if status["state"] == "ready" {
            break status;
        }
        assert_eq!(status["state"], "scanning", "{status}");
        assert!(started.elapsed() < Duration::from_secs(60), "{status}");
        std::thread::sleep(Duration::from_millis(200));
    };
    let handle = ready["handle"].as_str().unwrap();
    assert!(downloaded(&server, &token, handle).0 == data);
}

/// A person's upload through the page: `get_upload_status` says
/// `scanning` (no handle) until the verdict, and with `wait_seconds` waits
/// through the scan to `ready` and the handle.
#[test]
fn a_persons_upload_is_scanning_until_its_verdict() {
    let work = tempfile::tempdir().unwrap();
    let clamd_dir = Clamd::dir_in(work.path());
    let address = Clamd::address_in(&clamd_dir);
    let server = Server::start_in(
        &work.path().join("data"),
        &[("SLUICE_SCAN", "clamd"), ("SLUICE_CLAMD", &address)],
    );
    let token = server.token("alice", ALL);
    let page = tool_ok(&call_tool(
        &server.base,
        &token,
        "request_browser_upload",
        json!({"filename": "scan.pdf"}),
    ));
    let data = bytes(70_000, 71);
    // What the page does: its start, then the bytes to the upload link.
    let start = crate::util::post_json(
        &format!("{}/start", page["page_url"].as_str().unwrap()),
        None,
        &json!({"filename": "scan.pdf", "size": data.len(), "sha256": sluice::Sha256::of(&data)}),
    );
    assert_eq!(start.status, 200, "{}", start.text());
    let link = start.json()["stream"]["link"].as_str().unwrap().to_owned();
    let put = request("PUT", &link, &[], Some(&data));
    assert!(put.status < 300, "{}", put.text());
    let upload_id = page["upload_id"].as_str().unwrap();
    let status = tool_ok(&call_tool(
        &server.base,
        &token,
        "get_upload_status",
        json!({"upload_id": upload_id}),
    ));
    assert_eq!(status["state"], "scanning", "{status}");
    assert!(
        status.get("handle").is_none(),
        "no handle before the verdict: {status}"
    );
    let _clamd = Clamd::start(&clamd_dir);
    let status = tool_ok(&call_tool(
        &server.base,
        &token,
        "get_upload_status",
        json!({"upload_id": upload_id, "wait_seconds": 45}),
    ));
    assert_eq!(status["state"], "ready", "{status}");
    let handle = status["handle"].as_str().unwrap();
    assert!(downloaded(&server, &token, handle).0 == data);
}

/// The bytes in an S3 bucket (s3s-fs, which checks every presigned PUT's
/// signature and checksum), the records on this machine, and clamd beside:
/// the server streams the object from the bucket into clamd; a clean file
/// is downloaded from the bucket, and the test signature's object is
/// deleted from it.
#[test]
fn with_the_bytes_in_s3_the_infected_object_is_gone_from_the_bucket() {
    let emulators = crate::util::Emulators::start();
    tokio::runtime::Runtime::new()
        .unwrap()
        .block_on(emulators.create_bucket("scanned"));
    let work = tempfile::tempdir().unwrap();
    let clamd_dir = Clamd::dir_in(work.path());
    let clamd = Clamd::start(&clamd_dir);
    let env = emulators.s3_env("scanned");
    let address = clamd.address();
    let mut vars: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    vars.extend([("SLUICE_SCAN", "clamd"), ("SLUICE_CLAMD", address.as_str())]);
    let server = Server::start_in(&work.path().join("data"), &vars);
    let token = server.token("alice", ALL);
    let objects = || {
        files_under(&emulators.s3_dir().join("scanned"))
            .into_iter()
            .filter(|p| p.to_string_lossy().contains("/files/"))
            .filter(|p| !p.file_name().unwrap().to_string_lossy().starts_with('.'))
            .count()
    };
    let clean = bytes(300_000, 61);
    let ticket = server.upload(&token, "clean.bin", &clean);
    until_state(
        &server,
        &token,
        ticket["file_id"].as_str().unwrap(),
        "ready",
    );
    assert!(downloaded(&server, &token, ticket["handle"].as_str().unwrap()).0 == clean);
    let bad = server.upload(&token, "eicar.com", EICAR);
    assert_eq!(objects(), 2, "both objects are in the bucket");
    let entry = until_state(
        &server,
        &token,
        bad["file_id"].as_str().unwrap(),
        "rejected",
    );
    assert_eq!(entry["reason"], format!("malware: {EICAR_SIGNATURE}"));
    assert_eq!(objects(), 1, "the infected object is gone from the bucket");
    assert!(
        !any_file_holds(emulators.s3_dir(), EICAR),
        "no copy of its bytes is left in the bucket's directory"
    );
}

/// A file with no verdict by the operator's deadline is rejected as
/// `unscanned`, and its bytes deleted: failing closed.
#[test]
fn a_file_with_no_verdict_by_the_deadline_is_rejected_unscanned() {
    let work = tempfile::tempdir().unwrap();
    let address = Clamd::address_in(work.path());
    let data_dir = work.path().join("data");
    let server = Server::start_in(
        &data_dir,
        &[
            ("SLUICE_SCAN", "clamd"),
            ("SLUICE_CLAMD", &address),
            ("SLUICE_SCAN_DEADLINE_SECS", "2"),
        ],
    );
    let token = server.token("alice", ALL);
    let data = bytes(40_000, 5);
    let ticket = server.upload(&token, "late.bin", &data);
    let entry = until_state(
        &server,
        &token,
        ticket["file_id"].as_str().unwrap(),
        "rejected",
    );
    assert_eq!(
        entry["reason"], "unscanned: no verdict within 2 s of its first scan",
        "{entry}"
    );
    assert!(
        stored_objects(&data_dir).is_empty(),
        "its bytes are deleted"
    );
    let message = tool_error(&call_tool(
        &server.base,
        &token,
        "get_download_url",
        json!({"file": ticket["handle"]}),
    ));
    assert!(message.contains("unscanned"), "{message}");
    assert_eq!(
        metric(&server, "sluice_scans_total", "unscanned"),
        1.0,
        "the deadline's verdict is counted"
    );
}

/// A scan that ended with the server (clamd's run in its background)
/// starts again when the server does, with no one asking about the file:
/// its verdict is counted (read from `/metrics`, which looks at no file),
/// then the file is ready.
#[test]
fn a_scan_left_by_a_restart_starts_again_on_its_own() {
    let work = tempfile::tempdir().unwrap();
    let clamd_dir = Clamd::dir_in(work.path());
    let address = Clamd::address_in(&clamd_dir);
    let data_dir = work.path().join("data");
    let env = [("SLUICE_SCAN", "clamd"), ("SLUICE_CLAMD", address.as_str())];
    let server = Server::start_in(&data_dir, &env);
    let token = server.token("alice", ALL);
    let data = bytes(200_000, 41);
    let ticket = server.upload(&token, "left.bin", &data);
    let id = ticket["file_id"].as_str().unwrap().to_owned();
    assert_eq!(state_of(&server, &token, &id), "scanning");
    server.stop();

    let _clamd = Clamd::start(&clamd_dir);
    let server = Server::start_in(&data_dir, &env);
    let started = Instant::now();
    while metric(&server, "sluice_scans_total", "clean") < 1.0 {
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "the scan never started again"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    assert_eq!(state_of(&server, &token, &id), "ready");
    assert!(downloaded(&server, &token, ticket["handle"].as_str().unwrap()).0 == data);
}

/// A file deleted while it waits for its scan stays deleted: the scan
/// that runs once clamd is back finds no object and gives no verdict, the
/// file is not listed, and no byte of it is left.
#[test]
fn a_file_deleted_while_scanning_stays_deleted() {
    let held = Held::new();
    tool_ok(&held.call("delete_file", json!({"file": held.handle})));
    let _clamd = Clamd::start(&held.clamd_dir);
    // Longer than the retry's longest wait so far: the scan has run again.
    std::thread::sleep(Duration::from_secs(5));
    assert_eq!(held.state(), Value::Null, "not listed");
    assert_eq!(metric(&held.server, "sluice_scans_total", "clean"), 0.0);
    assert!(
        stored_objects(&held.server.data_dir).is_empty(),
        "no byte left"
    );
    let message = tool_error(&held.call("get_download_url", json!({"file": held.handle})));
    assert!(!message.contains("being scanned"), "{message}");
}

/// A sluice in this process over the local backends in `dir` (`vars`
/// besides), whose gate asks `scanner`: as the runtime gives GuardDuty's
/// tag reader (the mode whose scanner is given), `scan` adjusting the rest
/// of the `scan` group.
fn scanning_in_process(
    dir: &Path,
    scanner: std::sync::Arc<dyn sluice::scan::Scanner>,
    vars: &[(&str, &str)],
    scan: impl FnOnce(&mut sluice::config::Scan),
) -> sluice::Sluice {
    use std::sync::Arc;
    let mut all = vec![
        ("SLUICE_DATA_DIR".to_owned(), dir.display().to_string()),
        (
            "SLUICE_PUBLIC_URL".to_owned(),
            "http://127.0.0.1:8787".to_owned(),
        ),
    ];
    all.extend(vars.iter().map(|(k, v)| (k.to_string(), v.to_string())));
    let mut config = sluice::Config::from_vars(all).unwrap();
    config.scan.mode = sluice::config::ScanMode::GuardDuty;
    scan(&mut config.scan);
    let store = sluice_runtime::local_store(&config).unwrap();
    let local = sluice_runtime::local_records(&config, Some(store.clone())).unwrap();
    sluice_runtime::assemble_parts(
        &config,
        config.urls.public.clone().unwrap(),
        sluice_runtime::Parts {
            keys: sluice_runtime::local_keyring(&config).unwrap(),
            store: Arc::new(store),
            ledger: local.ledger.clone(),
            records: Arc::new(local.records.clone()),
            catalog: Default::default(),
            imports_dispatch: None,
            scanner: Some(scanner),
            receipt_signer: None,
        },
    )
}
