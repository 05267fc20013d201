//! What sluice tells a team's backend when a file changes state, as the
//! Standard Webhooks specification shapes a message: a `type`, a
//! `timestamp` and the `data`, under an id the receiver dedupes by
//! (`webhook-id`). The events are written to an outbox in the same
//! transaction as the change they report ([`crate::records::Outbox`]), and a worker
//! delivers them (`crate::webhooks`), so none is lost to a crash or a
//! receiver that is down.

use serde::{Deserialize, Serialize};

use crate::file::FileMeta;
use crate::sha::Sha256;

/// What happened to a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum EventType {
    /// Its bytes arrived and were verified.
    #[serde(rename = "file.ready")]
    Ready,
    /// A download link of it was redeemed.
    #[serde(rename = "file.downloaded")]
    Downloaded,
    /// It was deleted before it expired.
    #[serde(rename = "file.deleted")]
    Deleted,
    /// Its record expired and was swept.
    #[serde(rename = "file.expired")]
    Expired,
    /// Bytes that were not the file declared were refused (nothing stored).
    #[serde(rename = "file.rejected")]
    Rejected,
}

impl EventType {
    /// Every type, in the order the docs list them.
    pub const ALL: [EventType; 5] = [
        EventType::Ready,
        EventType::Downloaded,
        EventType::Deleted,
        EventType::Expired,
        EventType::Rejected,
    ];

    /// Its name on the wire (`file.ready`, …).
    pub fn as_str(self) -> &'static str {
        match self {
            EventType::Ready => "file.ready",
            EventType::Downloaded => "file.downloaded",
            EventType::Deleted => "file.deleted",
            EventType::Expired => "file.expired",
            EventType::Rejected => "file.rejected",
        }
    }

    /// The type named `name`.
    pub fn parse(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|t| t.as_str() == name)
    }
}

/// The file an event is about.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EventData {
    /// The file's id.
    pub file_id: String,
    /// Its owner (the `sub` of the user who uploaded it).
    pub owner: String,
    /// The name it was uploaded under.
    pub filename: String,
    /// Its declared size in bytes.
    pub size: u64,
    /// Its declared SHA-256; absent for a file whose digest never came (a
    /// person's page that sent while it hashed, deleted or expired before
    /// its last bytes).
    #[serde(default = "to_come", skip_serializing_if = "Sha256::is_to_come")]
    pub sha256: Sha256,
    /// Its media type.
    pub content_type: String,
    /// The id (`jti`) of the link redeemed or refused, never the token.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub token_id: Option<String>,
    /// Why a file was rejected, on `file.rejected` from a malware scan
    /// (`malware: <signature>`, `unscanned: …`).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub reason: Option<String>,
    /// The signed receipt of custody of this change (`file.ready`,
    /// `file.downloaded`, `file.deleted`, `file.expired`), where receipts
    /// are signed ([`crate::receipts`]).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub receipt: Option<String>,
}

/// What an event without a digest reads as.
fn to_come() -> Sha256 {
    Sha256::TO_COME
}

impl EventData {
    /// The file it describes; `None` for an id that is not one.
    pub fn file(&self) -> Option<FileMeta> {
        Some(FileMeta {
            id: crate::FileId::parse(&self.file_id)?,
            owner: self.owner.clone(),
            filename: self.filename.clone(),
            content_type: self.content_type.clone(),
            size: self.size,
            sha256: self.sha256,
        })
    }
}

/// One event: its id and the message's body.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Event {
    /// Unique per event, the same on every retry (`webhook-id`).
    #[serde(skip)]
    pub id: String,
    /// What happened.
    #[serde(rename = "type")]
    pub kind: EventType,
    /// When, RFC 3339 with milliseconds, UTC.
    pub timestamp: String,
    /// The file.
    pub data: EventData,
}

impl Event {
    /// Event `kind` about `file`, now, under a fresh id; `token_id` names
    /// the link concerned, if any.
    pub fn about(kind: EventType, file: &FileMeta, token_id: Option<&str>) -> Self {
        Self {
            id: format!("evt_{}", crate::keys::random_id::<16>()),
            kind,
            timestamp: timestamp_now(),
            data: EventData {
                file_id: file.id.to_string(),
                owner: file.owner.clone(),
                filename: file.filename.clone(),
                size: file.size,
                sha256: file.sha256,
                content_type: file.content_type.clone(),
                token_id: token_id.map(str::to_owned),
                reason: None,
                receipt: None,
            },
        }
    }

    /// The message's body, as it is signed and sent.
    pub fn body(&self) -> String {
        serde_json::to_string(self).expect("an event serializes")
    }

    /// The event whose body is `body` (an id is not in a body: the
    /// caller gives it one).
    pub fn from_body(body: &str) -> Option<Self> {
        serde_json::from_str(body).ok()
    }
}

/// Now, RFC 3339 with milliseconds.
fn timestamp_now() -> String {
    rfc3339_millis(crate::time::now_millis())
}

/// `ms` since the epoch as an event's `timestamp`: RFC 3339, UTC, always
/// with three digits of milliseconds (`2026-12-03T06:11:41.000Z`).
pub fn rfc3339_millis(ms: i64) -> String {
    let format = time::macros::format_description!(
        "[year]-[month]-[day]T[hour]:[minute]:[second].[subsecond digits:3]Z"
    );
    time::OffsetDateTime::from_unix_timestamp_nanos(i128::from(ms) * 1_000_000)
        .ok()
        .and_then(|t| t.format(&format).ok())
        .unwrap_or_default()
}

/// An event waiting to be delivered to one endpoint.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Delivery {
    /// The event's place in the outbox.
    pub seq: i64,
    /// The endpoint's name.
    pub endpoint: String,
    /// Attempts made before this one.
    pub attempts: u32,
    /// The event's id (`webhook-id`).
    pub event_id: String,
    /// The body to send.
    pub body: String,
}

/// An endpoint as the outbox sees it: its name and the types it takes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Subscriber {
    /// Its name (its URL, or the name the endpoints file gives it).
    pub name: String,
    /// The types it takes; all of them when `None`.
    pub events: Option<Vec<EventType>>,
}

impl Subscriber {
    /// Whether it takes events of type `kind`.
    pub fn takes(&self, kind: EventType) -> bool {
        self.events.as_ref().is_none_or(|e| e.contains(&kind))
    }
}

impl From<EventType> for crate::telemetry::Change {
    /// The change an event reports.
    fn from(kind: crate::events::EventType) -> Self {
        match kind {
            EventType::Ready => crate::telemetry::Change::Ready,
            EventType::Downloaded => crate::telemetry::Change::Downloaded,
            EventType::Deleted => crate::telemetry::Change::Deleted,
            EventType::Expired => crate::telemetry::Change::Expired,
            EventType::Rejected => crate::telemetry::Change::Rejected,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_event_is_the_standard_webhooks_shape() {
        let file = FileMeta {
            id: crate::FileId::random(),
            owner: "alice".into(),
            filename: "a.pdf".into(),
            content_type: "application/pdf".into(),
            size: 4,
            sha256: Sha256::of(b"%PDF"),
        };
        let event = Event::about(EventType::Downloaded, &file, Some("jti-1"));
        let body: serde_json::Value = serde_json::from_str(&event.body()).unwrap();
        assert_eq!(body["type"], "file.downloaded");
        assert_eq!(body["data"]["file_id"], file.id.to_string());
        assert_eq!(body["data"]["sha256"], file.sha256.to_hex());
        assert_eq!(body["data"]["token_id"], "jti-1");
        assert!(body["timestamp"].as_str().unwrap().ends_with('Z'), "{body}");
        assert!(event.id.starts_with("evt_") && event.id.len() > 20);
        assert_ne!(event.id, Event::about(EventType::Ready, &file, None).id);
        for t in EventType::ALL {
            assert_eq!(EventType::parse(t.as_str()), Some(t));
        }
    }
}
