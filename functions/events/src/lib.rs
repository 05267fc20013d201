//! The `events` function: on AWS the records table is the outbox. Each
//! change of a file is one conditional write of one item (marked ready,
//! replaced by its tombstone, removed by DynamoDB's TTL), and an event no
//! record's change carries is in an item of its own (a spent link's
//! `file.downloaded`, a refusal's `file.rejected`), so the table's
//! stream carries every change exactly as it was stored, and this function,
//! which Lambda invokes with the stream's records in order, turns each into
//! its event ([`sluice_aws::change_event`]) and delivers it: signed, to the
//! configured endpoints ([`Webhooks::deliver_now`]), and on the configured
//! EventBridge bus ([`EventBus::put`]). No request pays for a delivery.
//! Deliveries to the endpoints run [`AT_ONCE`] at a time, within the
//! invocation's deadline: one slow receiver holds up no other event, and a
//! batch never outlives its invocation. The first event not delivered (it
//! failed, or the deadline came first) reports its record as the batch's
//! failure: Lambda retries from there (the template bounds how long,
//! bisects a failing batch, and keeps what it gives up on in a queue), and
//! receivers dedupe by `webhook-id` (on the bus, `detail.id`), which is
//! derived from the stream record's id and so the same on every retry.

use std::process::ExitCode;

use aws_lambda_events::event::dynamodb::{Event as StreamEvent, EventRecord};
use aws_lambda_events::event::streams::{DynamoDbBatchItemFailure, DynamoDbEventResponse};
use sluice::events::Event;
use sluice::webhooks::Webhooks;
use sluice::{Config, Sha256};
use sluice_aws::EventBus;

/// The event a stream record reports, if any, under an id of its own that
/// every retry of the record repeats.
pub fn event_of(record: &EventRecord) -> Option<Event> {
    let image = |item: &serde_dynamo::Item| -> Option<sluice_aws::Item> {
        let item: std::collections::HashMap<String, serde_dynamo::AttributeValue> =
            item.clone().into();
        (!item.is_empty()).then(|| item.into_iter().map(|(k, v)| (k, v.into())).collect())
    };
    let (old, new) = (
        image(&record.change.old_image),
        image(&record.change.new_image),
    );
    // A TTL deletion is the DynamoDB service's, as the stream says.
    let by_ttl = record
        .user_identity
        .as_ref()
        .is_some_and(|u| u.type_ == "Service" && u.principal_id == "dynamodb.amazonaws.com");
    let mut event = sluice_aws::change_event(old.as_ref(), new.as_ref(), by_ttl)?;
    event.id = format!(
        "evt_{}",
        &Sha256::of(record.event_id.as_bytes()).to_hex()[..32]
    );
    // When the change was made, as the stream records it; an event an
    // item carries (a download's, bytes refused) says its own time.
    let carried = new
        .as_ref()
        .is_some_and(|n| n.contains_key(sluice_aws::EVENT));
    if !carried {
        let at = record
            .change
            .approximate_creation_date_time
            .timestamp_millis();
        event.timestamp = sluice::events::rfc3339_millis(at);
    }
    Some(event)
}

/// Where the events go: the webhooks' endpoints, an EventBridge bus, or
/// both; and who signs the receipts the events of custody carry.
#[derive(Debug, Clone, Default)]
pub struct Sinks {
    /// `SLUICE_WEBHOOK_URL` and its secret, or `SLUICE_WEBHOOKS_FILE`.
    pub webhooks: Option<Webhooks>,
    /// `SLUICE_EVENT_BUS`.
    pub bus: Option<EventBus>,
    /// `SLUICE_RECEIPT_KMS_KEY`, signing as `SLUICE_PUBLIC_URL`.
    pub receipts: Option<Stamps>,
}

/// Receipts of custody signed into the events (`file.ready`,
/// `file.downloaded`, `file.deleted`, `file.expired`) before they go to
/// any sink, as the local server's webhooks carry them.
#[derive(Debug, Clone)]
pub struct Stamps {
    /// The receipt key.
    pub signer: std::sync::Arc<dyn sluice::receipts::Signer>,
    /// Who signs: the deployment's public URL, as its receipts name it.
    pub issuer: String,
}

impl Sinks {
    /// The sinks `config` names: its webhooks, and in aws mode its bus;
    /// with a receipt key and the public URL, the receipts' signer.
    pub async fn from_config(config: &Config) -> Result<Self, String> {
        let webhooks = sluice_runtime::webhooks(config).map_err(|e| e.to_string())?;
        let sdk = match (&config.aws.event_bus, &config.aws.receipt_kms_key) {
            (None, None) => None,
            _ => Some(sluice_aws::sdk_config(&config.aws).await),
        };
        let bus = match (&config.aws.event_bus, &sdk) {
            (Some(_), Some(sdk)) => EventBus::new(sdk, &config.aws),
            _ => None,
        };
        if webhooks.is_none() && bus.is_none() {
            return Err("no destination: set SLUICE_WEBHOOK_URL and SLUICE_WEBHOOK_SECRET, or SLUICE_WEBHOOKS_FILE, or SLUICE_EVENT_BUS".into());
        }
        let receipts = match (sdk, &config.urls.public) {
            (Some(sdk), Some(public)) => {
                sluice_aws::KmsSigner::new(&sdk, &config.aws).map(|signer| Stamps {
                    signer: std::sync::Arc::new(signer),
                    issuer: public.as_str().trim_end_matches('/').to_owned(),
                })
            }
            (Some(_), None) if config.aws.receipt_kms_key.is_some() => {
                return Err("SLUICE_RECEIPT_KMS_KEY needs SLUICE_PUBLIC_URL: the receipts name the deployment that signed them".into());
            }
            _ => None,
        };
        Ok(Self {
            webhooks,
            bus,
            receipts,
        })
    }
}

/// Signs the receipt of each event of custody among `events`, in order,
/// [`AT_ONCE`] at a time: the index of the first that could not be signed
/// (its key out of reach), which is sent to no sink, nor is any after it.
async fn stamp(stamps: &Stamps, events: &mut [Event]) -> Option<usize> {
    use futures_util::StreamExt as _;
    let signed: Vec<_> = futures_util::stream::iter(events.iter_mut())
        .map(|event| async {
            let id = event.id.clone();
            sluice::service::receipts::stamp_event(&*stamps.signer, &stamps.issuer, event)
                .await
                .map_err(|e| (id, e))
        })
        .buffered(AT_ONCE)
        .collect()
        .await;
    let (i, (id, why)) = signed
        .into_iter()
        .enumerate()
        .find_map(|(i, r)| r.err().map(|e| (i, e)))?;
    tracing::warn!(event_id = %id, error = %why, "the event's receipt is pending; the stream retries it");
    Some(i)
}

/// Deliveries to the endpoints in flight at once.
pub const AT_ONCE: usize = 16;

/// What an invocation keeps of its time after the deliveries: enough to
/// answer Lambda before its deadline.
pub const MARGIN: std::time::Duration = std::time::Duration::from_secs(3);

/// Delivers the events of `batch`'s records, to the bus and to the
/// endpoints ([`AT_ONCE`] at a time), by `deadline` (less [`MARGIN`]); the
/// first record whose event was not delivered by then is the batch's
/// failure (Lambda retries it and every record after it).
pub async fn handle(
    sinks: &Sinks,
    batch: StreamEvent,
    deadline: tokio::time::Instant,
) -> DynamoDbEventResponse {
    // The events, and beside each the record it came from.
    let (mut events, mut from) = (Vec::new(), Vec::new());
    for record in &batch.records {
        let Some(event) = event_of(record) else {
            continue;
        };
        // The one change no function of ours makes, so its audit line
        // is written here.
        if event.kind == sluice::events::EventType::Expired
            && let Some(file) = event.data.file()
        {
            sluice::telemetry::audit(sluice::telemetry::Change::Expired, &file, None);
        }
        events.push(event);
        from.push(record);
    }
    // The first event not delivered, if any: none goes without its receipt.
    let mut failed = None;
    if let Some(stamps) = &sinks.receipts {
        failed = stamp(stamps, &mut events).await;
        events.truncate(failed.unwrap_or(events.len()));
    }
    if let Some(bus) = &sinks.bus {
        let put = bus.put(&events).await;
        let delivered = put.as_ref().err().map_or(events.len(), |n| n.first);
        for _ in 0..delivered {
            sluice::telemetry::delivery(BUS, "delivered");
        }
        if let Err(not) = put {
            sluice::telemetry::delivery(BUS, "retried");
            tracing::warn!(event_id = %events[not.first].id, error = %not, "event not put on the bus; the stream retries it");
            failed = Some(not.first);
        }
    }
    if let Some(webhooks) = &sinks.webhooks {
        use futures_util::StreamExt as _;
        let upto = failed.unwrap_or(events.len());
        // In order of the records, AT_ONCE in flight: the first not
        // delivered is the first that failed or had not ended by the
        // deadline.
        let mut delivered = futures_util::stream::iter(&events[..upto])
            .map(|event| webhooks.deliver_now(event))
            .buffered(AT_ONCE);
        let stop = deadline.checked_sub(MARGIN).unwrap_or(deadline);
        let mut i = 0;
        while i < upto {
            match tokio::time::timeout_at(stop, delivered.next()).await {
                Ok(Some(Ok(()))) => i += 1,
                Ok(Some(Err(why))) => {
                    tracing::warn!(event_id = %events[i].id, error = %why, "event not delivered; the stream retries it");
                    break;
                }
                Ok(None) => break,
                Err(_) => {
                    tracing::warn!(event_id = %events[i].id, "the invocation's deadline came before this event was delivered; the stream retries it");
                    break;
                }
            }
        }
        if i < upto {
            failed = Some(i);
        }
    }
    let mut response = DynamoDbEventResponse::default();
    if let Some(i) = failed {
        let mut failure = DynamoDbBatchItemFailure::default();
        failure.item_identifier = from[i].change.sequence_number.clone();
        response.batch_item_failures.push(failure);
    }
    response
}

/// The endpoint's secrets, read from Secrets Manager where `config` names
/// a secret for them (`SLUICE_WEBHOOK_SECRET_ID`, the template's way): then
/// the configuration has them as if `SLUICE_WEBHOOK_SECRET` had said them,
/// and no plaintext variable of the function holds them.
pub async fn read_webhook_secret(config: &mut Config) -> Result<(), String> {
    use sluice::config::WebhookSource;
    let Some(WebhookSource::Stored { url, secret_id }) = &config.operations.webhooks else {
        return Ok(());
    };
    let value = sluice_aws::read_secret(secret_id, config.aws.region.as_deref())
        .await
        .map_err(|e| format!("SLUICE_WEBHOOK_SECRET_ID: {e}"))?;
    config.operations.webhooks = Some(WebhookSource::One {
        url: url.clone(),
        secrets: sluice::config::webhook_secrets(&value),
    });
    Ok(())
}

/// The invocation's deadline on the runtime's clock, from the runtime's
/// `deadline` (`now`: milliseconds since the epoch). Lambda gives the
/// deadline as milliseconds since the epoch; `cargo lambda watch`'s
/// emulator gives the time left instead (`600000`), so a value before 2001
/// is taken as that.
pub fn deadline_of(deadline: u64, now: i64) -> tokio::time::Instant {
    const EPOCH_2001_MS: u64 = 978_307_200_000;
    let left = if deadline < EPOCH_2001_MS {
        deadline
    } else {
        u64::try_from(i64::try_from(deadline).unwrap_or(i64::MAX) - now).unwrap_or(0)
    };
    tokio::time::Instant::now() + std::time::Duration::from_millis(left)
}

/// The bus as the deliveries metric names it.
const BUS: &str = "eventbridge";

/// `main` for the function: the sinks from the configuration, then the
/// Lambda runtime.
pub fn main() -> ExitCode {
    let config = match Config::from_env() {
        Ok(c) => c,
        Err(e) => {
            eprintln!("sluice-events: {e}");
            return ExitCode::from(2);
        }
    };
    sluice_runtime::init_tracing(&config);
    let rt = match tokio::runtime::Runtime::new() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("sluice-events: {e}");
            return ExitCode::FAILURE;
        }
    };
    let mut config = config;
    if let Err(e) = rt.block_on(read_webhook_secret(&mut config)) {
        eprintln!("sluice-events: {e}");
        return ExitCode::from(2);
    }
    let sinks = match rt.block_on(Sinks::from_config(&config)) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("sluice-events: {e}");
            return ExitCode::from(2);
        }
    };
    let sinks = &sinks;
    let run = rt.block_on(lambda_runtime::run(lambda_runtime::service_fn(
        move |event: lambda_runtime::LambdaEvent<StreamEvent>| async move {
            let deadline = deadline_of(event.context.deadline, sluice::time::now_millis());
            Ok::<_, lambda_runtime::Error>(handle(sinks, event.payload, deadline).await)
        },
    )));
    match run {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("sluice-events: lambda runtime: {e}");
            ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A stream record as Lambda passes it (the shape of AWS's own example),
    /// of the item `key` removed, by DynamoDB's TTL when `by_ttl`.
    fn removed(key: &str, record: &str, by_ttl: bool) -> EventRecord {
        let mut r = serde_json::json!({
            "eventID": "c4ca4238a0b923820dcc509a6f75849b",
            "eventName": "REMOVE",
            "eventVersion": "1.1",
            "eventSource": "aws:dynamodb",
            "awsRegion": "us-east-1",
            "dynamodb": {
                "ApproximateCreationDateTime": 1796270000.0,
                "Keys": {"pk": {"S": key}},
                "OldImage": {"pk": {"S": key}, "rec": {"S": record}, "ready": {"BOOL": true}},
                "SequenceNumber": "111",
                "SizeBytes": 26,
                "StreamViewType": "NEW_AND_OLD_IMAGES"
            },
            "eventSourceARN": "arn:aws:dynamodb:us-east-1:123456789012:table/t/stream/2026-12-03T00:00:00.000"
        });
        if by_ttl {
            r["userIdentity"] =
                serde_json::json!({"type": "Service", "principalId": "dynamodb.amazonaws.com"});
        }
        serde_json::from_value(r).unwrap()
    }

    fn a_record() -> (sluice::FileId, String) {
        let record = sluice::records::FileRecord {
            file: sluice::file::FileMeta {
                id: sluice::FileId::random(),
                owner: "alice".into(),
                filename: "a.txt".into(),
                content_type: "text/plain".into(),
                size: 5,
                sha256: Sha256::of(b"hello"),
            },
            created_ms: 0,
            expires_at: 1,
            ready: true,
            proof: None,
            scan: None,
            trace: None,
            copy: false,
        };
        (record.file.id.clone(), record.to_json())
    }

    fn aws_config(extra: &[(&str, &str)]) -> Config {
        let base = [
            ("SLUICE_BACKEND", "aws"),
            ("SLUICE_S3_BUCKET", "b"),
            ("SLUICE_DYNAMODB_TABLE", "t"),
            ("SLUICE_AWS_REGION", "us-east-1"),
            (
                "SLUICE_MASTER_SECRET",
                "a-master-secret-of-thirty-two-bytes-or-more",
            ),
            ("SLUICE_DEV_TOKENS", "true"),
        ];
        Config::from_vars(
            base.iter()
                .chain(extra)
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned())),
        )
        .unwrap()
    }

    /// As the template sets them: a parameter left empty is an empty
    /// variable, which is no destination.
    #[tokio::test]
    async fn the_sinks_are_the_bus_the_webhooks_or_both_and_never_none() {
        let bus_only = aws_config(&[
            ("SLUICE_EVENT_BUS", "sluice-files"),
            ("SLUICE_WEBHOOK_URL", ""),
            ("SLUICE_WEBHOOK_SECRET", ""),
        ]);
        let sinks = Sinks::from_config(&bus_only).await.unwrap();
        assert_eq!(sinks.bus.as_ref().map(EventBus::name), Some("sluice-files"));
        assert!(sinks.webhooks.is_none());

        let webhooks_only = aws_config(&[
            ("SLUICE_EVENT_BUS", ""),
            ("SLUICE_WEBHOOK_URL", "https://example.com/hooks"),
            (
                "SLUICE_WEBHOOK_SECRET",
                "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
            ),
        ]);
        let sinks = Sinks::from_config(&webhooks_only).await.unwrap();
        assert!(sinks.bus.is_none() && sinks.webhooks.is_some());

        let neither = aws_config(&[("SLUICE_EVENT_BUS", ""), ("SLUICE_WEBHOOK_URL", "")]);
        let refused = Sinks::from_config(&neither).await.unwrap_err();
        assert!(
            refused.contains("SLUICE_EVENT_BUS") && refused.contains("SLUICE_WEBHOOK_URL"),
            "{refused}"
        );
    }

    /// Lambda's deadline is a time; the emulator's, the time left.
    #[test]
    fn a_deadline_is_read_as_lambda_and_its_emulator_give_it() {
        let now = 1_796_516_873_332;
        let left = |d: tokio::time::Instant| {
            d.saturating_duration_since(tokio::time::Instant::now())
                .as_secs()
        };
        assert!((118..=120).contains(&left(deadline_of(now as u64 + 120_000, now))));
        assert!((598..=600).contains(&left(deadline_of(600_000, now))));
        assert_eq!(
            left(deadline_of(now as u64 - 5_000, now)),
            0,
            "past: nothing left"
        );
    }

    #[test]
    fn a_ttl_removal_of_a_file_is_its_expiry_under_the_stream_records_id() {
        let (id, json) = a_record();
        let key = format!("file#{id}");
        let event = event_of(&removed(&key, &json, true)).unwrap();
        assert_eq!(event.kind, sluice::events::EventType::Expired);
        assert_eq!(event.data.file_id, id.to_string());
        assert_eq!(event.timestamp, "2026-12-03T03:53:20.000Z");
        // A retry of the same record: the same id, for the receiver's dedupe.
        assert_eq!(event_of(&removed(&key, &json, true)).unwrap().id, event.id);
        assert!(
            event.id.starts_with("evt_") && event.id.len() == 36,
            "{}",
            event.id
        );
    }

    #[test]
    fn other_removals_and_other_items_are_no_event() {
        let (id, json) = a_record();
        // Removed by someone else (not the TTL): not an expiry.
        assert!(event_of(&removed(&format!("file#{id}"), &json, false)).is_none());
        // Not a file's item.
        assert!(event_of(&removed("jti#x", &json, true)).is_none());
    }
}
