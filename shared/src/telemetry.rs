//! What an operator sees of the service at work: the audit line for each
//! change of a file's state, and the metrics (through the `metrics` facade:
//! the local binary installs a Prometheus recorder and serves `/metrics`;
//! with no recorder installed each call is a no-op).
//!
//! Labels take values from short fixed sets only (a tool's name among the
//! tools served, a refusal's reason among the errors', an endpoint's name
//! from the configuration), never a user, a file or a token.

use std::time::Duration;

use crate::file::FileMeta;

/// Files by change of state (`change`: issued, ready, downloaded, deleted,
/// expired, rejected).
pub const FILES: &str = "sluice_files_total";
/// Bytes of files by direction (`direction`: up when a file is ready, down
/// when a download link is redeemed).
pub const BYTES: &str = "sluice_file_bytes_total";
/// Requests refused, by reason (`reason`: the error's code).
pub const REFUSALS: &str = "sluice_refusals_total";
/// Imports (`import_file`), by outcome.
pub const IMPORTS: &str = "sluice_imports_total";
/// Malware scans by verdict (`verdict`: clean, infected, unscanned; and
/// failed, for an attempt that gave none and is tried again).
pub const SCANS: &str = "sluice_scans_total";
/// How long a file waited for its verdict, from its bytes stored
/// (seconds), by verdict.
pub const SCAN_SECONDS: &str = "sluice_scan_seconds";
/// Tool calls by tool and outcome (`outcome`: ok, refused, error).
pub const TOOL_CALLS: &str = "sluice_tool_calls_total";
/// How long a tool call took, by tool (seconds).
pub const TOOL_SECONDS: &str = "sluice_tool_call_seconds";
/// Webhook deliveries by endpoint and outcome (`outcome`: delivered,
/// retried, dropped, given_up).
pub const DELIVERIES: &str = "sluice_webhook_deliveries_total";
/// Transfers through sluice's own data plane in progress: the local
/// store's transfer slots in use.
pub const TRANSFERS_OPEN: &str = "sluice_transfers_open";

/// The buckets of [`TOOL_SECONDS`]: a tool call is milliseconds to seconds.
pub const SECONDS_BUCKETS: &[f64] = &[
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
];

/// The buckets of [`SCAN_SECONDS`]: a scan is a second to many minutes
/// (a file waits while the scanner is down).
pub const SCAN_SECONDS_BUCKETS: &[f64] =
    &[0.5, 1.0, 2.0, 5.0, 10.0, 30.0, 60.0, 300.0, 900.0, 3600.0];

/// Describes each metric to the installed recorder (its help text and
/// unit); call once after installing one.
pub fn describe() {
    use metrics::{Unit, describe_counter, describe_gauge, describe_histogram};
    describe_counter!(FILES, "Files by change of state");
    describe_counter!(BYTES, Unit::Bytes, "Bytes of files by direction");
    describe_counter!(REFUSALS, "Requests refused, by reason");
    describe_counter!(IMPORTS, "Imports from a URL, by outcome");
    describe_counter!(SCANS, "Malware scans by verdict");
    describe_histogram!(
        SCAN_SECONDS,
        Unit::Seconds,
        "Time from a file's bytes stored to its scan's verdict"
    );
    describe_counter!(TOOL_CALLS, "MCP tool calls by tool and outcome");
    describe_histogram!(TOOL_SECONDS, Unit::Seconds, "MCP tool call duration");
    describe_counter!(DELIVERIES, "Webhook deliveries by endpoint and outcome");
    describe_gauge!(TRANSFERS_OPEN, "Transfers through sluice in progress");
}

/// A change of a file's state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Change {
    /// An upload was issued for it.
    Issued,
    /// Its bytes arrived and were proven.
    Ready,
    /// A download link for it was redeemed.
    Downloaded,
    /// It was deleted.
    Deleted,
    /// Its record expired and was swept.
    Expired,
    /// Bytes that were not the file declared were refused.
    Rejected,
}

impl Change {
    /// Its name in the audit line and the metric's label.
    pub fn as_str(self) -> &'static str {
        match self {
            Change::Issued => "issued",
            Change::Ready => "ready",
            Change::Downloaded => "downloaded",
            Change::Deleted => "deleted",
            Change::Expired => "expired",
            Change::Rejected => "rejected",
        }
    }
}

/// The audit line for `change` of `file`, naming the token concerned by its
/// id (`jti`, never the token), and the counters it moves.
pub fn audit(change: Change, file: &FileMeta, token_id: Option<&str>) {
    tracing::info!(
        target: "sluice::audit",
        change = change.as_str(),
        file_id = %file.id,
        owner = %file.owner,
        size = file.size,
        token_id = token_id.unwrap_or("-"),
        "file {}",
        change.as_str()
    );
    metrics::counter!(FILES, "change" => change.as_str()).increment(1);
    let direction = match change {
        Change::Ready => "up",
        Change::Downloaded => "down",
        _ => return,
    };
    metrics::counter!(BYTES, "direction" => direction).increment(file.size);
}

/// An import ended: `ready` or `rejected`.
pub fn imported(outcome: &'static str) {
    metrics::counter!(IMPORTS, "outcome" => outcome).increment(1);
}

/// A file's scan gave `verdict` (`clean`, `infected`, `unscanned`),
/// `waited` after its bytes were stored: its audit line (the verdict, the
/// signature or the reason as `detail`, the scanner with its version as
/// `by`), and the metrics.
pub fn scanned(file: &FileMeta, verdict: &'static str, detail: &str, by: &str, waited: Duration) {
    tracing::info!(
        target: "sluice::audit",
        change = "scanned",
        file_id = %file.id,
        owner = %file.owner,
        size = file.size,
        verdict,
        detail,
        by,
        waited_ms = waited.as_millis() as u64,
        "file scanned: {verdict}"
    );
    metrics::counter!(SCANS, "verdict" => verdict).increment(1);
    metrics::histogram!(SCAN_SECONDS, "verdict" => verdict).record(waited.as_secs_f64());
}

/// An attempt at a scan gave no verdict (the scanner unreachable): tried
/// again.
pub fn scan_failed() {
    metrics::counter!(SCANS, "verdict" => "failed").increment(1);
}

/// The audit line of a delete, naming who deleted the file (`by`: the
/// deleting caller's owner id; the owner's own, or a backend's granted
/// `files:delete`).
pub fn audit_deleted(file: &FileMeta, by: &str) {
    tracing::info!(
        target: "sluice::audit",
        change = Change::Deleted.as_str(),
        file_id = %file.id,
        owner = %file.owner,
        size = file.size,
        by = %by,
        "file deleted"
    );
    metrics::counter!(FILES, "change" => Change::Deleted.as_str()).increment(1);
}

/// Counts a refused request by its reason (an error code).
pub fn refused(reason: &'static str) {
    metrics::counter!(REFUSALS, "reason" => reason).increment(1);
}

/// Counts a tool call and its duration.
pub fn tool_call(tool: String, outcome: &'static str, took: Duration) {
    metrics::counter!(TOOL_CALLS, "tool" => tool.clone(), "outcome" => outcome).increment(1);
    metrics::histogram!(TOOL_SECONDS, "tool" => tool).record(took.as_secs_f64());
}

/// Counts a webhook delivery's outcome.
pub fn delivery(endpoint: &str, outcome: &'static str) {
    metrics::counter!(DELIVERIES, "endpoint" => endpoint.to_owned(), "outcome" => outcome)
        .increment(1);
}

/// One transfer through sluice's data plane, counted in
/// [`TRANSFERS_OPEN`] while it lives.
#[derive(Debug)]
pub struct Open(());

impl Open {
    /// Counts a transfer begun.
    pub fn begin() -> Self {
        metrics::gauge!(TRANSFERS_OPEN).increment(1.0);
        Open(())
    }
}

impl Drop for Open {
    fn drop(&mut self) {
        metrics::gauge!(TRANSFERS_OPEN).decrement(1.0);
    }
}
