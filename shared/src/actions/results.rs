//! Files in an upstream's answer. A `data:` URI anywhere in it that decodes
//! to more than [`SMALL_FILE_MAX`] bytes is stored as a sluice file owned by
//! the caller and replaced by `{file_id, filename, size, sha256,
//! content_type, download, curl, handle}`: a single-use link, so files coming
//! back never pass through the model either. Smaller ones stay inline.

use serde::Serialize;
use serde_json::Value;

use crate::auth::Caller;
use crate::datauri::DataUri;
use crate::error::ApiError;
use crate::service::{DownloadTicket, MAX_FILENAME_BYTES, SMALL_FILE_MAX, Sluice};
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

/// JSON Pointer escaping of one reference token (RFC 6901).
fn escape(token: &str) -> String {
    token.replace('~', "~0").replace('/', "~1")
}

/// Pointers to every string in `value` that looks like a large data URI.
fn large_data_uris(value: &Value, at: String, out: &mut Vec<String>) {
    match value {
        Value::String(s)
            if s.get(..5).is_some_and(|p| p.eq_ignore_ascii_case("data:"))
                // base64 of more than SMALL_FILE_MAX bytes is longer than this.
                && s.len() > SMALL_FILE_MAX * 4 / 3 =>
        {
            out.push(at)
        }
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                large_data_uris(item, format!("{at}/{i}"), out);
            }
        }
        Value::Object(map) => {
            for (k, v) in map {
                large_data_uris(v, format!("{at}/{}", escape(k)), out);
            }
        }
        _ => {}
    }
}

/// Replaces the large files in `value` by links; returns how many.
pub(crate) async fn externalize(
    sluice: &Sluice,
    caller: &Caller,
    action: &str,
    value: &mut Value,
) -> Result<usize, ApiError> {
    let mut pointers = Vec::new();
    large_data_uris(value, String::new(), &mut pointers);
    let mut stored = 0;
    for pointer in pointers {
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
            .filter(|n| !n.trim().is_empty() && n.len() <= MAX_FILENAME_BYTES)
            .unwrap_or_else(|| default_name(action, &uri.mime));
        let content_type = crate::datauri::essence(&uri.mime);
        let sha256 = Sha256::of(&uri.data);
        // Never "try again": the action itself has already run.
        let ran = |e: ApiError| {
            let why = match e {
                ApiError::Internal(inner) => {
                    tracing::error!(action, error = %inner, "a file in an action result could not be stored");
                    "internal error".to_owned()
                }
                other => other.to_string(),
            };
            ApiError::Upstream(format!(
                "the action ran, but a file in its result could not be kept ({why}): check the result in the backend before running it again"
            ))
        };
        let (file, handle) = sluice
            .store_inline(
                &caller.owner,
                filename,
                uri.data,
                sha256,
                Some(content_type),
            )
            .await
            .map_err(ran)?;
        let ticket = sluice.download_ticket(&file);
        tracing::info!(action, file_id = %file.id, size = file.size, "file in an action result stored");
        *slot = serde_json::to_value(ResultFile { handle, ticket }).map_err(ApiError::internal)?;
        stored += 1;
    }
    Ok(stored)
}

/// `<action>-result.<ext>` for a file that came without a name.
fn default_name(action: &str, mime: &str) -> String {
    let ext = mime_guess::get_mime_extensions_str(mime)
        .and_then(|exts| exts.first())
        .copied()
        .unwrap_or("bin");
    format!("{action}-result.{ext}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_large_data_uris_are_found_at_escaped_pointers() {
        let big = DataUri::encode("text/plain", Some("a.txt"), &vec![b'x'; SMALL_FILE_MAX + 1]);
        let small = DataUri::encode("text/plain", None, b"hi");
        let value = serde_json::json!({
            "a/b": big,
            "list": [small, {"file": big}],
            "text": "data: is just a word here",
        });
        let mut found = Vec::new();
        large_data_uris(&value, String::new(), &mut found);
        found.sort();
        assert_eq!(found, vec!["/a~1b".to_owned(), "/list/1/file".to_owned()]);
        for p in &found {
            assert!(value.pointer(p).is_some(), "{p}");
        }
    }

    #[test]
    fn nameless_files_are_named_after_the_action() {
        assert_eq!(
            default_name("export_report", "application/pdf"),
            "export_report-result.pdf"
        );
        assert_eq!(default_name("x", "application/x-unknown"), "x-result.bin");
    }
}
