//! The MCP adapter of the service's answers: a tool's result is a one-line
//! summary, its JSON and its `structuredContent`; a tool's refusal is an
//! `isError` result whose text says what went wrong and what the model
//! should do next. This is the one place a [`sluice::Error`] becomes a tool
//! error.

use http::request::Parts;
use rmcp::ErrorData;
use rmcp::model::{CallToolResult, ContentBlock, Extensions};
use serde::Serialize;
use sluice::{Caller, Error};

/// A successful result: a one-line summary, the JSON for clients that do not
/// read `structuredContent`, and the `structuredContent` itself.
pub(crate) fn success<T: Serialize>(summary: String, value: &T) -> Result<CallToolResult, Error> {
    let json = serde_json::to_value(value).map_err(Error::internal)?;
    let mut result = CallToolResult::structured(json);
    result.content.insert(0, ContentBlock::text(summary));
    Ok(result)
}

/// A result the model reads in at most a kilobyte: one text block, the
/// summary and the JSON of only the fields named in `text_fields` (each
/// thing once: the summary says what the fields do not), with the whole
/// value in `structuredContent` for programs (its URL descriptors, headers).
pub(crate) fn compact<T: Serialize>(
    summary: String,
    text_fields: &[&str],
    value: &T,
) -> Result<CallToolResult, Error> {
    let json = serde_json::to_value(value).map_err(Error::internal)?;
    let mut shown = serde_json::Map::new();
    for field in text_fields {
        if let Some(v) = json.get(*field) {
            shown.insert((*field).to_owned(), v.clone());
        }
    }
    let text = format!(
        "{summary}\n{}",
        serde_json::to_string(&shown).map_err(Error::internal)?
    );
    let mut result = CallToolResult::structured(json);
    result.content = vec![ContentBlock::text(text)];
    Ok(result)
}

/// What the model does next after `e`, for the errors that call for a step
/// only a tool can name.
fn next_step(e: &Error) -> Option<&'static str> {
    Some(match e {
        Error::HandleExpired => {
            "request a new upload (request_upload) and upload the file to the new URL"
        }
        Error::NotUploaded => {
            "run the upload command (the curl line) its upload request returned first"
        }
        Error::UnknownFile(_) => "call list_files to see them, or pass the handle",
        Error::FileExpired(_) => "upload it again with request_upload",
        Error::UploadExpired => "call request_upload again and upload to the new URL",
        Error::TooLargeInline { filename, .. } if filename == "the data" => {
            "use request_upload and run its curl command instead"
        }
        Error::TooLargeInline { .. } => "use get_download_url and run its curl command instead",
        Error::UnknownAction(_) => "call list_actions to see the actions and their fields",
        _ => return None,
    })
}

/// A tool error the model can act on.
pub(crate) fn failure(error: Error) -> CallToolResult {
    let message = match &error {
        Error::Internal(e) => {
            tracing::error!(error = %e, "internal error in a tool");
            "internal error: try again later".to_owned()
        }
        other => match next_step(other) {
            Some(step) => format!("{other}: {step}"),
            None => other.to_string(),
        },
    };
    CallToolResult::error(vec![ContentBlock::text(message)])
}

/// Folds a tool body's outcome into the tool's answer: its result, or its
/// refusal as a tool error.
pub(crate) fn finish(outcome: Result<CallToolResult, Error>) -> Result<CallToolResult, ErrorData> {
    Ok(outcome.unwrap_or_else(failure))
}

/// The caller the gate authenticated (and checked the tool's scope for).
pub(crate) fn caller(parts: &Parts) -> Result<Caller, Error> {
    parts
        .extensions
        .get::<Caller>()
        .cloned()
        .ok_or_else(|| Error::bug("the gate puts the caller in every request"))
}

/// [`caller`], from a tool call's context (for tools built at run time,
/// which take no `Extension`).
pub(crate) fn caller_of(extensions: &Extensions) -> Result<Caller, Error> {
    let parts = extensions
        .get::<Parts>()
        .ok_or_else(|| Error::bug("rmcp passes the request's parts"))?;
    caller(parts)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(result: &CallToolResult) -> String {
        serde_json::to_value(&result.content).unwrap()[0]["text"]
            .as_str()
            .unwrap()
            .to_owned()
    }

    #[test]
    fn a_tool_error_says_what_to_do_next() {
        let r = failure(Error::HandleExpired);
        assert_eq!(r.is_error, Some(true));
        assert_eq!(
            text(&r),
            "this handle has expired: request a new upload (request_upload) and upload the file to the new URL"
        );
        let small = failure(Error::TooLargeInline {
            filename: "a.pdf".into(),
            size: 20_000,
            limit: 16_384,
        });
        assert!(text(&small).ends_with("use get_download_url and run its curl command instead"));
    }

    #[test]
    fn an_internal_error_hides_its_cause() {
        let r = failure(Error::internal(std::io::Error::other("/var/secret")));
        assert_eq!(text(&r), "internal error: try again later");
    }
}
