//! An action's answer, made fit for the model: each data URI in it that
//! decodes to more than [`SMALL_FILE_MAX`] bytes stored for the caller and
//! replaced by its handle and a single-use download link.

use serde::Serialize;
use serde_json::Value;

use super::Actions;
use crate::actions::results::{default_name, large_files};
use crate::auth::Caller;
use crate::datauri::DataUri;
use crate::error::Error;
use crate::file::SMALL_FILE_MAX;
use crate::service::downloads::DownloadTicket;
use crate::service::uploads::issue::Counted;
use crate::sha::Sha256;

/// A file from a result, as the model receives it.
#[derive(Debug, Serialize)]
pub struct ResultFile {
    /// `$uploadedFile:…`: passes the file on to another action.
    pub handle: String,
    /// The download link and what it pins.
    #[serde(flatten)]
    pub ticket: DownloadTicket,
}

impl Actions {
    /// Replaces each data URI in `value` that decodes to more than
    /// [`SMALL_FILE_MAX`] bytes by a file stored for `caller` and its
    /// download link; returns how many.
    pub(super) async fn externalize(
        &self,
        caller: &Caller,
        action: &str,
        value: &mut Value,
    ) -> Result<usize, Error> {
        let mut stored = 0;
        for pointer in large_files(value) {
            let Some(slot) = value.pointer_mut(&pointer) else {
                continue;
            };
            let Some(Ok(uri)) = slot.as_str().map(DataUri::parse) else {
                continue;
            };
            if uri.data.len() <= SMALL_FILE_MAX {
                continue;
            }
            // The upstream has run: nothing it named may fail the call now, so
            // an unusable name or type falls back to a plain one.
            let filename = uri
                .name
                .clone()
                .filter(|n| {
                    !n.trim().is_empty()
                        && n.len() <= crate::service::uploads::issue::MAX_FILENAME_BYTES
                })
                .unwrap_or_else(|| default_name(action, &uri.mime));
            let content_type = crate::datauri::essence(&uri.mime);
            let sha256 = Sha256::of(&uri.data);
            // Outside the caller's rate and caps: the action has run. A file
            // that cannot be kept is named in its place, and the rest of the
            // result still comes back (never "try again": the action ran).
            let kept = self
                .calls
                .uploads
                .store_inline(
                    &caller.owner,
                    filename,
                    uri.data,
                    sha256,
                    Some(content_type),
                    Counted::No,
                )
                .await;
            let (file, handle) = match kept {
                Ok(kept) => kept,
                Err(e) => {
                    let why = match e {
                        Error::Internal(inner) => {
                            tracing::error!(action, error = %inner, "a file in an action result could not be stored");
                            "internal error".to_owned()
                        }
                        other => other.to_string(),
                    };
                    *slot = serde_json::json!({
                        "error": format!(
                            "the action ran, but this file of its result could not be kept ({why}): \
                             check the result in the backend before running it again"
                        ),
                    });
                    continue;
                }
            };
            let ticket = self.calls.downloads.download_ticket(&file);
            tracing::info!(action, file_id = %file.id, size = file.size, "file in an action result stored");
            *slot = serde_json::to_value(ResultFile { handle, ticket }).map_err(Error::internal)?;
            stored += 1;
        }
        Ok(stored)
    }
}
