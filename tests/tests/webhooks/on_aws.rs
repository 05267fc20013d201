//! On AWS the records table is the outbox and its stream the delivery
//! queue: each change DynamoRecords and DynamoLedger really make on
//! dynalite (a record written, marked ready, replaced by its tombstone;
//! another downloaded, then removed by the TTL; a ledger item) is given to the events function's handler as
//! the stream record Lambda would pass, built from the item before and
//! after; the receiver verifies each event with the reference library.
//! dynalite has no streams, so the stream records are made here from the
//! items as read back: what DynamoDB would put in NEW_AND_OLD_IMAGES.

use aws_sdk_dynamodb::types::AttributeValue;
use sluice::ledger::Ledger as _;
use sluice::records::FileRecords as _;
use sluice_aws::{DynamoRecords, Item};
use sluice_testkit::emulators::Emulators;

use super::*;

/// A stream record of the change from `old` to `new` (`by_ttl`: the
/// DynamoDB service removed it), as Lambda passes it.
pub(crate) fn change(seq: u64, old: Option<&Item>, new: Option<&Item>, by_ttl: bool) -> Value {
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
        trace: None,
        copy: false,
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
    let batch: aws_lambda_events::event::dynamodb::Event = serde_json::from_value(batch).unwrap();
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
    let batch: aws_lambda_events::event::dynamodb::Event = serde_json::from_value(batch).unwrap();
    let sinks = sluice_events::Sinks {
        webhooks: Some(webhooks_to(&receiver, &secret, Vec::new())),
        bus: None,
        receipts: None,
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
        receipts: None,
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
        receipts: None,
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

/// With a receipt key (moto's KMS, through aws-sdk-kms), each event of
/// custody the stream carries goes out with its receipt, which joserfc
/// verifies from the key's JWKS alone; a rejection carries none. KMS out
/// of reach, the first record whose event needs a receipt is the batch's
/// failure and nothing from it on is sent, so no event goes without one;
/// KMS back, the retried batch delivers every event, signed. (Where moto
/// differs from KMS: `receipts::on_kms`.)
#[test]
fn on_aws_each_event_of_custody_carries_a_kms_signed_receipt_or_waits_for_one() {
    use crate::receipts::on_kms::{Relay, kms_keys};
    use sluice::receipts::Signer as _;
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("received.jsonl");
    let secret = secret(5);
    let receiver = Receiver::start(&secret, &log, 0, &[]);
    let (mut moto, port) = crate::util::start_moto();
    let key = kms_keys(&format!("http://127.0.0.1:{port}"), 1).remove(0);
    let relay = Relay::to(format!("127.0.0.1:{port}"));
    let emulators = Emulators::start();
    let rt = crate::contract::runtime();
    let sdk = rt.block_on(
        aws_config::defaults(aws_config::BehaviorVersion::latest())
            .region(aws_config::Region::new("us-east-1"))
            .endpoint_url(&relay.url)
            .credentials_provider(aws_sdk_dynamodb::config::Credentials::new(
                sluice_testkit::emulators::ACCESS_KEY,
                sluice_testkit::emulators::SECRET_KEY,
                None,
                None,
                "test",
            ))
            .load(),
    );
    let aws = sluice::config::AwsConfig {
        receipt_kms_key: Some(key),
        ..Default::default()
    };
    let signer = std::sync::Arc::new(sluice_aws::KmsSigner::new(&sdk, &aws).unwrap());
    let jwks_path = dir.path().join("jwks.json");
    let jwks = rt.block_on(signer.keys()).unwrap().jwks();
    std::fs::write(&jwks_path, serde_json::to_vec(&jwks).unwrap()).unwrap();
    let sinks = sluice_events::Sinks {
        webhooks: Some(webhooks_to(
            &receiver,
            &secret,
            vec![Duration::from_secs(1)],
        )),
        bus: None,
        receipts: Some(sluice_events::Stamps {
            signer,
            issuer: "https://files.example.com".to_owned(),
        }),
    };
    let (ids, ()) = down_then_back(
        &sinks,
        &emulators,
        "events-receipts",
        || relay.cut(),
        || relay.mend(),
    );
    let ended = received(&log, 10, Duration::from_secs(20));
    check_every_change(&ended, &ids);
    for e in &ended {
        let kind = e["type"].as_str().unwrap();
        if kind == "file.rejected" {
            assert!(e.get("receipt").is_none(), "{e}");
            continue;
        }
        let receipt = e["receipt"]
            .as_str()
            .unwrap_or_else(|| panic!("no receipt: {e}"));
        let read = crate::receipts::joserfc(&jwks_path, receipt).unwrap();
        assert_eq!(
            read["claims"]["event"],
            kind.trim_start_matches("file."),
            "{read}"
        );
        assert_eq!(read["claims"]["file"]["id"], e["file_id"], "{read}");
        assert_eq!(read["claims"]["iss"], "https://files.example.com");
    }
    let _ = moto.kill();
    let _ = moto.wait();
}
