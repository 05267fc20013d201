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
use crate::error::{Error, FieldError};
use crate::file::FileMeta;
use crate::token::HANDLE_PREFIX;

/// Verifies a handle for the caller (signature, expiry, owner): the
/// service's, passed in so that nothing here reaches past the codecs.
/// Looks a handle up among those resolved before the plan (handles are
/// verified against their records, which takes a read): the file, or the
/// refusal's words.
pub(crate) type Redeem<'a> = &'a dyn Fn(&str) -> Result<FileMeta, FieldError>;

/// Where a file's bytes are.
#[derive(Debug, Clone)]
pub(crate) enum Source {
    /// In the object store, as a handle pinned it.
    Stored(FileMeta),
    /// Given inline as a `data:` URI (small: it came through the model).
    Inline(DataUri),
}

/// The most file occurrences one call may send: each occurrence is sent
/// (and, with link delivery, linked) on its own, so the bytes a call moves
/// grow with them.
pub const MAX_FILE_OCCURRENCES: u64 = 100;

/// One distinct file of a call.
#[derive(Debug, Clone)]
pub(crate) struct PlannedFile {
    /// The first field it was given in, for messages (`extras[1]`).
    pub field: String,
    /// Where its bytes are.
    pub source: Source,
    /// How many times the call names it: each is sent.
    pub occurrences: u64,
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

    /// Bytes the call sends: every occurrence of every file, since each is
    /// sent on its own.
    pub fn total_bytes(&self) -> u64 {
        self.files
            .iter()
            .map(|f| f.size().saturating_mul(f.occurrences))
            .fold(0, u64::saturating_add)
    }

    /// File occurrences in the call.
    pub fn occurrences(&self) -> u64 {
        self.files.iter().map(|f| f.occurrences).sum()
    }
}

/// The form alone, before anything is fetched, read or spent: `fields` an
/// object, no field the form lacks, every required field given, each
/// scalar of its type, a FileList a list (or a batch handle). A file's
/// value is checked by [`plan`], once what it names is known (a file a
/// host hands over is fetched first, and only after this check).
pub(crate) fn check_form(action: &Action, fields: &Value) -> Result<(), Error> {
    let empty = Map::new();
    let given = match fields {
        Value::Object(map) => map,
        Value::Null => &empty,
        _ => return Err(Error::FormNotAnObject),
    };
    no_unknown_fields(action, given)?;
    for field in &action.fields {
        let Some(value) = given.get(&field.name).filter(|v| !v.is_null()) else {
            if field.required {
                return Err(Error::field(&field.name, FieldError::Required));
            }
            continue;
        };
        match &field.kind {
            FieldKind::File => {}
            FieldKind::FileList if value.is_array() || value.is_string() => {}
            FieldKind::FileList => return Err(Error::field(&field.name, FieldError::NotAList)),
            kind => drop(check_scalar(field, kind, value.clone())?),
        }
    }
    Ok(())
}

/// Refuses the first of `given`'s names that `action`'s form lacks.
fn no_unknown_fields(action: &Action, given: &Map<String, Value>) -> Result<(), Error> {
    match given.keys().find(|name| action.field(name).is_none()) {
        Some(name) => Err(Error::field(
            name,
            FieldError::NoSuchField {
                action: action.name.clone(),
                known: action.fields.iter().map(|f| f.name.clone()).collect(),
            },
        )),
        None => Ok(()),
    }
}

/// Checks `fields` against `action`'s form, verifying each handle with `redeem`.
pub(crate) fn plan(redeem: Redeem<'_>, action: &Action, fields: Value) -> Result<Plan, Error> {
    let given = match fields {
        Value::Object(map) => map,
        Value::Null => Map::new(),
        _ => {
            return Err(Error::FormNotAnObject);
        }
    };
    let mut plan = Plan {
        values: Map::new(),
        files: Vec::new(),
        nonce: format!("\u{1}sluice-file-{}-", crate::keys::random_id::<12>()),
    };
    no_unknown_fields(action, &given)?;
    let mut given = given;
    for field in &action.fields {
        let value = given.remove(&field.name).unwrap_or(Value::Null);
        if value.is_null() {
            if field.required {
                return Err(Error::field(&field.name, FieldError::Required));
            }
            continue;
        }
        let value = match &field.kind {
            FieldKind::File => plan.file(redeem, field, &field.name, value)?,
            FieldKind::FileList => {
                let Value::Array(items) = value else {
                    return Err(Error::field(&field.name, FieldError::NotAList));
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
        let source = source_of(redeem, label, value)?;
        fits(field, label, &source)?;
        // The same stored file in two places is checked (and linked) once.
        let existing = match &source {
            Source::Stored(meta) => self
                .files
                .iter()
                .position(|f| matches!(&f.source, Source::Stored(m) if m.id == meta.id)),
            Source::Inline(_) => None,
        };
        if self.occurrences() >= MAX_FILE_OCCURRENCES {
            return Err(Error::field(
                label,
                FieldError::TooManyFiles(MAX_FILE_OCCURRENCES as u32),
            ));
        }
        let index = existing.unwrap_or_else(|| {
            self.files.push(PlannedFile {
                field: label.to_owned(),
                source,
                occurrences: 0,
            });
            self.files.len() - 1
        });
        self.files[index].occurrences += 1;
        Ok(Value::String(self.placeholder(index)))
    }
}

/// What one file reference given in `label` names: a stored file (its
/// handle redeemed), or bytes inline (a data URI).
fn source_of(redeem: Redeem<'_>, label: &str, value: Value) -> Result<Source, Error> {
    let Value::String(text) = value else {
        return Err(Error::field(label, FieldError::NotAFileValue));
    };
    let text = text.trim();
    if text.starts_with(HANDLE_PREFIX) {
        let meta = redeem(text).map_err(|why| Error::field(label, why))?;
        Ok(Source::Stored(meta))
    } else if text
        .get(..5)
        .is_some_and(|p| p.eq_ignore_ascii_case("data:"))
    {
        let uri = DataUri::parse(text)
            .map_err(|e| Error::field(label, FieldError::BadDataUri(e.to_string())))?;
        // The media type is spliced into the upstream's JSON and stored
        // with the file: only its essence, as the stored files' path
        // keeps it (an unusable one is application/octet-stream).
        Ok(Source::Inline(DataUri {
            mime: crate::datauri::essence(&uri.mime),
            ..uri
        }))
    } else {
        let why = if crate::file::FileId::parse(text).is_some() {
            FieldError::FileIdNotHandle
        } else {
            FieldError::NotAFile
        };
        Err(Error::field(label, why))
    }
}

/// Whether the file `source` names fits `field`: a type it accepts, within
/// its size.
fn fits(field: &Field, label: &str, source: &Source) -> Result<(), Error> {
    let (name, content_type, size) = match source {
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
            FieldError::WrongType {
                name: name.to_owned(),
                content_type: content_type.to_owned(),
                accepted: field.accept.clone(),
            },
        ));
    }
    if let Some(max) = field.max_size
        && size > max
    {
        return Err(Error::field(
            label,
            FieldError::TooLarge {
                name: name.to_owned(),
                size,
                max,
            },
        ));
    }
    Ok(())
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
                    FieldError::NotOneOf {
                        value: s.clone(),
                        allowed: values.clone(),
                    },
                ));
            }
            true
        }
        (FieldKind::Date, Value::String(s)) => {
            if !is_date(s) {
                return Err(Error::field(&field.name, FieldError::NotADate(s.clone())));
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
        return Err(Error::field(&field.name, FieldError::Takes(wanted)));
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
    use crate::file::FileId;
    use crate::sha::Sha256;

    fn attach(max: Option<u64>) -> Action {
        let catalog = crate::actions::Catalog::from_toml(&format!(
            "[[actions]]\nname = \"attach\"\ndescription = \"d\"\nurl = \"http://127.0.0.1:1/a\"\n\
             [[actions.fields]]\nname = \"docs\"\ntype = \"FileList\"\n{}",
            max.map(|m| format!("max_size = {m}\n")).unwrap_or_default()
        ))
        .unwrap();
        catalog.get("attach").unwrap().clone()
    }

    fn meta(size: u64) -> FileMeta {
        FileMeta {
            id: FileId::random(),
            owner: "alice".into(),
            filename: "a.pdf".into(),
            content_type: "application/pdf".into(),
            size,
            sha256: Sha256::of(b""),
        }
    }

    #[test]
    fn a_file_repeated_in_a_call_counts_once_per_occurrence() {
        let file = meta(600_000);
        let redeem = |_: &str| Ok(file.clone());
        let handles = vec![Value::from("$uploadedFile:x"); 5];
        let plan = plan(&redeem, &attach(None), serde_json::json!({"docs": handles})).unwrap();
        assert_eq!(plan.files.len(), 1, "one distinct file, read once per send");
        assert_eq!(plan.total_bytes(), 3_000_000, "five sends of 600 KB");
    }

    #[test]
    fn an_inline_files_media_type_is_normalized_before_it_is_spliced() {
        let redeem = |_: &str| Err(FieldError::NotAHandle);
        let uri = "data:text/pl\"ain\\\"}x;base64,aGk=";
        let plan = plan(&redeem, &attach(None), serde_json::json!({"docs": [uri]})).unwrap();
        let Source::Inline(inline) = &plan.files[0].source else {
            panic!("{:?}", plan.files[0].source)
        };
        assert_eq!(inline.mime, "application/octet-stream");
        let ok = "data:text/plain;charset=utf-8;base64,aGk=";
        let plan = plan_of(&redeem, ok);
        let Source::Inline(inline) = &plan.files[0].source else {
            panic!()
        };
        assert_eq!(inline.mime, "text/plain");
    }

    fn plan_of(redeem: Redeem<'_>, uri: &str) -> Plan {
        plan(redeem, &attach(None), serde_json::json!({"docs": [uri]})).unwrap()
    }

    #[test]
    fn a_call_may_not_name_files_without_bound() {
        let file = meta(1);
        let redeem = |_: &str| Ok(file.clone());
        let at_most = vec![Value::from("$uploadedFile:x"); MAX_FILE_OCCURRENCES as usize];
        assert!(plan(&redeem, &attach(None), serde_json::json!({"docs": at_most})).is_ok());
        let over = vec![Value::from("$uploadedFile:x"); MAX_FILE_OCCURRENCES as usize + 1];
        match plan(&redeem, &attach(None), serde_json::json!({"docs": over})) {
            Err(Error::Field { field, reason }) => {
                assert_eq!(field, format!("docs[{MAX_FILE_OCCURRENCES}]"));
                assert_eq!(reason, FieldError::TooManyFiles(100));
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn dates_and_date_times_are_told_from_text() {
        assert!(is_date("2026-11-30"));
        assert!(is_date("2026-11-30T12:00:00Z"));
        assert!(is_date("2026-11-30T12:00:00.5+01:00"));
        assert!(!is_date("30/11/2026"));
        assert!(!is_date("2026-13-01"));
    }
}
