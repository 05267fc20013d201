//! One file's record, a page of them, and where a page starts: the types
//! every record trait speaks, kept as the same JSON on both backends.

use serde::{Deserialize, Serialize};

use crate::file::{FileId, FileMeta};
use crate::sha::Sha256;

/// One file's record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileRecord {
    /// What the file pins.
    pub file: FileMeta,
    /// When it was issued, in milliseconds since the Unix epoch (so that
    /// files issued within one second still list newest first).
    pub created_ms: i64,
    /// When its handle and record expire.
    pub expires_at: i64,
    /// Whether its bytes are known to have arrived.
    pub ready: bool,
    /// Where the proof that its object is the file declared stands, where
    /// the service proves it by reading (an object joined from parts on S3,
    /// or put to a store that does not check SHA-256): the service's own
    /// words ([`crate::service`]'s `proof`), which a store keeps as they are
    /// and changes only through [`super::ProofLease::swap_proof`].
    pub proof: Option<String>,
    /// Where the malware scan of its bytes stands, when scanning is on:
    /// `None` until its bytes are found stored ([`ScanNote`]).
    pub scan: Option<ScanNote>,
    /// The trace its life is in (a `traceparent`): the request's that
    /// issued it, where traces are exported ([`crate::traces`]).
    pub trace: Option<String>,
    /// Whether it was issued as a copy of a file its owner had stored (a
    /// batch's file of the same size and SHA-256), not for bytes to come.
    pub copy: bool,
}

/// Where a file's malware scan stands, kept beside its record (a column of
/// its own on SQLite, an attribute on DynamoDB) as this JSON: since when
/// its bytes wait for a verdict, and the verdict once there is one.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ScanNote {
    /// When its bytes were found stored (seconds since the epoch): the
    /// operator's deadline runs from here.
    pub since: i64,
    /// The scanner's verdict; `None` while it is being scanned.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verdict: Option<Verdict>,
    /// The type the file's first bytes show (`SLUICE_TYPE_CHECK`), where
    /// one was told.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detected: Option<String>,
}

/// What a scanner said of a file's bytes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "verdict", rename_all = "lowercase")]
pub enum Verdict {
    /// Nothing found.
    Clean {
        /// The scanner and its version (`ClamAV 1.4.6/…`).
        by: String,
    },
    /// A signature matched: the file is refused, its bytes deleted.
    Infected {
        /// The signature's name.
        signature: String,
        /// The scanner and its version.
        by: String,
    },
    /// The scanner could not scan it (over its size limit, a type it does
    /// not take, or no verdict before the deadline): the operator's policy
    /// (`SLUICE_SCAN_UNSCANNED`) decides.
    Unscanned {
        /// Why, in words.
        why: String,
        /// Whether the policy let it through.
        allowed: bool,
    },
    /// Its bytes are an executable or an archive while it was declared a
    /// document (`SLUICE_TYPE_CHECK=refuse`): refused, its bytes deleted.
    Mistyped {
        /// Why, in words (`type: …`).
        why: String,
    },
}

impl Verdict {
    /// Whether a file with this verdict may be used.
    pub fn passes(&self) -> bool {
        match self {
            Verdict::Clean { .. } => true,
            Verdict::Infected { .. } => false,
            Verdict::Unscanned { allowed, .. } => *allowed,
            Verdict::Mistyped { .. } => false,
        }
    }

    /// Why a file with this verdict is refused, in words (`malware: …`,
    /// `unscanned: …`); `None` for one that passes.
    pub fn refusal(&self) -> Option<String> {
        match self {
            Verdict::Clean { .. } => None,
            Verdict::Infected { signature, .. } => Some(format!("malware: {signature}")),
            Verdict::Unscanned { allowed: true, .. } => None,
            Verdict::Unscanned { why, .. } => Some(format!("unscanned: {why}")),
            Verdict::Mistyped { why } => Some(why.clone()),
        }
    }

    /// Its name, for a metric's label: `clean`, `infected`, `unscanned`.
    pub fn label(&self) -> &'static str {
        match self {
            Verdict::Clean { .. } => "clean",
            Verdict::Infected { .. } => "infected",
            Verdict::Unscanned { .. } => "unscanned",
            Verdict::Mistyped { .. } => "mistyped",
        }
    }
}

impl ScanNote {
    /// A note as a store keeps it.
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).expect("a scan note serializes")
    }

    /// A note from a store; `None` for one this version cannot read.
    pub fn from_json(json: &str) -> Option<Self> {
        serde_json::from_str(json).ok()
    }
}

/// One page of a user's unexpired files, newest first.
#[derive(Debug, Clone, Default)]
pub struct Page {
    /// The records; fewer than the limit only on the last page (or, on
    /// DynamoDB, where expired items were filtered out of a page).
    pub records: Vec<FileRecord>,
    /// Where the next page starts; `None` after the last.
    pub next: Option<Cursor>,
}

/// Where a page starts: after the file issued at `created_ms` (milliseconds)
/// with id `file_id`. The service puts it on the wire, tied to its owner
/// (`service::files`); the stores only read and write these two fields.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cursor {
    /// The last record's issue time.
    pub created_ms: i64,
    /// The last record's id.
    pub file_id: String,
}

/// A record as stored: the same JSON on both backends.
#[derive(Serialize, Deserialize)]
pub(crate) struct Stored {
    file_id: String,
    owner: String,
    filename: String,
    content_type: String,
    size: u64,
    sha256: Sha256,
    created_ms: i64,
    expires_at: i64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    trace: Option<String>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    copy: bool,
}

impl FileRecord {
    /// The record of `file`, issued now, pending until its bytes arrive.
    pub fn issued(file: &FileMeta, expires_at: i64) -> Self {
        Self {
            file: file.clone(),
            created_ms: crate::time::now_millis(),
            expires_at,
            ready: false,
            proof: None,
            scan: None,
            trace: crate::traces::current(),
            copy: false,
        }
    }

    /// The record's JSON, as both backends keep it.
    pub fn to_json(&self) -> String {
        serde_json::to_string(&Stored {
            file_id: self.file.id.to_string(),
            owner: self.file.owner.clone(),
            filename: self.file.filename.clone(),
            content_type: self.file.content_type.clone(),
            size: self.file.size,
            sha256: self.file.sha256,
            created_ms: self.created_ms,
            expires_at: self.expires_at,
            trace: self.trace.clone(),
            copy: self.copy,
        })
        .expect("a record serializes")
    }

    /// A record from its JSON, its ready flag and its proof; `None` if this
    /// version cannot read it (skipped, not fatal).
    pub fn from_json(json: &str, ready: bool, proof: Option<String>) -> Option<Self> {
        let s: Stored = serde_json::from_str(json).ok()?;
        Some(Self {
            file: FileMeta {
                id: FileId::parse(&s.file_id)?,
                owner: s.owner,
                filename: s.filename,
                content_type: s.content_type,
                size: s.size,
                sha256: s.sha256,
            },
            created_ms: s.created_ms,
            expires_at: s.expires_at,
            ready,
            proof,
            scan: None,
            trace: s.trace,
            copy: s.copy,
        })
    }

    /// This record with the scan note a store kept beside it (its JSON).
    pub fn with_scan(mut self, scan: Option<&str>) -> Self {
        self.scan = scan.and_then(ScanNote::from_json);
        self
    }

    /// Why its malware scan refused it (`malware: …`, `unscanned: …`), as
    /// its note says; `None` for a file no verdict refused.
    pub fn refusal(&self) -> Option<String> {
        self.scan.as_ref()?.verdict.as_ref()?.refusal()
    }
}

/// A record kept whole as JSON under its id (a batch, an import): the same
/// JSON on both backends, the id being the key and not in the JSON.
pub trait KeptAsJson: Serialize + serde::de::DeserializeOwned {
    /// Its id, once it has one.
    fn id(&self) -> Option<&FileId>;

    /// Sets its id (read from the key).
    fn set_id(&mut self, id: FileId);

    /// The id it is kept under (empty if it has none yet).
    fn key(&self) -> String {
        self.id().map(ToString::to_string).unwrap_or_default()
    }

    /// Its JSON.
    fn to_json(&self) -> String {
        serde_json::to_string(self).expect("a record serializes")
    }

    /// The record `id` from its JSON; `None` if this version cannot read it.
    fn from_json(id: &FileId, json: &str) -> Option<Self> {
        let mut record: Self = serde_json::from_str(json).ok()?;
        record.set_id(id.clone());
        Some(record)
    }
}
