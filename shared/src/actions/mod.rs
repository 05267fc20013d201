//! Actions: backend operations with a form, run on the model's behalf, whose
//! File fields take `$uploadedFile:` handles so that the bytes never pass
//! through the model.
//!
//! The order of one call lives in the service (`service::actions`): check
//! the fields against the form and verify every handle (`fields`, no
//! I/O) → check the total size → check each stored file exists and
//! matches, with bounded concurrency → call the upstream, files streamed in
//! as data URIs or passed as single-use links (`body`, `upstream`) →
//! replace large files in the answer by links (`results`).
//!
//! This module holds the parts that need no service: the catalog, the
//! forms, the streamed body and the upstream client.

pub(crate) mod body;
mod catalog;
pub(crate) mod fields;
pub(crate) mod results;
pub(crate) mod upstream;

pub use catalog::{
    Action, AuthValue, Catalog, CatalogError, Field, FieldKind, FileDelivery, UpstreamAuth,
    loopback_host, upstream_url_allowed,
};

use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;

use body::Reads;
use upstream::Upstreams;

/// The limits on running actions (`SLUICE_ACTION_*`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ActionLimits {
    /// Reads of stored files running at once, process-wide.
    pub max_concurrent_reads: usize,
    /// How long one read may wait for its object, or for its next chunk.
    pub read_timeout: Duration,
    /// The most bytes of files one call sends inline (data-uri delivery).
    pub max_bytes: u64,
    /// The most bytes of an upstream answer read: `max_bytes`, and on
    /// Lambda at most a sixth of the function's memory, since an answer is
    /// held, parsed (a second copy) and its files decoded at once.
    pub max_answer: u64,
}

impl Default for ActionLimits {
    fn default() -> Self {
        Self {
            max_concurrent_reads: 4,
            read_timeout: Duration::from_secs(15),
            max_bytes: 64 << 20,
            max_answer: 64 << 20,
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

    /// The limits actions run within.
    pub fn limits(&self) -> ActionLimits {
        self.limits
    }

    /// How reads of stored files are bounded.
    pub(crate) fn reads(&self) -> &Reads {
        &self.reads
    }

    /// The client for every upstream.
    pub(crate) fn upstreams(&self) -> &Upstreams {
        &self.upstreams
    }
}

/// Offers every string in `value` to `swap`, in a fixed order, and puts
/// what it returns in the string's place.
pub(crate) fn replace_placeholders(value: &mut Value, swap: &mut dyn FnMut(&str) -> Option<Value>) {
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
