//! Running an action for a caller, in this order: find the action → verify
//! every handle in its fields against its record (a bounded number, a few
//! at once) → check the fields against its form → check
//! the bytes the call sends inline → check each stored file is there and
//! matches its pin, a bounded number at once → call the upstream, with the
//! files streamed in as data URIs (last chunk held back until verified) or
//! passed as single-use links → replace large files in the answer by links
//! to files stored for the caller.

mod results;

pub use results::ResultFile;

use std::collections::HashMap;
use std::sync::Arc;

use futures_util::StreamExt as _;
use serde_json::{Map, Value, json};

use super::batches::Batches;
use super::downloads::Downloads;
use super::files::Files;
use super::files::stored::Stored;
use super::imports::{HostFile, Imports};
use super::limits::Limits;
use super::uploads::Uploads;
use crate::actions::body::{self, Failure};
use crate::actions::fields::{self, MAX_FILE_OCCURRENCES, Plan, Source};
use crate::actions::upstream::Payload;
use crate::actions::{FileDelivery, replace_placeholders};
use crate::auth::{Caller, Scope};
use crate::error::{Error, FieldError};
use crate::file::FileMeta;
use crate::rate::Kind;
use crate::service::uploads::issue::Counted;
use crate::sha::Sha256;
use crate::token::HANDLE_PREFIX;

/// Handles verified at once (each a read of its record).
const HANDLES_AT_ONCE: usize = 8;

/// What an action returned.
#[derive(Debug)]
pub struct ActionOutcome {
    /// The upstream's answer, as a JSON object, large files replaced by links.
    pub result: Map<String, Value>,
    /// How many files of the answer were replaced by links.
    pub files_linked: usize,
}

/// What an action's run calls: its files found through `files` and
/// `batches` (and fetched by `imports` when a host hands one over), passed
/// on by `downloads`, its results stored by `uploads`, within `limits`.
#[derive(Debug, Clone)]
pub struct ActionCalls {
    #[allow(missing_docs)]
    pub uploads: Uploads,
    #[allow(missing_docs)]
    pub downloads: Downloads,
    #[allow(missing_docs)]
    pub batches: Batches,
    #[allow(missing_docs)]
    pub imports: Imports,
    #[allow(missing_docs)]
    pub files: Files,
    #[allow(missing_docs)]
    pub limits: Limits,
}

/// Actions whose File fields take handles, run for a caller.
#[derive(Clone, Debug)]
pub struct Actions {
    store: Arc<dyn crate::store::ObjectStore>,
    catalog: Arc<crate::actions::Actions>,
    calls: ActionCalls,
}

impl Actions {
    /// The actions of `catalog`, over the components their runs call.
    pub fn new(
        backends: &super::backends::Backends,
        catalog: crate::actions::Actions,
        calls: ActionCalls,
    ) -> Self {
        Self {
            store: backends.store.clone(),
            catalog: Arc::new(catalog),
            calls,
        }
    }

    /// The configured actions (none: the action tools are not listed).
    pub fn configured(&self) -> &crate::actions::Actions {
        &self.catalog
    }
}

impl Actions {
    /// Runs action `name` with `fields` for `caller`.
    pub async fn execute_action(
        &self,
        caller: &Caller,
        name: &str,
        fields: Value,
    ) -> Result<ActionOutcome, Error> {
        let actions = self.configured();
        let action = actions
            .catalog()
            .get(name)
            .ok_or_else(|| Error::UnknownAction(name.to_owned()))?;
        // Admission, in its one order: scope → the whole form → rate →
        // only then a side effect (a file a host hands over is fetched).
        // The form is checked before anything is fetched or spent; a file
        // to fetch needs `files:write` as `import_file` does.
        fields::check_form(action, &fields)?;
        let handed = HostFile::handed_in(action, &fields);
        if !handed.is_empty() && !caller.has(Scope::FilesWrite) {
            return Err(Error::NotGranted(Scope::FilesWrite));
        }
        self.calls.limits.check_rate(Kind::Actions, &caller.owner)?;
        let fields = self.host_files(caller, &handed, fields).await?;
        let fields = self.expand_batches(caller, action, fields).await?;
        let handles = self.redeem_handles(caller, &fields).await?;
        let redeem = |handle: &str| match handles.get(handle) {
            Some(Ok(file)) => Ok(file.clone()),
            Some(Err(why)) => Err(why.clone()),
            None => Err(FieldError::TooManyFiles(MAX_FILE_OCCURRENCES as u32)),
        };
        let plan = fields::plan(&redeem, action, fields)?;
        let limits = actions.limits();
        self.sendable(action, &plan, &limits)?;
        self.check_stored(&plan).await?;
        let max_answer = usize::try_from(limits.max_answer).unwrap_or(usize::MAX);
        let payload = self.payload(caller, action, &plan).await?;
        tracing::info!(action = %action.name, files = plan.files.len(), "calling an action's upstream");
        let mut result = actions
            .upstreams()
            .call(action, payload, max_answer)
            .await?;
        let files_linked = self.externalize(caller, &action.name, &mut result).await?;
        let Value::Object(result) = result else {
            return Err(Error::bug("an upstream answer is made an object"));
        };
        Ok(ActionOutcome {
            result,
            files_linked,
        })
    }

    /// Whether `plan`'s files may be sent at all: no inline bytes while
    /// files are scanned (they would reach the upstream unscanned, or, by
    /// link, as a link that answers nothing until their scan ends), and
    /// data URIs within the bytes an action may send.
    fn sendable(
        &self,
        action: &crate::actions::Action,
        plan: &fields::Plan,
        limits: &crate::actions::ActionLimits,
    ) -> Result<(), Error> {
        if self.calls.files.gate().scanning()
            && let Some(inline) = plan
                .files
                .iter()
                .find(|f| matches!(f.source, Source::Inline(_)))
        {
            return Err(Error::field(&inline.field, FieldError::InlineWhileScanning));
        }
        if action.file_delivery == FileDelivery::DataUri && plan.total_bytes() > limits.max_bytes {
            return Err(Error::Invalid(format!(
                "the files of this call are {} bytes together, over the limit of {} bytes an action may send: send fewer or smaller files",
                plan.total_bytes(),
                limits.max_bytes
            )));
        }
        Ok(())
    }

    /// What the upstream is sent: the form with each file as a data URI,
    /// streamed from the store, or as a single-use link.
    async fn payload(
        &self,
        caller: &Caller,
        action: &crate::actions::Action,
        plan: &fields::Plan,
    ) -> Result<Payload, Error> {
        Ok(match action.file_delivery {
            FileDelivery::DataUri => {
                let failure = Failure::default();
                let body = body::build(
                    self.store.clone(),
                    self.configured().reads(),
                    &failure,
                    &action.name,
                    &caller.sub,
                    plan,
                )?;
                Payload::Stream {
                    length: body.length,
                    stream: body.stream,
                    failure,
                }
            }
            FileDelivery::Link => {
                let values = self.link_files(caller, plan).await?;
                Payload::Json(
                    serde_json::to_vec(&json!({
                        "action": action.name,
                        "user": caller.sub,
                        "fields": values,
                    }))
                    .map_err(Error::internal)?,
                )
            }
        })
    }

    /// File fields a host filled with a file the person attached
    /// (`{download_url, file_id, …}`, the shape a tool's
    /// `_meta["openai/fileParams"]` asks for): each imported through the
    /// import guard, as `import_file` would, and replaced by its handle, so
    /// the file reaches the action without passing the model or its sandbox.
    async fn host_files(
        &self,
        caller: &Caller,
        handed: &[(String, Result<HostFile, Error>)],
        mut fields: Value,
    ) -> Result<Value, Error> {
        // Every one well-formed before the first is fetched.
        let mut files = Vec::with_capacity(handed.len());
        for (field, file) in handed {
            match file {
                Ok(file) => files.push((field, file.clone())),
                Err(e) => return Err(Error::Invalid(format!("{field}: {e}"))),
            }
        }
        let Value::Object(map) = &mut fields else {
            return Ok(fields);
        };
        for (field, file) in files {
            let handle = self
                .calls
                .imports
                .import_handed(&caller.owner, file)
                .await
                .map_err(|e| Error::Invalid(format!("{field}: {e}")))?;
            map.insert(field.clone(), Value::String(handle));
        }
        Ok(fields)
    }

    /// `fields` with each batch handle (`$uploadedFiles:…`) given to a
    /// FileList field, alone or among its items, replaced by the handles of
    /// the batch's files, in order (the same bounds then hold as for a list
    /// of handles). A batch handle elsewhere is left as it is, and refused
    /// as not a file by the form's check.
    async fn expand_batches(
        &self,
        caller: &Caller,
        action: &crate::actions::Action,
        mut fields: Value,
    ) -> Result<Value, Error> {
        let Some(given) = fields.as_object_mut() else {
            return Ok(fields);
        };
        for field in &action.fields {
            if field.kind != crate::actions::FieldKind::FileList {
                continue;
            }
            let Some(value) = given.get_mut(&field.name) else {
                continue;
            };
            let items = match value {
                Value::String(s) if super::batches::is_batch_handle(s) => {
                    vec![Value::String(s.clone())]
                }
                Value::Array(items)
                    if items
                        .iter()
                        .any(|i| i.as_str().is_some_and(super::batches::is_batch_handle)) =>
                {
                    std::mem::take(items)
                }
                _ => continue,
            };
            // Counted first, each batch read once: refused before a single
            // handle is made for more files than an action takes.
            let cap = usize::try_from(MAX_FILE_OCCURRENCES).unwrap_or(usize::MAX);
            let named: Vec<&str> = items.iter().map(|i| i.as_str().unwrap_or("")).collect();
            let batches = self
                .calls
                .batches
                .batches_named(caller, &named, cap)
                .await
                .map_err(|e| Error::field(&field.name, FieldError::of_handle(&e)))?
                .map_err(|_| {
                    Error::field(
                        &field.name,
                        FieldError::TooManyFiles(MAX_FILE_OCCURRENCES as u32),
                    )
                })?;
            let mut out = Vec::with_capacity(items.len());
            for item in items {
                match item.as_str().map(str::trim).and_then(|s| batches.get(s)) {
                    Some(batch) => out.extend(
                        self.calls
                            .batches
                            .handles_in(batch)
                            .into_iter()
                            .map(Value::String),
                    ),
                    None => out.push(item),
                }
            }
            *value = Value::Array(out);
        }
        Ok(fields)
    }

    /// Verifies the handles among `fields`' values (top-level strings and
    /// the strings of top-level arrays), the first [`MAX_FILE_OCCURRENCES`]
    /// distinct ones, a few at once: each file, or why it is refused. A
    /// record store out of reach fails the call (503), as a refusal of the
    /// handle would mislead.
    async fn redeem_handles(
        &self,
        caller: &Caller,
        fields: &Value,
    ) -> Result<HashMap<String, Result<FileMeta, FieldError>>, Error> {
        let strings = fields
            .as_object()
            .into_iter()
            .flat_map(|m| m.values())
            .flat_map(|v| match v {
                Value::Array(items) => items.iter().collect::<Vec<_>>(),
                one => vec![one],
            })
            .filter_map(Value::as_str)
            .map(str::trim)
            .filter(|s| s.starts_with(HANDLE_PREFIX));
        let mut distinct: Vec<&str> = Vec::new();
        for s in strings {
            if !distinct.contains(&s) {
                distinct.push(s);
            }
        }
        distinct.truncate(usize::try_from(MAX_FILE_OCCURRENCES).unwrap_or(usize::MAX));
        let distinct: Vec<String> = distinct.into_iter().map(str::to_owned).collect();
        let found: Vec<(String, Result<FileMeta, Error>)> = futures_util::stream::iter(distinct)
            .map(|h: String| async move {
                let found = self.calls.files.redeem_handle(caller, &h).await;
                (h, found)
            })
            .buffer_unordered(HANDLES_AT_ONCE)
            .collect()
            .await;
        found
            .into_iter()
            .map(|(h, r)| match r {
                Ok(file) => Ok((h, Ok(file))),
                Err(
                    e @ (Error::StoreUnavailable | Error::LedgerUnavailable | Error::Internal(_)),
                ) => Err(e),
                Err(e) => Ok((h, Err(FieldError::of_handle(&e)))),
            })
            .collect()
    }

    /// Checks that each stored file of `plan` is there and matches what its
    /// handle pins, a bounded number at once; the first failure cancels the rest.
    async fn check_stored(&self, plan: &Plan) -> Result<(), Error> {
        let checks = plan.files.iter().filter_map(|f| match &f.source {
            Source::Stored(meta) => Some((f.field.clone(), meta.clone())),
            Source::Inline(_) => None,
        });
        // All at once here: the read slots bound how many run.
        let checks = checks.map(|(field, meta)| async move {
            self.configured()
                .reads()
                .run(&field, async {
                    match self.calls.files.stored(&meta).await? {
                        Stored::Ready(_) => Ok(()),
                        Stored::Missing => Err(Error::field(
                            &field,
                            FieldError::NotUploaded(meta.filename.clone()),
                        )),
                        Stored::Mismatch => Err(Error::field(&field, FieldError::StoredMismatch)),
                        Stored::Verifying => Err(Error::field(
                            &field,
                            FieldError::Verifying(meta.filename.clone()),
                        )),
                        Stored::Scanning => Err(Error::field(
                            &field,
                            FieldError::Scanning(meta.filename.clone()),
                        )),
                        Stored::Refused(why) => Err(Error::field(
                            &field,
                            FieldError::ScanRejected(meta.filename.clone(), why),
                        )),
                    }
                })
                .await
        });
        futures_util::future::try_join_all(checks).await.map(drop)
    }

    /// The fields with each file as `{url, size, sha256, name, content_type,
    /// expires_at}`. Every occurrence gets its own single-use link, so an
    /// upstream can fetch each one; inline files are stored first, so the
    /// upstream always receives one shape.
    async fn link_files(&self, caller: &Caller, plan: &Plan) -> Result<Value, Error> {
        let mut values = Value::Object(plan.values.clone());
        let mut order = Vec::new();
        replace_placeholders(&mut values, &mut |s| {
            order.extend(plan.file_of(s));
            None
        });
        let mut stored: Vec<Option<FileMeta>> = vec![None; plan.files.len()];
        let mut links = std::collections::VecDeque::with_capacity(order.len());
        for index in order {
            let meta = match (&plan.files[index].source, &stored[index]) {
                (Source::Stored(meta), _) | (Source::Inline(_), Some(meta)) => meta.clone(),
                (Source::Inline(uri), None) => {
                    let name = uri.name.clone().unwrap_or_else(|| "file".to_owned());
                    let (meta, _) = self
                        .calls
                        .uploads
                        .store_inline(
                            &caller.owner,
                            name,
                            uri.data.clone(),
                            Sha256::of(&uri.data),
                            Some(uri.mime.clone()),
                            Counted::Yes,
                        )
                        .await?;
                    stored[index] = Some(meta.clone());
                    meta
                }
            };
            // Stored files were checked by `check_stored`, inline ones just
            // stored: no second request to the store. Each link is egress
            // the upstream may fetch: taken from the owner's allowance.
            self.calls.limits.charge_download(&meta).await?;
            let ticket = self.calls.downloads.download_ticket(&meta);
            links.push_back(json!({
                "url": ticket.download.url,
                "size": ticket.size,
                "sha256": ticket.sha256,
                "name": ticket.filename,
                "content_type": ticket.content_type,
                "expires_at": ticket.download.expires_at,
            }));
        }
        replace_placeholders(&mut values, &mut |s| {
            plan.file_of(s).and_then(|_| links.pop_front())
        });
        Ok(values)
    }
}
