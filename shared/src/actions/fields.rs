//! The model's `fields`, checked against the action's form and turned into a
//! plan: the values the upstream receives, with every file occurrence
//! replaced by a placeholder, and the files themselves, each listed once.
//!
//! Nothing here touches storage. Handles are verified (signature, expiry,
//! owner) and `accept` / `max_size` checked from what the handle pins, so a
//! bad reference is refused before any read. Handles are resolved **only**
//! in fields the form declares File or FileList: the same text in a String
//! field is text.

use serde_json::{Map, Value};

use super::catalog::{Action, Field, FieldKind};
use crate::datauri::DataUri;
use crate::error::Error;
use crate::file::FileMeta;
use crate::token::HANDLE_PREFIX;

/// Verifies a handle for the caller (signature, expiry, owner): the
/// service's, passed in so that nothing here reaches past the codecs.
pub(crate) type Redeem<'a> = &'a dyn Fn(&str) -> Result<FileMeta, Error>;

/// Where a file's bytes are.
#[derive(Debug, Clone)]
pub(crate) enum Source {
    /// In the object store, as a handle pinned it.
    Stored(FileMeta),
    /// Given inline as a `data:` URI (small: it came through the model).
    Inline(DataUri),
}

/// One distinct file of a call.
#[derive(Debug, Clone)]
pub(crate) struct PlannedFile {
    /// The first field it was given in, for messages (`extras[1]`).
    pub field: String,
    /// Where its bytes are.
    pub source: Source,
}

impl PlannedFile {
    /// Its size in bytes.
    pub fn size(&self) -> u64 {
        match &self.source {
            Source::Stored(meta) => meta.size,
            Source::Inline(uri) => uri.data.len() as u64,
        }
    }
}

/// The checked fields of one call.
#[derive(Debug)]
pub(crate) struct Plan {
    /// The values, each file occurrence a placeholder string.
    pub values: Map<String, Value>,
    /// The distinct files; a placeholder names one by index.
    pub files: Vec<PlannedFile>,
    /// The placeholder prefix: random per call, so no text a model passes
    /// can be mistaken for one.
    pub nonce: String,
}

impl Plan {
    /// The placeholder of file `index`.
    pub fn placeholder(&self, index: usize) -> String {
        format!("{}{index}", self.nonce)
    }

    /// The file a placeholder string names, if it is one.
    pub fn file_of(&self, s: &str) -> Option<usize> {
        s.strip_prefix(&self.nonce)?
            .parse()
            .ok()
            .filter(|i| *i < self.files.len())
    }

    /// Bytes of all distinct files together.
    pub fn total_bytes(&self) -> u64 {
        self.files.iter().map(PlannedFile::size).sum()
    }
}

/// Checks `fields` against `action`'s form, verifying each handle with `redeem`.
pub(crate) fn plan(redeem: Redeem<'_>, action: &Action, fields: Value) -> Result<Plan, Error> {
    let given = match fields {
        Value::Object(map) => map,
        Value::Null => Map::new(),
        _ => {
            return Err(Error::Invalid(
                "fields must be an object of field names to values: call list_actions to see the form"
                    .into(),
            ));
        }
    };
    let mut plan = Plan {
        values: Map::new(),
        files: Vec::new(),
        nonce: format!("\u{1}sluice-file-{}-", crate::keys::random_id::<12>()),
    };
    for name in given.keys() {
        if action.field(name).is_none() {
            let known: Vec<&str> = action.fields.iter().map(|f| f.name.as_str()).collect();
            return Err(Error::field(
                name,
                format!(
                    "action {} has no such field; its fields are: {}",
                    action.name,
                    if known.is_empty() {
                        "none".to_owned()
                    } else {
                        known.join(", ")
                    }
                ),
            ));
        }
    }
    let mut given = given;
    for field in &action.fields {
        let value = given.remove(&field.name).unwrap_or(Value::Null);
        if value.is_null() {
            if field.required {
                return Err(Error::field(&field.name, "is required"));
            }
            continue;
        }
        let value = match &field.kind {
            FieldKind::File => plan.file(redeem, field, &field.name, value)?,
            FieldKind::FileList => {
                let Value::Array(items) = value else {
                    return Err(Error::field(
                        &field.name,
                        "takes an array of files (handles or data: URIs), even for one file",
                    ));
                };
                let mut out = Vec::with_capacity(items.len());
                for (i, item) in items.into_iter().enumerate() {
                    let label = format!("{}[{i}]", field.name);
                    out.push(plan.file(redeem, field, &label, item)?);
                }
                Value::Array(out)
            }
            kind => check_scalar(field, kind, value)?,
        };
        plan.values.insert(field.name.clone(), value);
    }
    Ok(plan)
}

impl Plan {
    /// Resolves one file reference given in `label` of `field`.
    fn file(
        &mut self,
        redeem: Redeem<'_>,
        field: &Field,
        label: &str,
        value: Value,
    ) -> Result<Value, Error> {
        let Value::String(text) = value else {
            return Err(Error::field(
                label,
                format!("takes {}", super::schema::FILE_FIELD_HELP),
            ));
        };
        let text = text.trim();
        let source = if text.starts_with(HANDLE_PREFIX) {
            let meta = redeem(text).map_err(|e| Error::field(label, handle_refusal(&e)))?;
            Source::Stored(meta)
        } else if text
            .get(..5)
            .is_some_and(|p| p.eq_ignore_ascii_case("data:"))
        {
            let uri = DataUri::parse(text).map_err(|e| {
                Error::field(
                    label,
                    format!("{e}: send data:<type>;name=<name>;base64,<data>, or upload the file with request_upload and pass its handle"),
                )
            })?;
            Source::Inline(uri)
        } else {
            let hint = if crate::file::FileId::parse(text).is_some() {
                "this looks like a file id: pass the file's handle (the \"$uploadedFile:…\" value request_upload returned)"
            } else {
                "this is plain text, not a file: upload the file with request_upload, run its curl command, and pass the \"$uploadedFile:…\" handle it returned"
            };
            return Err(Error::field(label, hint));
        };
        let (name, content_type, size) = match &source {
            Source::Stored(m) => (m.filename.as_str(), m.content_type.as_str(), m.size),
            Source::Inline(u) => (
                u.name.as_deref().unwrap_or("the data: URI"),
                u.mime.as_str(),
                u.data.len() as u64,
            ),
        };
        if !field.accepts(content_type) {
            return Err(Error::field(
                label,
                format!(
                    "{name} is {content_type}, but this field accepts only {}",
                    field.accept.join(", ")
                ),
            ));
        }
        if let Some(max) = field.max_size
            && size > max
        {
            return Err(Error::field(
                label,
                format!("{name} is {size} bytes, over this field's limit of {max} bytes"),
            ));
        }
        // The same stored file in two places is checked (and linked) once.
        let existing = match &source {
            Source::Stored(meta) => self
                .files
                .iter()
                .position(|f| matches!(&f.source, Source::Stored(m) if m.id == meta.id)),
            Source::Inline(_) => None,
        };
        let index = existing.unwrap_or_else(|| {
            self.files.push(PlannedFile {
                field: label.to_owned(),
                source,
            });
            self.files.len() - 1
        });
        Ok(Value::String(self.placeholder(index)))
    }
}

/// Why a handle in a field was refused, with what the model does next.
fn handle_refusal(e: &Error) -> String {
    match e {
        Error::HandleExpired => {
            format!("{e}: request a new upload (request_upload) and upload the file to the new URL")
        }
        other => other.to_string(),
    }
}

fn check_scalar(field: &Field, kind: &FieldKind, value: Value) -> Result<Value, Error> {
    let ok = match (kind, &value) {
        (FieldKind::String, Value::String(_))
        | (FieldKind::Number, Value::Number(_))
        | (FieldKind::Boolean, Value::Bool(_))
        | (FieldKind::Json, _) => true,
        (FieldKind::Enum(values), Value::String(s)) => {
            if !values.contains(s) {
                return Err(Error::field(
                    &field.name,
                    format!("{s:?} is not one of: {}", values.join(", ")),
                ));
            }
            true
        }
        (FieldKind::Date, Value::String(s)) => {
            if !is_date(s) {
                return Err(Error::field(
                    &field.name,
                    format!("{s:?} is not a date (YYYY-MM-DD) or date-time (RFC 3339)"),
                ));
            }
            true
        }
        _ => false,
    };
    if !ok {
        let wanted = match kind {
            FieldKind::String | FieldKind::Enum(_) | FieldKind::Date => "a string",
            FieldKind::Number => "a number",
            FieldKind::Boolean => "true or false",
            _ => "a value",
        };
        return Err(Error::field(&field.name, format!("takes {wanted}")));
    }
    Ok(value)
}

fn is_date(s: &str) -> bool {
    use time::format_description::well_known::Rfc3339;
    let date = time::macros::format_description!("[year]-[month]-[day]");
    time::Date::parse(s, date).is_ok() || time::OffsetDateTime::parse(s, &Rfc3339).is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_and_date_times_are_told_from_text() {
        assert!(is_date("2026-11-30"));
        assert!(is_date("2026-11-30T12:00:00Z"));
        assert!(is_date("2026-11-30T12:00:00.5+01:00"));
        assert!(!is_date("30/11/2026"));
        assert!(!is_date("2026-13-01"));
    }
}
