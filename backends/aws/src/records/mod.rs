//! File records in DynamoDB, in the ledger's table (one table to deploy,
//! secure and pay for): a record is the item `pk = file#<id>` (file ids are
//! 128 random bits: a short token finds its record by the id alone, and the
//! record's `owner` says whose it is), and two sparse global secondary
//! indexes, keyed by owner hash and issue time, hold only records (ledger
//! items lack their attributes):
//!
//! - [`BY_OWNER`] (`owner`, `created`): one user's files newest first, a page
//!   per `Query` (`Limit`, `ExclusiveStartKey`), whatever their number;
//! - [`PENDING`] (`pending`, `created`): only files still waiting for their
//!   bytes: the attribute is removed when the file is marked ready, so the
//!   per-user caps read just those.
//!
//! - [`BY_DIGEST`] (`digest`): one user's files by SHA-256 and size (the
//!   attribute is `<owner hash>#<sha256>#<size>`), so that a batch finds
//!   a file the user stored already without reading their other files.
//!
//! A deleted file's item is replaced by its tombstone: the same key, the
//! record kept as `gone`, no other attribute, expiring when the record
//! would have (so `put`'s condition keeps any record from its id).
//!
//! A batch of files issued together is the item `pk = batch#<id>`, its
//! list as JSON, expiring with its files.
//!
//! Why one table with indexes rather than a second table: the ledger's
//! items and the records share the TTL attribute and the access pattern
//! "by key", a second table would double the IAM grants, alarms and
//! teardown, and sparse indexes cost nothing for the ledger's items. Index
//! reads are eventually consistent: a file issued a moment ago may be missing
//! from a page read at once; a file id is always found (`GetItem`, strongly
//! consistent).

use std::collections::HashMap;

use aws_sdk_dynamodb::error::ProvideErrorMetadata as _;
use aws_sdk_dynamodb::types::AttributeValue;
use sluice::file::owner_hash;
mod batches;
mod files;
mod imports;
mod lease;
mod usage;

use sluice::records::{FileRecord, RecordError, RecordStore};
use sluice::{FileId, LedgerError};

use crate::dynamo::{DynamoLedger, KEY, TTL, condition_held, ledger_error};

/// The index of one user's files by issue time.
pub const BY_OWNER: &str = "files-by-owner";
/// The sparse index of one user's pending files by issue time.
pub const PENDING: &str = "pending-by-owner";
/// The index of one user's files by digest and size.
pub const BY_DIGEST: &str = "files-by-digest";

/// How long an admission lease holds if its holder never gives it back
/// (a function that died mid-batch): longer than a batch's writes take.
const ADMISSION_LEASE: std::time::Duration = std::time::Duration::from_secs(30);

/// How long a batch waits for another batch of its user's to be admitted.
const ADMISSION_WAIT: std::time::Duration = std::time::Duration::from_secs(5);

/// An admission lease's holder, and when it lapses (milliseconds).
const HOLDER: &str = "holder";
const UNTIL: &str = "until";

/// The most items one look-up of a user's file by digest reads.
const FIND_READY_ITEMS: i32 = 100;

const DIGEST: &str = "digest";

const OWNER: &str = "owner";
const CREATED: &str = "created";
const PENDING_OWNER: &str = "pending";
const RECORD: &str = "rec";
const READY: &str = "ready";
const PROOF: &str = "proof";
/// Where the file's malware scan stands ([`sluice::records::ScanNote`]).
const SCAN: &str = "scan";
/// Set on a file its scan refused: it is never marked ready.
const REFUSED: &str = "refused";
/// A deleted file's record, in its tombstone (an item with no `rec`, so
/// no read takes it for a record, and out of every index).
const GONE: &str = "gone";

/// File records in the ledger's DynamoDB table.
#[derive(Debug, Clone)]
pub struct DynamoRecords {
    client: aws_sdk_dynamodb::Client,
    table: String,
    /// The longest a record lives (a handle's lifetime), when known: reads
    /// of one user's files then name only those issued since, in the key
    /// condition, so expired items that DynamoDB's TTL has not deleted yet
    /// (it may take days) are not read, however many there are.
    longest: Option<std::time::Duration>,
}

fn key(id: &str) -> String {
    format!("file#{id}")
}

fn batch_key(id: &str) -> String {
    format!("batch#{id}")
}

fn import_key(id: &str) -> String {
    format!("import#{id}")
}

/// What [`BY_DIGEST`] is keyed by: the owner hash, the digest, the size.
fn digest(owner_hash: &str, sha256: &sluice::Sha256, size: u64) -> String {
    format!("{owner_hash}#{}#{size}", sha256.to_hex())
}

fn store_error(e: LedgerError) -> RecordError {
    match e {
        LedgerError::Unavailable(why) => RecordError::Unavailable(why),
        other => RecordError::Io(std::io::Error::other(other)),
    }
}

fn s(v: &str) -> AttributeValue {
    AttributeValue::S(v.to_owned())
}

fn n(v: i64) -> AttributeValue {
    AttributeValue::N(v.to_string())
}

fn record_of(item: &HashMap<String, AttributeValue>) -> Option<FileRecord> {
    let json = item.get(RECORD)?.as_s().ok()?;
    let ready = matches!(item.get(READY), Some(AttributeValue::Bool(true)));
    let proof = item.get(PROOF).and_then(|p| p.as_s().ok()).cloned();
    let scan = item.get(SCAN).and_then(|p| p.as_s().ok());
    FileRecord::from_json(json, ready, proof).map(|r| r.with_scan(scan.map(String::as_str)))
}

/// An item of the table, as DynamoDB gives it (a read, or a stream
/// record's image).
pub type Item = HashMap<String, AttributeValue>;

/// The event a change of one of the table's items reports, from its image
/// before (`old`) and after (`new`), as a DynamoDB stream record carries
/// them; `by_ttl` when DynamoDB's TTL removed it. The table is the outbox:
/// each change below is one conditional write of one item, so its event is
/// recorded with it, atomically, and the stream delivers it.
///
/// - a record that becomes ready (or is written ready): `file.ready`;
/// - a record replaced by its tombstone ([`FileRecords::delete`]):
///   `file.deleted`;
/// - a record TTL removed: `file.expired` (a tombstone's removal is not
///   an event: its file's was `file.deleted`);
/// - a spent link's item written with the event its spend reports
///   ([`sluice::ledger::Ledger::spend_reporting`]): that event,
///   `file.downloaded`, as the resolver made it.
///
/// Every other change (a proof swapped, a ledger item, a batch) is none.
/// The event's id and, but for a download, its time are the caller's to
/// set from the stream record.
pub fn change_event(
    old: Option<&Item>,
    new: Option<&Item>,
    by_ttl: bool,
) -> Option<sluice::events::Event> {
    use sluice::events::{Event, EventType};
    let key = |i: &Item| i.get(KEY).and_then(|k| k.as_s().ok()).cloned();
    let is_file = |i: &Item| key(i).is_some_and(|k| k.starts_with("file#"));
    let ready = |i: Option<&Item>| i.and_then(record_of).is_some_and(|r| r.ready);
    let about = |kind, r: FileRecord| Some(Event::about(kind, &r.file, None));
    match new {
        Some(new) if old.is_none() && new.contains_key(crate::EVENT) => {
            let body = new.get(crate::EVENT)?.as_s().ok()?;
            Event::from_body(body)
        }
        Some(new) if !is_file(new) => None,
        Some(new) => {
            if let Some(json) = new.get(GONE).and_then(|g| g.as_s().ok()) {
                let was_record = old.is_some_and(|o| o.contains_key(RECORD));
                let record = old
                    .and_then(record_of)
                    .or_else(|| FileRecord::from_json(json, false, None))?;
                return if was_record {
                    about(EventType::Deleted, record)
                } else {
                    None
                };
            }
            let record = record_of(new)?;
            if record.ready && !ready(old) {
                about(EventType::Ready, record)
            } else {
                None
            }
        }
        None => {
            let old = old.filter(|o| is_file(o))?;
            let record = record_of(old)?;
            if by_ttl {
                about(EventType::Expired, record)
            } else {
                None
            }
        }
    }
}

impl DynamoRecords {
    /// The item key of file `id`'s record: `file#…`, the prefix the
    /// functions that write records are granted (template.yaml).
    pub fn key_of(id: &str) -> String {
        key(id)
    }

    /// The item key of import `id`'s record: `import#…`, the prefix the
    /// functions that start and run imports are granted.
    pub fn import_key_of(id: &str) -> String {
        import_key(id)
    }

    /// The item key of batch `id`'s record: `batch#…`, the prefix the
    /// functions that read batches (and the importer, building a zip) are
    /// granted.
    pub fn batch_key_of(id: &str) -> String {
        batch_key(id)
    }

    /// The item key of the admission lease of the owner whose hash is
    /// `owner_hash`: `admit#…`, the prefix the mcp function is granted.
    pub fn admission_key(owner_hash: &str) -> String {
        format!("admit#{owner_hash}")
    }

    /// Takes `owner`'s admission lease (one batch of a user admitted at a
    /// time, on every replica): a conditional put that succeeds when no
    /// lease is held or the one held has lapsed ([`ADMISSION_LEASE`]: its
    /// holder died). Tried again for a few seconds while another holds
    /// it; then [`sluice::store::Busy::Admitting`]. Gives the lease's
    /// holder id, for its release.
    async fn admission(&self, owner: &str) -> Result<String, RecordError> {
        let key = Self::admission_key(&owner_hash(owner));
        let holder = sluice::keys::random_id::<12>();
        let deadline = std::time::Instant::now() + ADMISSION_WAIT;
        loop {
            let now = sluice::time::now_millis();
            let until = now + ADMISSION_LEASE.as_millis() as i64;
            let put = self
                .client
                .put_item()
                .table_name(&self.table)
                .item(KEY, s(&key))
                .item(HOLDER, s(&holder))
                .item(UNTIL, n(until))
                .item(TTL, n(until / 1000 + 3600))
                .condition_expression("attribute_not_exists(#k) OR #u < :now")
                .expression_attribute_names("#k", KEY)
                .expression_attribute_names("#u", UNTIL)
                .expression_attribute_values(":now", n(now));
            if condition_held(put.send().await).map_err(store_error)? {
                return Ok(holder);
            }
            if std::time::Instant::now() >= deadline {
                return Err(RecordError::Admitting);
            }
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        }
    }

    /// Gives back `owner`'s admission lease held as `holder` (only that
    /// one: a lease taken over after this one lapsed stays).
    async fn release_admission(&self, owner: &str, holder: &str) {
        let delete = self
            .client
            .delete_item()
            .table_name(&self.table)
            .key(KEY, s(&Self::admission_key(&owner_hash(owner))))
            .condition_expression("#h = :me")
            .expression_attribute_names("#h", HOLDER)
            .expression_attribute_values(":me", s(holder));
        if let Err(e) = condition_held(delete.send().await) {
            tracing::warn!(error = %e, "an admission lease was not given back: it lapses");
        }
    }

    /// The item under `pk`, read strongly consistent.
    pub async fn item(
        &self,
        pk: String,
    ) -> Result<Option<HashMap<String, AttributeValue>>, RecordError> {
        let out = self
            .client
            .get_item()
            .table_name(&self.table)
            .key(KEY, s(&pk))
            .consistent_read(true)
            .send()
            .await
            .map_err(|e| store_error(ledger_error(e)))?;
        Ok(out.item)
    }

    /// The record under `pk`, read strongly consistent.
    async fn read(&self, pk: String) -> Result<Option<FileRecord>, RecordError> {
        Ok(self.item(pk).await?.as_ref().and_then(record_of))
    }

    /// Marks the record under `pk` ready if it is there and `owner_hash`'s;
    /// whether it was.
    async fn mark(&self, pk: String, owner_hash: &str) -> Result<bool, RecordError> {
        let result = self
            .client
            .update_item()
            .table_name(&self.table)
            .key(KEY, s(&pk))
            .update_expression("REMOVE #p SET #r = :t")
            .condition_expression("attribute_exists(#k) AND #o = :o AND attribute_not_exists(#x)")
            .expression_attribute_names("#x", REFUSED)
            .expression_attribute_names("#p", PENDING_OWNER)
            .expression_attribute_names("#r", READY)
            .expression_attribute_names("#k", KEY)
            .expression_attribute_names("#o", OWNER)
            .expression_attribute_values(":t", AttributeValue::Bool(true))
            .expression_attribute_values(":o", s(owner_hash))
            .send()
            .await;
        condition_held(result).map_err(store_error)
    }

    /// Records in the same table, through the same client, as `ledger`.
    pub fn beside(ledger: &DynamoLedger) -> Self {
        Self {
            client: ledger.client().clone(),
            table: ledger.table().to_owned(),
            longest: None,
        }
    }

    /// These records, none of which lives longer than `longest`.
    pub fn living(mut self, longest: std::time::Duration) -> Self {
        self.longest = Some(longest);
        self
    }

    /// The earliest issue time (ms) of a record alive at `now`, with a
    /// minute's slack for clocks: 0 when the longest life is unknown.
    fn issued_since(&self, now: i64) -> i64 {
        self.longest.map_or(0, |l| {
            (now - i64::try_from(l.as_secs()).unwrap_or(i64::MAX / 2000) - 60).max(0) * 1000
        })
    }
}

impl RecordStore for DynamoRecords {}
