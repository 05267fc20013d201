//! What each file tool's answer says first: the one-line summary beside its
//! `structuredContent`, written for the model (what happened, and what to
//! do next).

use sluice::service::imports::{ImportState, ImportTicket};
use sluice::service::pages::{UploadState, UploadStatus};

/// What `get_upload_status` says first: where the person's upload stands,
/// and what to ask them or call next.
pub(crate) fn upload_status(status: &UploadStatus) -> String {
    match (&status.state, &status.filename, status.size) {
        (UploadState::Ready, _, _) if status.files.is_some() => format!(
            "Uploaded {} file(s): use each one's handle (`files`).",
            status.files.as_ref().map_or(0, Vec::len)
        ),
        (UploadState::Ready, Some(name), Some(size)) => {
            format!("Uploaded: {name} ({size} bytes). Use the handle.")
        }
        (UploadState::Scanning, _, _) => "Uploaded; being scanned for malware before it can be used. Call again (wait_seconds waits for it).".to_owned(),
        (UploadState::Rejected, _, _) => format!(
            "The file was rejected by its {} ({}); it was deleted. Do not use it.",
            sluice::error::rejecter(status.reason.as_deref().unwrap_or_default()),
            status.reason.as_deref().unwrap_or("refused")
        ),
        (UploadState::Pending, _, _) => match (status.received, status.size) {
            (Some(received), Some(size)) => format!(
                "Uploading: {received} of {size} bytes so far. Ask the person whether the page said it was done; call again after they answer."
            ),
            _ => "Not uploaded yet. Ask the person whether the page said it was done; call again after they answer.".to_owned(),
        },
        _ => "The page expired before a file arrived. Call request_browser_upload for a new one.".to_owned(),
    }
}

/// What an import's answer says first.
pub(crate) fn import(ticket: &ImportTicket) -> String {
    match ticket.state {
        ImportState::Ready => format!(
            "Imported {} ({} bytes) from {}. Pass `handle` for the file.",
            shown(ticket.filename.as_deref().unwrap_or("the file")),
            ticket.size.unwrap_or(0),
            ticket.source
        ),
        ImportState::Pending => format!(
            "Importing from {}: {} bytes so far. Call get_import_status with this file_id (wait_seconds up to 45).",
            ticket.source,
            ticket.received.unwrap_or(0)
        ),
        ImportState::Scanning => format!(
            "Imported from {}; being scanned for malware. Call get_import_status with this file_id (wait_seconds up to 45) until it is ready.",
            ticket.source
        ),
        ImportState::Rejected => format!(
            "Not imported: {}",
            ticket.reason.as_deref().unwrap_or("the fetch failed")
        ),
    }
}

/// A file's name as a summary shows it: whole up to 64 characters, longer
/// ones cut in the middle (the line that moves the file names it whole), so
/// a long name does not take the model's text twice.
pub(crate) fn shown(name: &str) -> String {
    let chars: Vec<char> = name.chars().collect();
    if chars.len() <= 64 {
        return name.to_owned();
    }
    let head: String = chars[..40].iter().collect();
    let tail: String = chars[chars.len() - 20..].iter().collect();
    format!("{head}…{tail}")
}
