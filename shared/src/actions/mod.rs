//! Actions: backend operations with a form, run on the model's behalf, whose
//! File fields take `$uploadedFile:` handles so that the bytes never pass
//! through the model.
//!
//! The order of one call lives in [`Sluice::execute_action`]:
//! check the fields against the form and verify every handle
//! ([`fields`], no I/O) → check the total size → check each stored file
//! exists and matches, with bounded concurrency → call the upstream, files
//! streamed in as data URIs or passed as single-use links ([`body`],
//! [`upstream`]) → replace large files in the answer by links ([`results`]).

mod body;
mod catalog;
mod fields;
mod results;
mod schema;
mod upstream;

pub use catalog::{
    Action, AuthValue, Catalog, CatalogError, Field, FieldKind, FileDelivery, UpstreamAuth,
    upstream_url_allowed,
};
pub use results::ResultFile;
pub use schema::{FILE_FIELD_HELP, input_schema};

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Map, Value, json};

use crate::auth::Caller;
use crate::error::ApiError;
use crate::service::Sluice;
use body::{Failure, Reads};
use fields::{Plan, Source, field_error};
use upstream::{Payload, Upstreams};

/// The limits on running actions (`SLUICE_ACTION_*`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ActionLimits {
    /// Reads of stored files running at once, process-wide.
    pub max_concurrent_reads: usize,
    /// How long one read may wait for its object, or for its next chunk.
    pub read_timeout: Duration,
    /// The most bytes of files one call sends inline (data-uri delivery);
    /// also the most bytes of an upstream answer read.
    pub max_bytes: u64,
}

impl Default for ActionLimits {
    fn default() -> Self {
        Self {
            max_concurrent_reads: 4,
            read_timeout: Duration::from_secs(15),
            max_bytes: 64 << 20,
        }
    }
}

/// The configured actions and what running them needs.
#[derive(Debug)]
pub struct Actions {
    catalog: Catalog,
    limits: ActionLimits,
    reads: Reads,
    upstreams: Upstreams,
}

impl Actions {
    /// `catalog`, run within `limits`.
    pub fn new(catalog: Catalog, limits: ActionLimits) -> Self {
        Self {
            reads: Reads {
                slots: Arc::new(tokio::sync::Semaphore::new(
                    limits.max_concurrent_reads.max(1),
                )),
                timeout: limits.read_timeout,
            },
            catalog,
            limits,
            upstreams: Upstreams::default(),
        }
    }

    /// The catalog.
    pub fn catalog(&self) -> &Catalog {
        &self.catalog
    }
}

/// What an action returned.
#[derive(Debug)]
pub struct ActionOutcome {
    /// The upstream's answer, as a JSON object, large files replaced by links.
    pub result: Map<String, Value>,
    /// How many files of the answer were replaced by links.
    pub files_linked: usize,
}

impl Sluice {
    /// Runs action `name` with `fields` for `caller`.
    pub async fn execute_action(
        &self,
        caller: &Caller,
        name: &str,
        fields: Value,
    ) -> Result<ActionOutcome, ApiError> {
        let actions = self.actions();
        let action = actions.catalog.get(name).ok_or_else(|| {
            ApiError::BadRequest(format!(
                "there is no action named {name:?}: call list_actions to see the actions and their fields"
            ))
        })?;
        let plan = fields::plan(self, caller, action, fields)?;
        let limits = actions.limits;
        if action.file_delivery == FileDelivery::DataUri && plan.total_bytes() > limits.max_bytes {
            return Err(ApiError::BadRequest(format!(
                "the files of this call are {} bytes together, over the limit of {} bytes an action may send: send fewer or smaller files",
                plan.total_bytes(),
                limits.max_bytes
            )));
        }
        self.check_stored(&plan).await?;
        let max_answer = usize::try_from(limits.max_bytes).unwrap_or(usize::MAX);
        let payload = match action.file_delivery {
            FileDelivery::DataUri => {
                let failure = Failure::default();
                let body = body::build(
                    self,
                    &actions.reads,
                    &failure,
                    &action.name,
                    &caller.owner,
                    &plan,
                )?;
                Payload::Stream {
                    length: body.length,
                    stream: body.stream,
                    failure,
                }
            }
            FileDelivery::Link => {
                let values = self.link_files(caller, &plan).await?;
                Payload::Json(
                    serde_json::to_vec(&json!({
                        "action": action.name,
                        "user": caller.sub,
                        "fields": values,
                    }))
                    .map_err(ApiError::internal)?,
                )
            }
        };
        tracing::info!(action = %action.name, files = plan.files.len(), "calling an action's upstream");
        let mut result = actions.upstreams.call(action, payload, max_answer).await?;
        let files_linked = results::externalize(self, caller, &action.name, &mut result).await?;
        let Value::Object(result) = result else {
            unreachable!("upstream answers are made objects");
        };
        Ok(ActionOutcome {
            result,
            files_linked,
        })
    }

    /// Checks that each stored file of `plan` is there and matches what its
    /// handle pins, a bounded number at once; the first failure cancels the rest.
    async fn check_stored(&self, plan: &Plan) -> Result<(), ApiError> {
        let checks = plan.files.iter().filter_map(|f| match &f.source {
            Source::Stored(meta) => Some((f.field.clone(), meta.clone())),
            Source::Inline(_) => None,
        });
        // All at once here: the read slots bound how many run.
        let checks = checks.map(|(field, meta)| {
            let sluice = self.clone();
            async move {
                let reads = &sluice.actions().reads;
                reads
                    .run(&field, async {
                        let info = sluice.store().head(&meta.object_key()).await?.ok_or_else(|| {
                            field_error(
                                &field,
                                format!(
                                    "{} has not been uploaded yet: run the curl command from request_upload first, then call this again",
                                    meta.filename
                                ),
                            )
                        })?;
                        if info.contradicts(&meta) {
                            tracing::warn!(file_id = %meta.id, "stored object does not match its handle");
                            return Err(field_error(
                                &field,
                                "the stored file does not match its pinned size and sha256: upload it again with request_upload",
                            ));
                        }
                        Ok(())
                    })
                    .await
            }
        });
        futures_util::future::try_join_all(checks).await.map(drop)
    }

    /// The fields with each file as `{url, size, sha256, name, content_type,
    /// expires_at}`. Every occurrence gets its own single-use link, so an
    /// upstream can fetch each one; inline files are stored first, so the
    /// upstream always receives one shape.
    async fn link_files(&self, caller: &Caller, plan: &Plan) -> Result<Value, ApiError> {
        let mut values = Value::Object(plan.values.clone());
        let mut order = Vec::new();
        replace_placeholders(&mut values, &mut |s| {
            order.extend(plan.file_of(s));
            None
        });
        let mut stored: Vec<Option<crate::file::FileMeta>> = vec![None; plan.files.len()];
        let mut links = std::collections::VecDeque::with_capacity(order.len());
        for index in order {
            let meta = match (&plan.files[index].source, &stored[index]) {
                (Source::Stored(meta), _) | (Source::Inline(_), Some(meta)) => meta.clone(),
                (Source::Inline(uri), None) => {
                    let name = uri.name.clone().unwrap_or_else(|| "file".to_owned());
                    let (meta, _) = self
                        .store_inline(
                            &caller.owner,
                            name,
                            uri.data.clone(),
                            crate::sha::Sha256::of(&uri.data),
                            Some(uri.mime.clone()),
                        )
                        .await?;
                    stored[index] = Some(meta.clone());
                    meta
                }
            };
            // Stored files were checked by `check_stored`, inline ones just
            // stored: no second request to the store.
            let ticket = self.download_ticket(&meta);
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

/// Offers every string in `value` to `swap`, in a fixed order, and puts
/// what it returns in the string's place.
fn replace_placeholders(value: &mut Value, swap: &mut dyn FnMut(&str) -> Option<Value>) {
    match value {
        Value::String(s) => {
            if let Some(new) = swap(s) {
                *value = new;
            }
        }
        Value::Array(items) => items.iter_mut().for_each(|v| replace_placeholders(v, swap)),
        Value::Object(map) => map.values_mut().for_each(|v| replace_placeholders(v, swap)),
        _ => {}
    }
}
