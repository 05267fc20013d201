//! The events function under `cargo lambda watch`: the README's stack,
//! with a webhook receiver and an event bus.

use std::collections::BTreeSet;
use std::time::Duration;

use serde_json::{Value, json};

use super::{Reached, Stack, token};
use crate::util::{bytes, request};
use crate::webhooks::on_aws::change;
use crate::webhooks::{Receiver, kinds, received, secret};

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
        change(1, None, Some(&spent[0]), false),
        change(2, Some(&before), Some(&after), false),
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
