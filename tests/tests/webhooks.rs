//! Webhooks: a real receiver on loopback verifies every message with the
//! Standard Webhooks reference library (PyPI `standardwebhooks`), receives
//! each event once per id after being down for a while and after sluice
//! restarted in between, nothing lost; a slow receiver never slows a
//! transfer; a receiver's 4xx stops the retries of that event.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::time::{Duration, Instant};

use base64::Engine as _;
use serde_json::{Value, json};

use crate::mcp_clients::root;
use crate::util::{Server, bytes, call_tool, request, spawn_announcing, tool_ok};

/// A receiver process, killed on drop.
struct Receiver {
    child: Child,
    port: u16,
}

impl Drop for Receiver {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Receiver {
    fn start(secret: &str, log: &Path, port: u16, extra: &[&str]) -> Self {
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
    fn event_bus(bus: &str, log: &Path, port: u16) -> Self {
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

    fn url(&self) -> String {
        format!("http://127.0.0.1:{}/hooks", self.port)
    }
}

/// A secret as the specification has them: `whsec_` and 32 bytes' base64.
fn secret(seed: u64) -> String {
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
fn received(log: &Path, want: usize, within: Duration) -> Vec<Value> {
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

fn kinds(ended: &[Value]) -> BTreeMap<String, Vec<String>> {
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
    let link = sluice.download_ticket(&alice, a["handle"].as_str().unwrap())["download"]["url"]
        .as_str()
        .unwrap()
        .to_owned();
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
        let link = sluice.download_ticket(&alice, t["handle"].as_str().unwrap())["download"]["url"]
            .as_str()
            .unwrap()
            .to_owned();
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

/// On AWS the records table is the outbox and its stream the delivery
/// queue: each change DynamoRecords and DynamoLedger really make on
/// dynalite (a record written, marked ready, replaced by its tombstone;
/// another downloaded, then removed by the TTL; a ledger item) is given to the events function's handler as
/// the stream record Lambda would pass, built from the item before and
/// after; the receiver verifies each event with the reference library.
/// dynalite has no streams, so the stream records are made here from the
/// items as read back: what DynamoDB would put in NEW_AND_OLD_IMAGES.
mod on_aws {
    use aws_sdk_dynamodb::types::AttributeValue;
    use sluice::ledger::Ledger as _;
    use sluice::records::FileRecords as _;
    use sluice_aws::{DynamoRecords, Item};
    use sluice_testkit::emulators::Emulators;

    use super::*;

    /// A stream record of the change from `old` to `new` (`by_ttl`: the
    /// DynamoDB service removed it), as Lambda passes it.
    pub(super) fn change(seq: u64, old: Option<&Item>, new: Option<&Item>, by_ttl: bool) -> Value {
        let image = |i: Option<&Item>| {
            i.map(|i| serde_json::to_value(serde_dynamo::Item::from(i.clone())).unwrap())
                .unwrap_or(json!({}))
        };
        let key = new.or(old).unwrap()["pk"].clone();
        let name = match (old, new) {
            (None, _) => "INSERT",
            (_, None) => "REMOVE",
            _ => "MODIFY",
        };
        let mut record = json!({
            "eventID": format!("e{seq:08}"),
            "eventName": name,
            "eventSource": "aws:dynamodb",
            "eventVersion": "1.1",
            "awsRegion": "us-east-1",
            "dynamodb": {
                "ApproximateCreationDateTime": sluice::time::now_unix() as f64,
                "Keys": {"pk": serde_json::to_value(serde_dynamo::AttributeValue::from(key)).unwrap()},
                "NewImage": image(new),
                "OldImage": image(old),
                "SequenceNumber": format!("{seq:021}"),
                "SizeBytes": 100,
                "StreamViewType": "NEW_AND_OLD_IMAGES",
            },
            "eventSourceARN": "arn:aws:dynamodb:us-east-1:123456789012:table/t/stream/2026-12-03T00:00:00.000",
        });
        if by_ttl {
            record["userIdentity"] =
                json!({"type": "Service", "principalId": "dynamodb.amazonaws.com"});
        }
        record
    }

    fn file_record(name: &str, seed: u64) -> sluice::records::FileRecord {
        let data = bytes(100, seed);
        let now = sluice::time::now_unix();
        sluice::records::FileRecord {
            file: sluice::file::FileMeta {
                id: sluice::FileId::random(),
                owner: "alice".into(),
                filename: name.into(),
                content_type: "application/octet-stream".into(),
                size: data.len() as u64,
                sha256: sluice::Sha256::of(&data),
            },
            created_ms: now * 1000,
            expires_at: now + 600,
            ready: false,
            proof: None,
            scan: None,
        }
    }

    /// Every change the stream carries, made for real on table `name`:
    /// file a written, marked ready, deleted; file c written, downloaded,
    /// its parts refused, removed by the TTL; a ledger item between. The
    /// batch Lambda would pass, and the ids of a and c.
    async fn every_change(emulators: &Emulators, name: &str) -> (Value, (String, String)) {
        let (_, ledger) = emulators.provision(name).await;
        let records = DynamoRecords::beside(&ledger);
        // The item at `key`, as read back.
        let item = |key: String| async { records.item(key).await.unwrap().unwrap() };
        let (a, c) = (file_record("a.bin", 1), file_record("c.bin", 2));
        let (a_id, c_id) = (a.file.id.clone(), c.file.id.clone());
        records.put(&a).await.unwrap();
        let a0 = item(DynamoRecords::key_of(a_id.as_str())).await;
        records.mark_ready("alice", &a_id).await.unwrap();
        let a1 = item(DynamoRecords::key_of(a_id.as_str())).await;
        records.delete("alice", &a_id).await.unwrap().unwrap();
        let a2 = item(DynamoRecords::key_of(a_id.as_str())).await;
        records.put(&c).await.unwrap();
        let c0 = item(DynamoRecords::key_of(c_id.as_str())).await;
        // A ledger item: no event.
        ledger
            .spend("some-jti", sluice::time::now_unix() + 60)
            .await
            .unwrap();
        let spent = item(sluice_aws::DynamoLedger::key_of("some-jti")).await;
        // A download of c: the spent link's item carries its event.
        let downloaded = sluice::events::Event::about(
            sluice::events::EventType::Downloaded,
            &c.file,
            Some("link-of-c"),
        );
        ledger
            .spend_reporting(
                "link-of-c",
                sluice::time::now_unix() + 60,
                &downloaded.body(),
            )
            .await
            .unwrap();
        let spent_c = item(sluice_aws::DynamoLedger::key_of("link-of-c")).await;
        // Parts of c whose whole was another file: the event's own item.
        let rejected = sluice::events::Event::about(
            sluice::events::EventType::Rejected,
            &c.file,
            Some("upload-of-c"),
        );
        for _ in 0..2 {
            // Kept once, however often it is kept.
            ledger
                .keep_event(
                    &rejected.id,
                    &rejected.body(),
                    sluice::time::now_unix() + 60,
                )
                .await
                .unwrap();
        }
        let kept = item(sluice_aws::DynamoLedger::event_key(&rejected.id)).await;
        assert!(matches!(a2.get("gone"), Some(AttributeValue::S(_))));
        let batch = json!({"Records": [
            change(1, None, Some(&a0), false),
            change(2, Some(&a0), Some(&a1), false),
            change(3, Some(&a1), Some(&a2), false),
            change(4, None, Some(&c0), false),
            change(5, None, Some(&spent), false),
            change(6, None, Some(&spent_c), false),
            change(7, None, Some(&kept), false),
            change(8, Some(&c0), None, true),
        ]});
        (batch, (a_id.to_string(), c_id.to_string()))
    }

    /// [`every_change`] on table `name`, handled by `sinks` with their
    /// destination stopped (`down`): the first record with an event is the
    /// batch's failure, so Lambda retries from it and nothing is lost; then,
    /// the destination started again (`back`), the batch handled twice, as
    /// a retried batch is. The ids of a and c, and what `back` started.
    fn down_then_back<T>(
        sinks: &sluice_events::Sinks,
        emulators: &Emulators,
        name: &str,
        down: impl FnOnce(),
        back: impl FnOnce() -> T,
    ) -> ((String, String), T) {
        let rt = crate::contract::runtime();
        let (batch, ids) = rt.block_on(every_change(emulators, name));
        let batch: aws_lambda_events::event::dynamodb::Event =
            serde_json::from_value(batch).unwrap();
        down();
        let failed = rt.block_on(sluice_events::handle(
            sinks,
            batch.clone(),
            in_two_minutes(),
        ));
        let failures: Vec<_> = failed
            .batch_item_failures
            .iter()
            .map(|f| f.item_identifier.clone().unwrap())
            .collect();
        assert_eq!(failures, [format!("{:021}", 2)]);
        let started = back();
        for _ in 0..2 {
            let done = rt.block_on(sluice_events::handle(
                sinks,
                batch.clone(),
                in_two_minutes(),
            ));
            assert!(done.batch_item_failures.is_empty(), "{done:?}");
        }
        (ids, started)
    }

    /// The webhooks of one endpoint, `receiver`, signed with `secret`,
    /// retried after each of `retries`.
    fn webhooks_to(
        receiver: &Receiver,
        secret: &str,
        retries: Vec<Duration>,
    ) -> sluice::webhooks::Webhooks {
        let endpoint = sluice::webhooks::Endpoint::new(
            "receiver",
            url::Url::parse(&receiver.url()).unwrap(),
            &[secret.to_owned()],
            None,
        )
        .unwrap();
        sluice::webhooks::Webhooks::new(vec![endpoint], retries)
    }

    /// An invocation's deadline, as the template gives the function.
    fn in_two_minutes() -> tokio::time::Instant {
        tokio::time::Instant::now() + Duration::from_secs(120)
    }

    /// A receiver that takes 2 s to answer each request gets every event of
    /// a batch of 100 once, within one invocation: deliveries run a few at
    /// once, bounded by the invocation's deadline. (Before, one at a time:
    /// 200 s, past the function's two minutes, and Lambda retried the whole
    /// batch, every event again, for as long as the records lived.) The
    /// invocation is bounded here as Lambda bounds it.
    #[test]
    fn a_slow_receiver_gets_every_event_of_a_batch_once_within_one_invocation() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("received.jsonl");
        let secret = secret(5);
        let receiver = Receiver::start(&secret, &log, 0, &["--delay", "2"]);
        let emulators = Emulators::start();
        let rt = crate::contract::runtime();
        let batch = rt.block_on(async {
            let (_, ledger) = emulators.provision("slow").await;
            let records = DynamoRecords::beside(&ledger);
            let mut changes = Vec::new();
            for n in 0..100u64 {
                let file = file_record("f.bin", 100 + n);
                let key = DynamoRecords::key_of(file.file.id.as_str());
                records.put(&file).await.unwrap();
                let before = records.item(key.clone()).await.unwrap().unwrap();
                records.mark_ready("alice", &file.file.id).await.unwrap();
                let after = records.item(key).await.unwrap().unwrap();
                changes.push(change(n + 1, Some(&before), Some(&after), false));
            }
            json!({ "Records": changes })
        });
        let batch: aws_lambda_events::event::dynamodb::Event =
            serde_json::from_value(batch).unwrap();
        let sinks = sluice_events::Sinks {
            webhooks: Some(webhooks_to(&receiver, &secret, Vec::new())),
            bus: None,
        };
        let done = rt.block_on(async {
            tokio::time::timeout(
                Duration::from_secs(120),
                sluice_events::handle(&sinks, batch, in_two_minutes()),
            )
            .await
        });
        let done = done.expect("the invocation ended within its two minutes");
        assert!(done.batch_item_failures.is_empty(), "{done:?}");
        let ended = received(&log, 100, Duration::from_secs(10));
        assert_eq!(ended.len(), 100, "every event: {}", ended.len());
        once_per_id(&ended);
    }

    /// What [`every_change`]'s batch, handled twice, delivers: each event
    /// twice under one id, a's and c's events each of its own type.
    fn check_every_change(ended: &[Value], ids: &(String, String)) {
        let by_file = kinds(ended);
        assert_eq!(
            by_file[&ids.0],
            ["file.deleted", "file.deleted", "file.ready", "file.ready"]
        );
        assert_eq!(
            by_file[&ids.1],
            [
                "file.downloaded",
                "file.downloaded",
                "file.expired",
                "file.expired",
                "file.rejected",
                "file.rejected"
            ]
        );
        assert_eq!(ended.len(), 10, "{ended:?}");
        let distinct: BTreeSet<&str> = ended.iter().map(|e| e["id"].as_str().unwrap()).collect();
        assert_eq!(
            distinct.len(),
            5,
            "each change one id, the same when retried: {ended:?}"
        );
        let ready = ended.iter().find(|e| e["type"] == "file.ready").unwrap();
        assert_eq!(
            (ready["owner"].as_str(), ready["size"].as_u64()),
            (Some("alice"), Some(100))
        );
    }

    /// The same changes put on an EventBridge bus (moto's, whose rule
    /// routes each to a queue the consumer reads): the events function with
    /// only a bus, no endpoint. The bus down, the first record with an
    /// event is the batch's failure; back, every event is on the bus under
    /// source `sluice`, detail-type its type, its time the event's, and
    /// `detail.id` the same when the batch is retried.
    ///
    /// Where moto differs from EventBridge: it checks no IAM (the template
    /// test checks the grant), puts no limit on a detail's size (256 KiB on
    /// AWS; an event's is under 1 KiB) and, asked for a bus that does not
    /// exist, refuses the whole call where EventBridge may answer per entry
    /// (the function handles both: `sluice_aws::EventBus::put`).
    #[test]
    fn each_change_the_table_stream_carries_is_put_on_the_event_bus() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("seen.jsonl");
        let bus = Receiver::event_bus("sluice-files", &log, 0);
        let port = bus.port;
        let emulators = Emulators::start();
        let settings = sluice::AwsConfig {
            event_bus: Some("sluice-files".into()),
            eventbridge_endpoint: Some(format!("http://127.0.0.1:{port}").parse().unwrap()),
            ..Default::default()
        };
        let sinks = sluice_events::Sinks {
            webhooks: None,
            bus: sluice_aws::EventBus::new(&sluice_testkit::emulators::sdk_config(), &settings),
        };
        let (ids, _back) = down_then_back(
            &sinks,
            &emulators,
            "bus",
            || drop(bus),
            || Receiver::event_bus("sluice-files", &log, port),
        );
        let seen = received(&log, 10, Duration::from_secs(30));
        check_every_change(&seen, &ids);
        for e in &seen {
            assert_eq!(e["source"], sluice_aws::SOURCE, "{e}");
            assert_eq!(e["detail_type"], e["type"], "{e}");
            // The envelope's time is the event's, to the second.
            let time = e["time"].as_str().unwrap().trim_end_matches('Z');
            assert!(e["timestamp"].as_str().unwrap().starts_with(time), "{e}");
        }
    }

    #[test]
    fn each_change_the_table_stream_carries_reaches_the_receiver_signed() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("received.jsonl");
        let secret = secret(3);
        let receiver = Receiver::start(&secret, &log, 0, &[]);
        let port = receiver.port;
        let webhooks = webhooks_to(&receiver, &secret, vec![Duration::from_secs(1)]);
        let sinks = sluice_events::Sinks {
            webhooks: Some(webhooks),
            bus: None,
        };
        let emulators = Emulators::start();
        let (ids, _back) = down_then_back(
            &sinks,
            &emulators,
            "events",
            || drop(receiver),
            || Receiver::start(&secret, &log, port, &[]),
        );
        check_every_change(&received(&log, 10, Duration::from_secs(20)), &ids);
    }
}

/// The events function as `cargo lambda watch` runs it (the README's
/// stack; in its env file the webhook's URL and secret, and a bus on
/// moto's EventBridge): the issuer and
/// the resolver under the same watch upload, download and delete a file on
/// the emulators; the items they wrote, as the table's stream would carry
/// them (dynalite has no streams), are the batch the watch's invoke API
/// hands to `sluice-events`, which delivers `file.downloaded` and
/// `file.deleted`, signed, to the receiver, and puts them on the bus; the
/// same batch again repeats the same ids.
#[test]
fn the_events_function_delivers_under_the_real_cargo_lambda_watch() {
    use crate::util::{post_json, sh};
    use crate::watch::{Reached, Stack, token};

    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("received.jsonl");
    let secret = secret(5);
    let receiver = Receiver::start(&secret, &log, 0, &[]);
    let on_bus = dir.path().join("seen.jsonl");
    let bus = Receiver::event_bus("sluice-files", &on_bus, 0);
    // The endpoint's secret where the template keeps it: Secrets Manager
    // (an endpoint on loopback answering GetSecretValue), read by the
    // function at start.
    let secrets = crate::rotation::secrets_manager(std::sync::Arc::new(std::sync::Mutex::new((
        (
            "00000001-aaaa-bbbb-cccc-dddddddddddd".to_owned(),
            secret.clone(),
        ),
        None,
    ))));
    let stack = Stack::reached(
        Reached::ByPrefix,
        &[],
        &[
            ("SLUICE_EVENT_BUS", "sluice-files".to_owned()),
            (
                "SLUICE_EVENTBRIDGE_ENDPOINT_URL",
                format!("http://127.0.0.1:{}", bus.port),
            ),
            ("SLUICE_WEBHOOK_URL", receiver.url()),
            ("SLUICE_WEBHOOK_SECRET_ID", "sluice/webhooks".to_owned()),
            ("AWS_ENDPOINT_URL_SECRETS_MANAGER", secrets),
        ],
    );
    let env = &stack.env;
    let carol = token(env, "carol", &["files:read", "files:write"]);

    // An upload, a download, a delete, by the functions under the watch.
    let work = stack.work.path().join("files");
    std::fs::create_dir(&work).unwrap();
    let data = bytes(50_000, 9);
    std::fs::write(work.join("e.bin"), &data).unwrap();
    let uploads = stack.url("sluice-issuer", "/uploads");
    stack.compiled(&uploads, 401);
    let ticket = post_json(
        &uploads,
        Some(&carol),
        &json!({"filename": "e.bin", "size": data.len(), "sha256": sluice::Sha256::of(&data).to_hex()}),
    );
    assert_eq!(ticket.status, 200, "{}", ticket.text());
    let file_id = ticket.json()["file_id"].as_str().unwrap().to_owned();
    let up = sh(ticket.json()["command"].as_str().unwrap(), &work);
    assert!(up.status.success(), "{}", crate::util::out_text(&up));
    let resolve = stack.url("sluice-resolver", "/resolve");
    stack.compiled(&resolve, 401);
    let resolved = post_json(
        &resolve,
        Some(&carol),
        &json!({"handle": ticket.json()["handle"]}),
    );
    assert_eq!(resolved.status, 200, "{}", resolved.text());
    let down = sh(resolved.json()["command"].as_str().unwrap(), &work);
    assert!(down.status.success(), "{}", crate::util::out_text(&down));

    let rt = crate::contract::runtime();
    // The functions' own settings, from the env file.
    let sluice::config::Records::DynamoDb(table) =
        sluice::Config::from_vars(env.clone()).unwrap().records
    else {
        panic!("the env file does not keep the records in DynamoDB: {env:?}");
    };
    let ledger = sluice_aws::DynamoLedger::new(&sluice_testkit::emulators::sdk_config(), &table);
    let records = sluice_aws::DynamoRecords::beside(&ledger);
    let record_key = sluice_aws::DynamoRecords::key_of(&file_id);
    let before = rt
        .block_on(records.item(record_key.clone()))
        .unwrap()
        .unwrap();
    let deleted = request(
        "DELETE",
        &stack.url("sluice-issuer", &format!("/files/{file_id}")),
        &[("Authorization", &format!("Bearer {carol}"))],
        None,
    );
    assert_eq!(deleted.status, 200, "{}", deleted.text());
    let after = rt.block_on(records.item(record_key)).unwrap().unwrap();
    let spent = rt.block_on(sluice_testkit::emulators::items_with_events(&ledger));
    assert_eq!(spent.len(), 1, "the download's spent link: {spent:?}");
    let batch = json!({"Records": [
        on_aws::change(1, None, Some(&spent[0]), false),
        on_aws::change(2, Some(&before), Some(&after), false),
    ]});

    // Invoked as docs/aws.md says, on this watch's port.
    let batch_file = stack.work.path().join("stream-batch.json");
    std::fs::write(&batch_file, batch.to_string()).unwrap();
    for _ in 0..2 {
        let out = stack.invoke("sluice-events", &batch_file);
        let said = format!(
            "{}\nthe watch's log: {}",
            crate::util::out_text(&out),
            stack.log_tail()
        );
        assert!(out.status.success(), "{said}");
        let answer: Value =
            serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {said}"));
        assert_eq!(answer, json!({"batchItemFailures": []}), "{said}");
    }
    // The same events, signed to the endpoint and put on the bus.
    let mut both = Vec::new();
    for log in [&log, &on_bus] {
        let ended = received(log, 4, Duration::from_secs(60));
        assert_eq!(
            kinds(&ended)[&file_id],
            [
                "file.deleted",
                "file.deleted",
                "file.downloaded",
                "file.downloaded"
            ],
            "{ended:?}"
        );
        let ids: BTreeSet<String> = ended
            .iter()
            .map(|e| e["id"].as_str().unwrap().to_owned())
            .collect();
        assert_eq!(
            ids.len(),
            2,
            "each change one id, the same when sent again: {ended:?}"
        );
        assert!(ended.iter().all(|e| e["owner"] == "carol"), "{ended:?}");
        both.push(ids);
    }
    assert_eq!(both[0], both[1], "one id per event, wherever it goes");
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
