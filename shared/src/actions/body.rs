//! The upstream request body for `data-uri` delivery, streamed: the JSON
//! `{action, user, fields}` with each file spliced in as
//! `data:<mime>;name=<name>;base64,<data>`, base64-encoded on the fly from
//! the object stream.
//!
//! Memory per call is a constant, whatever the file sizes: one chunk in
//! flight. Each file's last chunk is held back until its size and sha256
//! verify; on a mismatch (or a read that stalls past the read timeout) the
//! body ends in an error, the request is aborted, and the upstream never
//! receives a complete body. The length is known in advance, so the request
//! carries a `Content-Length` and an aborted body is a short one.

use std::io;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use bytes::Bytes;
use futures_util::{StreamExt as _, TryStreamExt as _};
use serde_json::{Value, json};
use tokio::sync::Semaphore;

use super::fields::{Plan, Source};
use crate::datauri::DataUri;
use crate::error::{Error, FieldError};
use crate::file::FileMeta;
use crate::store::{ByteStream, ObjectStore, idle_timeout, verified};

/// How reads of stored files are bounded, process-wide.
#[derive(Debug, Clone)]
pub(crate) struct Reads {
    /// One permit per concurrent read; waiting for one has no cap.
    pub slots: Arc<Semaphore>,
    /// How long one read may wait for its object, or for its next chunk.
    pub timeout: Duration,
}

impl Reads {
    /// Runs `read` in a slot, under the read timeout; the slot is freed when
    /// it ends, succeeds or not.
    pub async fn run<T>(
        &self,
        field: &str,
        read: impl Future<Output = Result<T, Error>>,
    ) -> Result<T, Error> {
        let _slot = self.slots.acquire().await.map_err(Error::internal)?;
        tokio::time::timeout(self.timeout, read)
            .await
            .map_err(|_| self.timed_out(field))?
    }

    fn timed_out(&self, field: &str) -> Error {
        Error::field(field, FieldError::ReadTimedOut(self.timeout.as_secs()))
    }
}

/// Why a streamed body failed, kept for the caller: the HTTP client only
/// says that the body broke.
#[derive(Debug, Clone, Default)]
pub(crate) struct Failure(Arc<Mutex<Option<Error>>>);

impl Failure {
    fn record(&self, error: Error) -> io::Error {
        let message = error.to_string();
        if let Ok(mut slot) = self.0.lock()
            && slot.is_none()
        {
            *slot = Some(error);
        }
        io::Error::other(message)
    }

    /// The recorded failure, if the body failed.
    pub fn take(&self) -> Option<Error> {
        self.0.lock().ok().and_then(|mut slot| slot.take())
    }
}

/// One piece of the body.
enum Part {
    Text(Bytes),
    File { field: String, meta: FileMeta },
}

/// The body of one call: its exact length and its chunks.
pub(crate) struct Body {
    /// Exact length in bytes.
    pub length: u64,
    /// The chunks; the stream fails (and the request must be aborted) if a
    /// file cannot be read whole and verified.
    pub stream: ByteStream,
}

/// The `data:` URI header for a file: `data:<mime>;name=<name>;base64,`.
fn uri_header(meta: &FileMeta) -> String {
    DataUri::header(
        &crate::datauri::essence(&meta.content_type),
        Some(&meta.filename),
    )
}

/// Lays out the body of `plan` for action `action` called by `user`.
pub(crate) fn build(
    store: Arc<dyn ObjectStore>,
    reads: &Reads,
    failure: &Failure,
    action: &str,
    user: &str,
    plan: &Plan,
) -> Result<Body, Error> {
    let text = serde_json::to_string(&json!({
        "action": action,
        "user": user,
        "fields": Value::Object(plan.values.clone()),
    }))
    .map_err(Error::internal)?;

    // Split the text at each quoted placeholder and put the file there.
    let mut parts = Vec::new();
    let mut rest = text.as_str();
    let marker = format!(
        "\"{}",
        serde_json::to_string(&plan.nonce)
            .map_err(Error::internal)?
            .trim_matches('"')
    );
    while let Some(at) = rest.find(&marker) {
        let (before, after) = rest.split_at(at);
        let end = after[1..]
            .find('"')
            .map(|i| i + 2)
            .ok_or_else(|| Error::internal(io::Error::other("a placeholder is not closed")))?;
        let quoted = &after[..end];
        let index: usize = quoted[marker.len()..end - 1]
            .parse()
            .map_err(Error::internal)?;
        let file = &plan.files[index];
        parts.push(Part::Text(Bytes::from(format!("{before}\""))));
        match &file.source {
            Source::Stored(meta) => {
                parts.push(Part::Text(Bytes::from(uri_header(meta))));
                parts.push(Part::File {
                    field: file.field.clone(),
                    meta: meta.clone(),
                });
            }
            Source::Inline(uri) => parts.push(Part::Text(Bytes::from(DataUri::encode(
                &uri.mime,
                uri.name.as_deref(),
                &uri.data,
            )))),
        }
        parts.push(Part::Text(Bytes::from_static(b"\"")));
        rest = &after[end..];
    }
    parts.push(Part::Text(Bytes::from(rest.to_owned())));

    let length = parts
        .iter()
        .map(|p| match p {
            Part::Text(t) => t.len() as u64,
            Part::File { meta, .. } => meta.size.div_ceil(3) * 4,
        })
        .sum();
    let (reads, failure) = (reads.clone(), failure.clone());
    let stream = futures_util::stream::iter(parts)
        .map(move |part| match part {
            Part::Text(t) => futures_util::stream::once(async move { Ok(t) }).boxed(),
            Part::File { field, meta } => {
                file_stream(store.clone(), reads.clone(), failure.clone(), field, meta)
            }
        })
        .flatten()
        .boxed();
    Ok(Body { length, stream })
}

/// One stored file, base64-encoded, verified with its last chunk held back,
/// read in a slot and under the read timeout for each chunk.
fn file_stream(
    store: Arc<dyn ObjectStore>,
    reads: Reads,
    failure: Failure,
    field: String,
    meta: FileMeta,
) -> ByteStream {
    let open = async move {
        let slot = reads
            .slots
            .clone()
            .acquire_owned()
            .await
            .map_err(|e| failure.record(Error::internal(e)))?;
        let key = meta.object_key();
        let opened = match tokio::time::timeout(reads.timeout, store.get(&key)).await {
            Err(_) => Err(reads.timed_out(&field)),
            Ok(Err(e)) => Err(Error::from(e)),
            Ok(Ok(None)) => Err(Error::field(
                &field,
                FieldError::NoLongerStored(meta.filename.clone()),
            )),
            Ok(Ok(Some(stream))) => Ok(stream),
        };
        let stream = opened.map_err(|e| failure.record(e))?;
        let checked = verified(stream, meta.size, meta.sha256);
        let encoded = base64_stream(idle_timeout(checked, reads.timeout));
        let (field, failure) = (field.clone(), failure.clone());
        Ok::<_, io::Error>(encoded.map(move |chunk| {
            // The slot is held for as long as this file is being read.
            let _ = &slot;
            chunk.map_err(|e| {
                let error = if e.kind() == io::ErrorKind::TimedOut {
                    reads.timed_out(&field)
                } else if e
                    .get_ref()
                    .is_some_and(|inner| inner.is::<crate::sha::Mismatch>())
                {
                    tracing::warn!(file_id = %meta.id, "stored object failed verification while sent to an upstream");
                    Error::field(&field, FieldError::StoredMismatch)
                } else {
                    Error::internal(e)
                };
                failure.record(error)
            })
        }))
    };
    futures_util::stream::once(open).try_flatten().boxed()
}

/// Base64 of `stream`, chunk by chunk: each output chunk encodes whole
/// 3-byte groups; the one or two bytes left over wait for the next chunk, and
/// the padded tail is written when the input ends.
pub(crate) fn base64_stream(stream: ByteStream) -> ByteStream {
    futures_util::stream::unfold(
        Some((stream, Vec::<u8>::with_capacity(2))),
        |state| async move {
            let (mut stream, mut carry) = state?;
            loop {
                match stream.next().await {
                    Some(Ok(chunk)) => {
                        let joined;
                        let input: &[u8] = if carry.is_empty() {
                            &chunk
                        } else {
                            joined = [carry.as_slice(), &chunk].concat();
                            &joined
                        };
                        let whole = input.len() / 3 * 3;
                        let out = STANDARD.encode(&input[..whole]);
                        carry = input[whole..].to_vec();
                        if !out.is_empty() {
                            return Some((Ok(Bytes::from(out)), Some((stream, carry))));
                        }
                    }
                    Some(Err(e)) => return Some((Err(e), None)),
                    None if carry.is_empty() => return None,
                    None => return Some((Ok(Bytes::from(STANDARD.encode(&carry))), None)),
                }
            }
        },
    )
    .boxed()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chunks(parts: &[&[u8]]) -> ByteStream {
        let owned: Vec<io::Result<Bytes>> = parts
            .iter()
            .map(|p| Ok(Bytes::copy_from_slice(p)))
            .collect();
        futures_util::stream::iter(owned).boxed()
    }

    #[tokio::test]
    async fn base64_across_chunk_boundaries_matches_the_whole() {
        let data: Vec<u8> = (0..=255u8).cycle().take(1000).collect();
        for split in [&[1usize, 2, 3][..], &[4, 5], &[999], &[0], &[1, 1, 1, 1]] {
            let mut pieces = Vec::new();
            let mut at = 0;
            for s in split {
                let end = (at + s).min(data.len());
                pieces.push(&data[at..end]);
                at = end;
            }
            pieces.push(&data[at..]);
            let out: Vec<Bytes> = base64_stream(chunks(&pieces)).try_collect().await.unwrap();
            assert_eq!(
                out.concat(),
                STANDARD.encode(&data).into_bytes(),
                "{split:?}"
            );
        }
        let empty: Vec<Bytes> = base64_stream(chunks(&[])).try_collect().await.unwrap();
        assert!(empty.concat().is_empty());
    }
}
