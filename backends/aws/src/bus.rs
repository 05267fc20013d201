//! The events' other destination on AWS: an EventBridge bus. The events
//! function puts each event the table's stream carries on the bus named by
//! `SLUICE_EVENT_BUS` (the template's `EventBusName`), where the team's
//! rules route it (a queue, a Step Functions machine, another account),
//! with no endpoint or secret of theirs to run.
//!
//! Each entry: source [`SOURCE`], detail-type the event's type
//! (`file.ready`, …), time the event's own, and as detail the webhook's
//! body with its id beside (`{"id", "type", "timestamp", "data"}`): a
//! retried record puts the same `detail.id` again (EventBridge gives every
//! put an `id` of its own), so that is what a consumer dedupes by.

use aws_sdk_eventbridge::error::DisplayErrorContext;
use aws_sdk_eventbridge::primitives::{DateTime, DateTimeFormat};
use aws_sdk_eventbridge::types::PutEventsRequestEntry;
use sluice::AwsConfig;
use sluice::events::Event;

/// The `source` of every entry sluice puts.
pub const SOURCE: &str = "sluice";

/// Entries one `PutEvents` call takes at most (EventBridge's limit).
const ENTRIES_PER_CALL: usize = 10;

/// Why events were not all put: `first` is the index of the first one
/// not accepted (every event before it was).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("event bus: event {first} of the batch not put: {why}")]
pub struct NotPut {
    /// The first event not put.
    pub first: usize,
    /// EventBridge's reason (an error code and message, or the call's error).
    pub why: String,
}

/// One EventBridge bus.
#[derive(Debug, Clone)]
pub struct EventBus {
    client: aws_sdk_eventbridge::Client,
    name: String,
}

impl EventBus {
    /// The bus `aws` names (`SLUICE_EVENT_BUS`), if it names one.
    pub fn new(shared: &aws_config::SdkConfig, aws: &AwsConfig) -> Option<Self> {
        let name = aws.event_bus.clone()?;
        let mut config =
            aws_sdk_eventbridge::config::Builder::from(shared).timeout_config(crate::timeouts());
        if let Some(endpoint) = &aws.eventbridge_endpoint {
            config = config.endpoint_url(crate::endpoint(endpoint));
        }
        Some(Self {
            client: aws_sdk_eventbridge::Client::from_conf(config.build()),
            name,
        })
    }

    /// The bus's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Puts `events` on the bus in order, ten a call (EventBridge's limit),
    /// stopping at the first call that did not put them all.
    pub async fn put(&self, events: &[Event]) -> Result<(), NotPut> {
        for (n, chunk) in events.chunks(ENTRIES_PER_CALL).enumerate() {
            let offset = n * ENTRIES_PER_CALL;
            let entries = chunk.iter().map(|e| self.entry(e)).collect();
            let out = self
                .client
                .put_events()
                .set_entries(Some(entries))
                .send()
                .await
                .map_err(|e| NotPut {
                    first: offset,
                    why: DisplayErrorContext(e).to_string(),
                })?;
            if out.failed_entry_count() > 0 {
                // Entries answer in the order they were put; one with an
                // error code was not put.
                let failed = out.entries().iter().position(|e| e.error_code().is_some());
                let why = match failed.map(|i| &out.entries()[i]) {
                    Some(e) => format!(
                        "{}: {}",
                        e.error_code().unwrap_or_default(),
                        e.error_message().unwrap_or_default()
                    ),
                    None => format!("{} entries failed", out.failed_entry_count()),
                };
                return Err(NotPut {
                    first: offset + failed.unwrap_or(0),
                    why,
                });
            }
        }
        Ok(())
    }

    /// `event` as an entry on this bus.
    fn entry(&self, event: &Event) -> PutEventsRequestEntry {
        PutEventsRequestEntry::builder()
            .event_bus_name(&self.name)
            .source(SOURCE)
            .detail_type(event.kind.as_str())
            .detail(detail(event))
            .set_time(DateTime::from_str(&event.timestamp, DateTimeFormat::DateTime).ok())
            .build()
    }
}

/// An entry's detail: the webhook's body, with the event's id.
fn detail(event: &Event) -> String {
    let mut body = serde_json::to_value(event).expect("an event serializes");
    body["id"] = event.id.clone().into();
    body.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_detail_is_the_body_with_the_id_the_same_on_every_retry() {
        let file = sluice::file::FileMeta {
            id: sluice::FileId::random(),
            owner: "alice".into(),
            filename: "a.txt".into(),
            content_type: "text/plain".into(),
            size: 5,
            sha256: sluice::Sha256::of(b"hello"),
        };
        let event = Event::about(sluice::events::EventType::Ready, &file, None);
        let detail: serde_json::Value = serde_json::from_str(&detail(&event)).unwrap();
        assert_eq!(detail["id"], event.id.as_str());
        assert_eq!(detail["type"], "file.ready");
        assert_eq!(detail["data"]["file_id"], file.id.to_string());
        let body: serde_json::Value = serde_json::from_str(&event.body()).unwrap();
        assert_eq!(detail["data"], body["data"]);
        assert_eq!(detail["timestamp"], body["timestamp"]);
    }
}
