//! The MCP adapter of the service's answers: a tool's result is a one-line
//! summary, its JSON and its `structuredContent`; a tool's refusal is an
//! `isError` result whose text says what went wrong and what the model
//! should do next. This is the one place a [`sluice::Error`] becomes a tool
//! error.

use http::request::Parts;
use rmcp::ErrorData;
use rmcp::handler::server::common::{AsRequestContext, FromContextPart};
use rmcp::handler::server::tool::IntoCallToolResult;
use rmcp::model::{CallToolResponse, CallToolResult, ContentBlock, Extensions};
use serde::Serialize;
use sluice::{Caller, Error, FieldError};

/// What a tool returns: its result, or the service's refusal, which goes
/// on the wire as a tool error that says what to do next ([`failure`]).
/// A tool's body is its component call and its summary: `?` on any
/// [`sluice::Error`] makes the refusal.
pub(crate) type Reply = Result<CallToolResult, Refusal>;

/// A service refusal on its way to the wire as a tool error.
#[derive(Debug)]
pub(crate) struct Refusal(Error);

impl From<Error> for Refusal {
    fn from(e: Error) -> Self {
        Self(e)
    }
}

impl IntoCallToolResult for Refusal {
    fn into_call_tool_result(self) -> Result<CallToolResponse, ErrorData> {
        Ok(failure(self.0).into())
    }
}

/// A tool's caller, as a tool takes it (`By(caller): By`): the one the
/// gate authenticated, and checked the tool's scope for, from
/// [`crate::table`].
pub(crate) struct By(pub Caller);

impl<C: AsRequestContext> FromContextPart<C> for By {
    fn from_context_part(context: &mut C) -> Result<Self, ErrorData> {
        caller_of(&context.as_request_context().extensions)
            .map(By)
            .map_err(|e| ErrorData::internal_error(e.to_string(), None))
    }
}

/// A successful result: a one-line summary, the JSON for clients that do not
/// read `structuredContent`, and the `structuredContent` itself.
pub(crate) fn success<T: Serialize>(summary: String, value: &T) -> Reply {
    let json = serde_json::to_value(value).map_err(Error::internal)?;
    let mut result = CallToolResult::structured(json);
    result.content.insert(0, ContentBlock::text(summary));
    Ok(result)
}

/// A result the model reads in at most a kilobyte: one text block, the
/// summary and the JSON of only the fields named in `text_fields` (none:
/// the summary alone; each thing once: the summary says what the fields do
/// not), with the whole value in `structuredContent` for programs (its URL
/// descriptors, headers).
pub(crate) fn compact<T: Serialize>(summary: String, text_fields: &[&str], value: &T) -> Reply {
    let json = serde_json::to_value(value).map_err(Error::internal)?;
    let mut shown = serde_json::Map::new();
    for field in text_fields {
        if let Some(v) = json.get(*field) {
            shown.insert((*field).to_owned(), v.clone());
        }
    }
    let text = if shown.is_empty() {
        summary
    } else {
        format!(
            "{summary}\n{}",
            serde_json::to_string(&shown).map_err(Error::internal)?
        )
    };
    let mut result = CallToolResult::structured(json);
    result.content = vec![ContentBlock::text(text)];
    Ok(result)
}

/// `result` for a client of a protocol before `structuredContent`
/// (2025-03-26): the structured answer, whole, as a second text block.
pub(crate) fn as_text(mut result: CallToolResult) -> CallToolResult {
    if let Some(json) = result.structured_content.take() {
        result.content.push(ContentBlock::text(json.to_string()));
    }
    result
}

/// What the model does next after `e`, for the errors that call for a step
/// only a tool can name: the service's words never name one.
fn next_step(e: &Error) -> Option<&'static str> {
    Some(match e {
        Error::HandleExpired => {
            "request a new upload (request_upload) and upload the file to the new URL"
        }
        Error::NotUploaded => "run the command its upload request returned first",
        Error::Scanning => "call list_files until its state is ready, then call this again",
        Error::UnknownFile(_) => "call list_files to see them, or pass the handle",
        Error::FileExpired(_) => "upload it again with request_upload",
        Error::UploadExpired => "call request_upload again and upload to the new URL",
        Error::TooLargeInline { filename, .. } if filename == "the data" => {
            "use request_upload and run its command instead"
        }
        Error::TooLargeInline { .. } => "use get_download_url and run its command instead",
        Error::UnknownAction(_) => "call list_actions to see the actions and their fields",
        Error::FormNotAnObject => "call list_actions to see the form",
        Error::NotAnUploadId => "pass the upload_id request_browser_upload returned",
        Error::ForeignCursor => "pass the next_cursor list_files returned",
        Error::PartsNotTheFile(_) => "if the file changed, call request_upload again instead",
        Error::NotTheFile(_) => "call request_upload again with the file's own size and sha256",
        Error::Field { reason, .. } => return field_step(reason),
        _ => return None,
    })
}

/// What the model does next after a field's refusal, where a tool says it.
fn field_step(reason: &FieldError) -> Option<&'static str> {
    Some(match reason {
        FieldError::HandleExpired => {
            "request a new upload (request_upload) and upload the file to the new URL"
        }
        FieldError::NotAHandle => {
            "pass the exact \"$uploadedFile:…\" value request_upload returned"
        }
        FieldError::NotAFileValue | FieldError::NotAFile => {
            "upload the file with request_upload, run its command, and pass the \"$uploadedFile:…\" handle it returned"
        }
        FieldError::BadDataUri(_) | FieldError::InlineWhileScanning => {
            "upload the file with request_upload (or upload_small_file) and pass its handle"
        }
        FieldError::FileIdNotHandle => {
            "pass the file's handle (the \"$uploadedFile:…\" value request_upload returned)"
        }
        FieldError::NoLongerStored(_) | FieldError::StoredMismatch => {
            "upload the file again with request_upload"
        }
        FieldError::NotUploaded(_) => {
            "run the command request_upload returned first, then call this again"
        }
        FieldError::NoSuchField { .. } => "call list_actions to see the form",
        FieldError::OtherUsersHandle
        | FieldError::NotAList
        | FieldError::WrongType { .. }
        | FieldError::TooLarge { .. }
        | FieldError::TooManyFiles(_)
        | FieldError::NotOneOf { .. }
        | FieldError::NotADate(_)
        | FieldError::Takes(_)
        | FieldError::ReadTimedOut(_)
        | FieldError::Verifying(_)
        | FieldError::ScanRejected(..)
        | FieldError::Refused(_)
        | FieldError::Required => return None,
        FieldError::Scanning(_) => "call list_files until its state is ready, then call this again",
    })
}

/// A tool error the model can act on.
pub(crate) fn failure(error: Error) -> CallToolResult {
    sluice::telemetry::refused(error.reason());
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
        assert!(text(&small).ends_with("use get_download_url and run its command instead"));
    }

    /// Every refusal of a field, as the model reads it: the service's words
    /// name no tool, and where a tool is the next step, the adapter names it.
    #[test]
    fn every_field_refusal_reads_with_its_next_step() {
        let tools = [
            "request_upload",
            "list_actions",
            "get_download_url",
            "list_files",
        ];
        for (reason, tool) in field_examples() {
            let said = reason.to_string();
            assert!(!tools.iter().any(|t| said.contains(t)), "{said}");
            let message = text(&failure(Error::field("doc", reason.clone())));
            assert!(
                message.starts_with(&format!("Field \"doc\": {said}")),
                "{message}"
            );
            match tool {
                Some(tool) => assert!(message.contains(tool), "{message}"),
                None => assert_eq!(message, format!("Field \"doc\": {said}")),
            }
        }
    }

    /// One of each field refusal, with the tool its next step names. The
    /// match below fails to compile when a variant is added without one.
    fn field_examples() -> Vec<(FieldError, Option<&'static str>)> {
        let examples = vec![
            (
                FieldError::NoSuchField {
                    action: "a".into(),
                    known: vec!["b".into()],
                },
                Some("list_actions"),
            ),
            (FieldError::Required, None),
            (FieldError::NotAList, None),
            (FieldError::NotAFileValue, Some("request_upload")),
            (FieldError::HandleExpired, Some("request_upload")),
            (FieldError::NotAHandle, Some("request_upload")),
            (FieldError::OtherUsersHandle, None),
            (
                FieldError::BadDataUri("no comma".into()),
                Some("request_upload"),
            ),
            (FieldError::FileIdNotHandle, Some("request_upload")),
            (FieldError::NotAFile, Some("request_upload")),
            (
                FieldError::WrongType {
                    name: "a.txt".into(),
                    content_type: "text/plain".into(),
                    accepted: vec!["image/*".into()],
                },
                None,
            ),
            (
                FieldError::TooLarge {
                    name: "a".into(),
                    size: 2,
                    max: 1,
                },
                None,
            ),
            (FieldError::TooManyFiles(100), None),
            (
                FieldError::NotOneOf {
                    value: "x".into(),
                    allowed: vec!["y".into()],
                },
                None,
            ),
            (FieldError::NotADate("x".into()), None),
            (FieldError::Takes("a number"), None),
            (FieldError::ReadTimedOut(15), None),
            (
                FieldError::NoLongerStored("a.pdf".into()),
                Some("request_upload"),
            ),
            (
                FieldError::NotUploaded("a.pdf".into()),
                Some("request_upload"),
            ),
            (FieldError::Verifying("a.pdf".into()), None),
            (FieldError::StoredMismatch, Some("request_upload")),
            (FieldError::Scanning("a.pdf".into()), Some("list_files")),
            (
                FieldError::ScanRejected("a.pdf".into(), "malware: X".into()),
                None,
            ),
            (FieldError::InlineWhileScanning, Some("request_upload")),
            (FieldError::Refused("no".into()), None),
        ];
        for (e, _) in &examples {
            match e {
                FieldError::NoSuchField { .. }
                | FieldError::Required
                | FieldError::NotAList
                | FieldError::NotAFileValue
                | FieldError::HandleExpired
                | FieldError::NotAHandle
                | FieldError::OtherUsersHandle
                | FieldError::BadDataUri(_)
                | FieldError::FileIdNotHandle
                | FieldError::NotAFile
                | FieldError::WrongType { .. }
                | FieldError::TooLarge { .. }
                | FieldError::TooManyFiles(_)
                | FieldError::NotOneOf { .. }
                | FieldError::NotADate(_)
                | FieldError::Takes(_)
                | FieldError::ReadTimedOut(_)
                | FieldError::NoLongerStored(_)
                | FieldError::NotUploaded(_)
                | FieldError::Verifying(_)
                | FieldError::StoredMismatch
                | FieldError::Scanning(_)
                | FieldError::ScanRejected(..)
                | FieldError::InlineWhileScanning
                | FieldError::Refused(_) => {}
            }
        }
        examples
    }

    #[test]
    fn an_internal_error_hides_its_cause() {
        let r = failure(Error::internal(std::io::Error::other("/var/secret")));
        assert_eq!(text(&r), "internal error: try again later");
    }
}
