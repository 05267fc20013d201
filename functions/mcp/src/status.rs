//! A page's upload, as a status call waits on it: the file's handle once
//! the person's client has shown the page (the elicitation's end), and the
//! wait itself, which looks at the records each second and at the store
//! every few, telling progress as it goes.

use std::time::{Duration, Instant};

use rmcp::model::{ProgressNotificationParam, ProgressToken};
use rmcp::{Peer, RoleServer};
use sluice::Error;
use sluice::service::pages::{BrowserUpload, Look, UploadState, UploadStatus};

use crate::reply::{Reply, success};
use crate::server::SluiceTools;

/// How often a waiting status call looks again.
const STATUS_POLL: Duration = Duration::from_secs(1);

/// Every how many polls a waiting status call looks at the store, not only
/// at the records.
const STORE_EVERY: u32 = 5;

impl SluiceTools {
    /// `request_browser_upload` called again after the client showed the
    /// person the page (`state`: the page it was given): the file's handle
    /// once it is there, or what it waits for.
    pub(crate) async fn after_elicitation(&self, owner: &str, state: &str) -> Reply {
        let mut page: BrowserUpload = serde_json::from_str(state).map_err(|_| {
            Error::Invalid(
                "request_state is not one this server gave: call request_browser_upload again"
                    .into(),
            )
        })?;
        let status = self
            .sluice
            .pages()
            .upload_status(owner, &page.upload_id)
            .await?;
        page.state = Some(status.state);
        page.handle = status.handle.clone();
        let summary = match (&status.state, &status.filename, status.size) {
            (UploadState::Ready, _, _) if status.files.is_some() => format!(
                "The person uploaded {} file(s). Call get_upload_status with upload_id {} for their handles.",
                status.files.as_ref().map_or(0, Vec::len),
                page.upload_id
            ),
            (UploadState::Ready, Some(name), Some(size)) => {
                format!("The person uploaded {name} ({size} bytes). Use the handle.")
            }
            (UploadState::Scanning, _, _) => format!(
                "Uploaded; being scanned for malware. Call get_upload_status with upload_id {} (wait_seconds waits for it).",
                page.upload_id
            ),
            (UploadState::Rejected, _, _) => format!(
                "The file was rejected by its {} ({}); it was deleted. Do not use it.",
                sluice::error::rejecter(status.reason.as_deref().unwrap_or_default()),
                status.reason.as_deref().unwrap_or("refused")
            ),
            (UploadState::Pending, _, _) => format!(
                "Waiting for the person to upload on the page. Call get_upload_status with upload_id {} \
                 (wait_seconds waits for it).",
                page.upload_id
            ),
            _ => {
                "The page expired before a file arrived. Call request_browser_upload for a new one."
                    .to_owned()
            }
        };
        success(summary, &page)
    }

    /// `upload_id`'s status, once it is no longer pending or `wait` is
    /// spent (at once with no wait); meanwhile, for a call with a progress
    /// token, a progress notification each time more has arrived.
    pub(crate) async fn wait_for_upload(
        &self,
        owner: &str,
        upload_id: &str,
        wait: Duration,
        token: Option<ProgressToken>,
        peer: &Peer<RoleServer>,
    ) -> Result<UploadStatus, Error> {
        let deadline = Instant::now() + wait;
        let mut told = None;
        let mut polls = 0u32;
        loop {
            // One read of the records a poll; the store (a HEAD and a list
            // of parts on S3) every STORE_EVERY polls, and first and last.
            let last = deadline.saturating_duration_since(Instant::now()) <= STATUS_POLL;
            let look = if polls.is_multiple_of(STORE_EVERY) || last {
                Look::Store
            } else {
                Look::Records
            };
            polls += 1;
            let status = self
                .sluice
                .pages()
                .upload_status_by(owner, upload_id, look)
                .await?;
            // A file held for its malware scan is waited on as well.
            if !matches!(status.state, UploadState::Pending | UploadState::Scanning) {
                return Ok(status);
            }
            if let (Some(token), Some(received), Some(total)) =
                (&token, status.received, status.size)
                && told < Some(received)
            {
                told = Some(received);
                let note = ProgressNotificationParam::new(token.clone(), received as f64)
                    .with_total(total as f64)
                    .with_message(format!("{received} of {total} bytes uploaded"));
                // A client gone is no reason to stop answering.
                let _ = peer.notify_progress(note).await;
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Ok(status);
            }
            tokio::time::sleep(left.min(STATUS_POLL)).await;
        }
    }
}
