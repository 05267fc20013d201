//! Webhooks: a real receiver on loopback verifies every message with the
//! Standard Webhooks reference library (PyPI `standardwebhooks`), receives
//! each event once per id after being down for a while and after sluice
//! restarted in between, nothing lost; a slow receiver never slows a
//! transfer; a receiver's 4xx stops the retries of that event.

pub(crate) mod on_aws;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::time::{Duration, Instant};

use base64::Engine as _;
use serde_json::{Value, json};

use crate::mcp_clients::root;
use crate::util::{Server, bytes, call_tool, request, spawn_announcing, tool_ok};

/// A receiver process, killed on drop.
pub(crate) struct Receiver {
    child: Child,
    pub(crate) port: u16,
}

impl Drop for Receiver {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Receiver {
    pub(crate) fn start(secret: &str, log: &Path, port: u16, extra: &[&str]) -> Self {
        let mut command = Command::new(root().join(".venv/bin/python"));
        command
            .arg(root().join("tests/clients/webhook_receiver.py"))
            .args(["--secret", secret, "--port", &port.to_string()])
            .arg("--log")
            .arg(log)
            .args(extra);
        let (child, announced) = spawn_announcing(command);
        Receiver {
            child,
            port: announced.parse().unwrap(),
        }
    }

    /// EventBridge and SQS as moto emulates them, on `port` (0: any), with
    /// bus `bus` and a consumer logging what its rule routes to `log`, in
    /// the receiver's shape (`tests/clients/event_bus.py`).
    pub(crate) fn event_bus(bus: &str, log: &Path, port: u16) -> Self {
        let mut command = Command::new(root().join(".venv/bin/python"));
        command
            .arg(root().join("tests/clients/event_bus.py"))
            .args(["--bus", bus, "--port", &port.to_string()])
            .arg("--log")
            .arg(log);
        let (child, announced) = spawn_announcing(command);
        Receiver {
            child,
            port: announced.parse().unwrap(),
        }
    }

    pub(crate) fn url(&self) -> String {
        format!("http://127.0.0.1:{}/hooks", self.port)
    }
}

/// A secret as the specification has them: `whsec_` and 32 bytes' base64.
pub(crate) fn secret(seed: u64) -> String {
    format!(
        "whsec_{}",
        base64::engine::general_purpose::STANDARD.encode(bytes(32, seed))
    )
}

/// What the receiver logged, one JSON value a line.
fn logged(log: &Path) -> Vec<Value> {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// The events answered, `(type, file_id)` by event id, waiting up to
/// `within` for `want` of them; fails on a message that did not verify.
pub(crate) fn received(log: &Path, want: usize, within: Duration) -> Vec<Value> {
    let deadline = Instant::now() + within;
    loop {
        let all = logged(log);
        let bad: Vec<_> = all.iter().filter(|e| e["phase"] == "bad").collect();
        assert!(bad.is_empty(), "messages that did not verify: {bad:?}");
        let ended: Vec<Value> = all.into_iter().filter(|e| e["phase"] == "end").collect();
        if ended.len() >= want || Instant::now() > deadline {
            return ended;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

pub(crate) fn kinds(ended: &[Value]) -> BTreeMap<String, Vec<String>> {
    let mut by_file: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for e in ended {
        by_file
            .entry(e["file_id"].as_str().unwrap().to_owned())
            .or_default()
            .push(e["type"].as_str().unwrap().to_owned());
    }
    // Deliveries run a few at once, so a file's events may arrive in any
    // order; receivers order them by their timestamp, not by arrival.
    by_file.values_mut().for_each(|v| v.sort());
    by_file
}

/// Each event id answered exactly once.
fn once_per_id(ended: &[Value]) {
    let mut seen = BTreeSet::new();
    for e in ended {
        assert!(
            seen.insert(e["id"].as_str().unwrap().to_owned()),
            "twice: {e}"
        );
    }
}

fn server(data: &Path, url: &str, secret: &str) -> Server {
    Server::start_in(
        data,
        &[
            ("SLUICE_WEBHOOK_URL", url),
            ("SLUICE_WEBHOOK_SECRET", secret),
            (
                "SLUICE_WEBHOOK_RETRY_SECS",
                "1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1",
            ),
        ],
    )
}

/// Bytes refused on one upload link make one `file.rejected`, however many
/// times they are sent: a link holder cannot flood the team's endpoint
/// with signed deliveries. (Before: fifty bad PUTs, fifty deliveries.)
#[test]
fn fifty_bad_puts_on_one_link_make_one_rejected_event() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("received.jsonl");
    let secret = secret(3);
    let data_dir = dir.path().join("data");
    std::fs::create_dir(&data_dir).unwrap();
    let receiver = Receiver::start(&secret, &log, 0, &[]);
    let sluice = server(&data_dir, &receiver.url(), &secret);
    let alice = sluice.token("alice", &[]);
    let declared = bytes(1000, 4);
    let ticket = sluice.refused_upload(&alice, "b.bin", &declared);
    let url = ticket["upload"]["url"].as_str().unwrap();
    for n in 0..49u8 {
        let other: Vec<u8> = declared.iter().map(|b| b ^ (n | 2)).collect();
        assert_eq!(request("PUT", url, &[], Some(&other)).status, 400);
    }
    // The link still takes the right bytes.
    assert_eq!(request("PUT", url, &[], Some(&declared)).status, 200);
    let ended = received(&log, 51, Duration::from_secs(5));
    let rejected = ended
        .iter()
        .filter(|e| e["type"] == "file.rejected")
        .count();
    assert_eq!(rejected, 1, "{ended:?}");
    assert!(ended.iter().any(|e| e["type"] == "file.ready"), "{ended:?}");
}

#[test]
fn every_event_arrives_signed_once_through_a_receiver_outage_and_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("received.jsonl");
    let secret = secret(1);
    let data_dir = dir.path().join("data");
    std::fs::create_dir(&data_dir).unwrap();
    let raw = dir.path().join("raw.json");
    let receiver = Receiver::start(&secret, &log, 0, &["--raw", raw.to_str().unwrap()]);
    let port = receiver.port;
    let sluice = server(&data_dir, &receiver.url(), &secret);
    let alice = sluice.token("alice", &[]);

    // Ready, downloaded, deleted.
    let a = sluice.upload(&alice, "a.txt", b"hello");
    let a_id = a["file_id"].as_str().unwrap().to_owned();
    let link = sluice.download_url(&alice, a["handle"].as_str().unwrap());
    assert_eq!(request("GET", &link, &[], None).status, 200);
    tool_ok(&call_tool(
        &sluice.base,
        &alice,
        "delete_file",
        json!({"file": a_id}),
    ));
    // Rejected: bytes that are not the file declared.
    let ticket = sluice.refused_upload(&alice, "b.bin", &bytes(1000, 1));
    let b_id = ticket["file_id"].as_str().unwrap().to_owned();

    let ended = received(&log, 4, Duration::from_secs(30));
    let by_file = kinds(&ended);
    assert_eq!(
        by_file[&a_id],
        ["file.deleted", "file.downloaded", "file.ready"],
        "{ended:?}"
    );
    assert_eq!(by_file[&b_id], ["file.rejected"], "{ended:?}");
    let at = |kind: &str| {
        let e = ended
            .iter()
            .find(|e| e["file_id"] == a_id.as_str() && e["type"] == kind)
            .unwrap();
        e["timestamp"].as_str().unwrap().to_owned()
    };
    assert!(at("file.ready") <= at("file.downloaded"), "{ended:?}");
    assert!(at("file.downloaded") <= at("file.deleted"), "{ended:?}");
    let ready = ended.iter().find(|e| e["type"] == "file.ready").unwrap();
    assert_eq!(ready["owner"], "alice");
    assert_eq!(ready["size"], 5);
    assert_eq!(ready["sha256"], sluice::Sha256::of(b"hello").to_hex());
    once_per_id(&ended);
    the_documented_lines_verify(&raw, &secret);
    // Each event of custody carries its receipt, which joserfc verifies
    // from the JWKS alone; a rejection carries none.
    let jwks_path = dir.path().join("jwks.json");
    let jwks = request(
        "GET",
        &format!("{}/.well-known/jwks.json", sluice.base),
        &[],
        None,
    );
    std::fs::write(&jwks_path, &jwks.body).unwrap();
    for (kind, said) in [
        ("file.ready", "ready"),
        ("file.downloaded", "downloaded"),
        ("file.deleted", "deleted"),
    ] {
        let e = ended
            .iter()
            .find(|e| e["file_id"] == a_id.as_str() && e["type"] == kind)
            .unwrap();
        let read = crate::receipts::joserfc(&jwks_path, e["receipt"].as_str().expect("a receipt"))
            .unwrap();
        assert_eq!(read["claims"]["event"], said, "{read}");
        assert_eq!(read["claims"]["file"]["id"], a_id.as_str());
        assert_eq!(
            read["claims"]["file"]["sha256"],
            sluice::Sha256::of(b"hello").to_hex()
        );
    }
    assert!(
        ended
            .iter()
            .find(|e| e["type"] == "file.rejected")
            .unwrap()
            .get("receipt")
            .is_none()
    );

    // The receiver goes down; a file arrives; sluice stops while the event
    // is still undelivered, and starts again before the receiver is back.
    drop(receiver);
    let c = sluice.upload(&alice, "c.txt", b"while down");
    let c_id = c["file_id"].as_str().unwrap().to_owned();
    std::thread::sleep(Duration::from_secs(2));
    sluice.stop();
    let sluice = server(
        &data_dir,
        &format!("http://127.0.0.1:{port}/hooks"),
        &secret,
    );
    std::thread::sleep(Duration::from_secs(2));
    let d = sluice.upload(&alice, "d.txt", b"after the restart");
    let d_id = d["file_id"].as_str().unwrap().to_owned();
    let _back = Receiver::start(&secret, &log, port, &[]);
    let ended = received(&log, 6, Duration::from_secs(30));
    let by_file = kinds(&ended);
    assert_eq!(
        by_file.get(&c_id).map(Vec::as_slice),
        Some(&["file.ready".to_owned()][..]),
        "{ended:?}"
    );
    assert_eq!(
        by_file.get(&d_id).map(Vec::as_slice),
        Some(&["file.ready".to_owned()][..]),
        "{ended:?}"
    );
    assert_eq!(ended.len(), 6, "{ended:?}");
    once_per_id(&ended);
    drop(sluice);
}

/// Several endpoints from a file, each with its own secret and events: a
/// slow one holds its deliveries for seconds while uploads and downloads
/// go on at once, and one that answers 410 is tried once, never again.
#[test]
fn a_slow_or_refusing_receiver_never_holds_a_transfer_and_4xx_stops_retries() {
    let dir = tempfile::tempdir().unwrap();
    let (slow_log, gone_log) = (dir.path().join("slow.jsonl"), dir.path().join("gone.jsonl"));
    let (slow_secret, gone_secret) = (secret(2), secret(3));
    let slow = Receiver::start(&slow_secret, &slow_log, 0, &["--delay", "6"]);
    let gone = Receiver::start(&gone_secret, &gone_log, 0, &["--status", "410"]);
    let file: PathBuf = dir.path().join("webhooks.toml");
    std::fs::write(
        &file,
        format!(
            "[[endpoint]]\nname = \"slow\"\nurl = \"{}\"\nsecret = \"{slow_secret}\"\n\
             [[endpoint]]\nname = \"gone\"\nurl = \"{}\"\nsecret = \"{gone_secret}\"\nevents = [\"file.ready\"]\n",
            slow.url(),
            gone.url()
        ),
    )
    .unwrap();
    let data_dir = dir.path().join("data");
    std::fs::create_dir(&data_dir).unwrap();
    let sluice = Server::start_in(
        &data_dir,
        &[
            ("SLUICE_WEBHOOKS_FILE", file.to_str().unwrap()),
            ("SLUICE_WEBHOOK_RETRY_SECS", "1,1,1,1,1"),
        ],
    );
    let alice = sluice.token("alice", &[]);
    let first = sluice.upload(&alice, "first.txt", b"first");
    // Wait for the slow receiver to be holding the first delivery.
    let deadline = Instant::now() + Duration::from_secs(20);
    while !logged(&slow_log).iter().any(|e| e["phase"] == "start") {
        assert!(Instant::now() < deadline, "the slow receiver got nothing");
        std::thread::sleep(Duration::from_millis(50));
    }
    // Ten uploads and their downloads while it holds it.
    for i in 0..10 {
        let data = bytes(64 * 1024, i);
        let t = sluice.upload(&alice, &format!("f{i}.bin"), &data);
        let link = sluice.download_url(&alice, t["handle"].as_str().unwrap());
        assert!(request("GET", &link, &[], None).body == data);
    }
    let answered = logged(&slow_log)
        .iter()
        .filter(|e| e["phase"] == "end")
        .count();
    assert_eq!(
        answered, 0,
        "every transfer ended while the first delivery was held"
    );
    // The refusing endpoint took only file.ready, and each once: 11 files,
    // 11 attempts, none retried after its 410 (the schedule would have
    // tried each five more times, a second apart).
    std::thread::sleep(Duration::from_secs(4));
    let refused: Vec<Value> = logged(&gone_log)
        .into_iter()
        .filter(|e| e["phase"] == "end")
        .collect();
    assert_eq!(refused.len(), 11, "{refused:?}");
    assert!(
        refused
            .iter()
            .all(|e| e["type"] == "file.ready" && e["status"] == 410)
    );
    once_per_id(&refused);
    assert!(first["handle"].is_string());
}

/// The code block of `lang` under "Verify a signature" in docs/operations.md.
fn documented(lang: &str) -> String {
    let doc = std::fs::read_to_string(root().join("docs/operations.md")).unwrap();
    let section = &doc[doc.find("### Verify a signature").unwrap()..];
    let open = format!("```{lang}\n");
    let from = section.find(&open).unwrap() + open.len();
    let to = from + section[from..].find("```").unwrap();
    section[from..to].to_owned()
}

/// The operations page's three lines of Python and of Node verify a message
/// as sluice sent it, with the endpoint's secret, and refuse it once its
/// body is changed by one byte.
fn the_documented_lines_verify(raw: &Path, secret: &str) {
    let message: Value = serde_json::from_str(&std::fs::read_to_string(raw).unwrap()).unwrap();
    let (python, node) = (documented("python"), documented("js"));
    assert_eq!((python.lines().count(), node.lines().count()), (3, 3));
    let body = message["body"].as_str().unwrap();
    for (body, verifies) in [(body.to_owned(), true), (body.replacen('e', "f", 1), false)] {
        let message = json!({"body": body, "headers": message["headers"]}).to_string();
        let py = Command::new(root().join(".venv/bin/python"))
            .arg("-c")
            .arg(format!(
                "import json, sys\nm = json.loads(sys.argv[1])\nbody, headers = m['body'].encode(), m['headers']\n{python}\nprint(event['type'])"
            ))
            .arg(&message)
            .env("SLUICE_WEBHOOK_SECRET", secret)
            .output()
            .unwrap();
        let js = Command::new("node")
            .args(["--input-type=module", "-e"])
            .arg(format!(
                "const m = JSON.parse(process.argv[1]);\nconst body = m.body, headers = m.headers;\n{node}\nconsole.log(event.type);"
            ))
            .arg(&message)
            .env("SLUICE_WEBHOOK_SECRET", secret)
            .current_dir(root().join("tests/clients"))
            .output()
            .unwrap();
        for (lang, out) in [("python", py), ("node", js)] {
            let said = String::from_utf8_lossy(&out.stdout);
            let err = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.success(), verifies, "{lang}: {said}{err}");
            if verifies {
                assert!(said.trim().starts_with("file."), "{lang}: {said}");
            } else {
                assert!(
                    err.contains("ignature"),
                    "{lang} refuses for the signature: {err}"
                );
            }
        }
    }
}

/// With malware scanning on (a real clamd, `sluice_testkit::clamd`),
/// `file.ready` waits for the verdict: a clean file's comes once it is
/// scanned; the test signature's file never has one, and its
/// `file.rejected` says why.
#[test]
fn a_scanned_files_events_wait_for_its_verdict_and_say_it() {
    use sluice_testkit::clamd::{Clamd, EICAR, EICAR_SIGNATURE};
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("received.jsonl");
    let secret = secret(9);
    let clamd_dir = Clamd::dir_in(dir.path());
    let clamd = Clamd::start(&clamd_dir);
    let receiver = Receiver::start(&secret, &log, 0, &[]);
    let address = clamd.address();
    let sluice = Server::start_in(
        &dir.path().join("data"),
        &[
            ("SLUICE_WEBHOOK_URL", receiver.url().as_str()),
            ("SLUICE_WEBHOOK_SECRET", secret.as_str()),
            ("SLUICE_SCAN", "clamd"),
            ("SLUICE_CLAMD", address.as_str()),
        ],
    );
    let alice = sluice.token("alice", &[]);
    let clean = sluice.upload(&alice, "clean.txt", b"nothing to see here");
    let bad = sluice.upload(&alice, "eicar.com", EICAR);
    let ended = received(&log, 2, Duration::from_secs(60));
    let by_file = kinds(&ended);
    let (clean_id, bad_id) = (
        clean["file_id"].as_str().unwrap(),
        bad["file_id"].as_str().unwrap(),
    );
    assert_eq!(
        by_file.get(clean_id),
        Some(&vec!["file.ready".to_owned()]),
        "{ended:?}"
    );
    assert_eq!(
        by_file.get(bad_id),
        Some(&vec!["file.rejected".to_owned()]),
        "{ended:?}"
    );
    let rejected = ended.iter().find(|e| e["file_id"] == bad_id).unwrap();
    assert_eq!(
        rejected["reason"],
        format!("malware: {EICAR_SIGNATURE}"),
        "{rejected}"
    );
}
