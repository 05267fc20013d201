//! A batch's files as one zip, for a person or a host that takes one file:
//! `GET /z/{token}`. In this order: verify the link → refuse it if spent →
//! every file of the batch still there and deliverable, before any byte →
//! `HEAD` and the person's page answer from that, spending nothing → the
//! bytes charged to the link's budget (twice the files) → the zip streamed
//! as it is built: each entry stored as it is (no recompression), its bytes
//! read once and checked against their SHA-256 as they pass, a
//! `SHA256SUMS` entry last (`sha256sum -c` reads it), ZIP64 wherever a
//! size or an offset needs it → before the central directory (the last
//! bytes) every file checked again (a delete wins: the zip is cut, never a
//! complete archive without a file) and the link spent.
//!
//! Memory: the zip is written into a pipe of [`PIPE_BYTES`] that the
//! response reads, and each file is read in the store's chunks: a batch of
//! any size holds a constant. A server that lives on streams it so from
//! any store (a directory, S3) as it is asked for ([`Zips::Here`]).
//!
//! On AWS a function behind API Gateway answers within 30 s and 10 MB, so
//! no function can stream a zip of any size ([`Zips::InStore`]): the
//! function that issues the link starts the importer function (up to 15
//! minutes), which builds the same zip into the bucket as an upload in
//! parts of [`PART_BYTES`] ([`Batches::build_zip`], holding one part),
//! under the batch's own key, which expires with the files' rule. The
//! link then answers `503` with `Retry-After` while it is built (the line
//! retries), or, once every file is still there, a presigned GET of it,
//! spending the link with the redirect (as a download link on S3 is spent
//! by the redirect that hands out its last byte). A build that failed
//! answers `410` with why.

use bytes::{Bytes, BytesMut};
use futures_util::StreamExt as _;
use serde::Serialize;

use super::Batches;
use crate::error::Error;
use crate::file::{FileId, FileMeta, ObjectKey};
use crate::records::Batch;
use crate::service::downloads::{FileRef, Span, Spending, Wanted, presigned_attachment};
use crate::service::imports::Dispatch;
use crate::sha::{Hasher, Sha256};
use crate::store::{Access, Busy, ByteStream, PartStore};
use crate::time::rfc3339;
use crate::token::ShortKind;

/// The name of the zip's own list of digests.
pub const SUMS: &str = "SHA256SUMS";

/// How much of the zip waits between its writer and the response.
pub const PIPE_BYTES: usize = 256 * 1024;

/// The parts a zip is built into the store in ([`Zips::InStore`]): what the
/// builder holds.
pub const PART_BYTES: u64 = 8 * 1024 * 1024;

/// Where a batch's zip is built.
#[derive(Clone)]
pub enum Zips {
    /// Streamed as it is asked for, by this server, which lives on.
    Here,
    /// Built into the store by the importer function (started through the
    /// [`Dispatch`] where this function issues links; none: it only
    /// serves them, or builds them), then served from there.
    InStore(Option<std::sync::Arc<dyn Dispatch>>),
}

impl std::fmt::Debug for Zips {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Zips::Here => f.write_str("Here"),
            Zips::InStore(d) => write!(f, "InStore(starts: {})", d.is_some()),
        }
    }
}

impl Zips {
    /// Whether a zip asked for here is built anywhere.
    pub(super) fn built(&self) -> bool {
        matches!(self, Zips::Here | Zips::InStore(Some(_)))
    }

    /// Starts building the zip of batch `id`, where it is built elsewhere.
    pub(super) async fn start(&self, id: &FileId) -> Result<(), Error> {
        match self {
            Zips::InStore(Some(dispatch)) => dispatch.start_zip(id).await,
            _ => Ok(()),
        }
    }
}

/// Where the zip of `batch` (`id`) is built into the store, under its
/// owner, as [`zip_name`] names it.
fn zip_key(batch: &Batch, id: &FileId) -> ObjectKey {
    ObjectKey::of(&batch.owner, id, &zip_name(id))
}

/// Where a build that failed leaves why, beside the zip's key.
fn failed_key(batch: &Batch, id: &FileId) -> ObjectKey {
    ObjectKey::of(&batch.owner, id, "zip-failed.txt")
}

/// What building a zip into the store made.
#[derive(Debug, Clone, Serialize)]
pub struct Built {
    /// The zip's size.
    pub size: u64,
    /// Its SHA-256 (none: built by an earlier run of the same event).
    pub sha256: Option<Sha256>,
    /// How many parts it was stored in.
    pub parts: u32,
}

/// How building a zip into the store ended: built, or why not (left
/// beside its key, where its link reads it).
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum ZipBuild {
    /// The zip is in the store.
    Built(Built),
    /// It was not built.
    Failed {
        /// Why, as its link says.
        reason: String,
    },
}

/// The answer's zip: one single-use link to every file of the batch.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct ZipTicket {
    /// The link (single use).
    pub url: String,
    #[allow(missing_docs)]
    pub file_name: String,
    #[allow(missing_docs)]
    pub expires_at: String,
    /// Saves it.
    pub command: String,
    #[allow(missing_docs)]
    pub file_ref: FileRef,
}

/// What the zip of batch `id` is saved as.
fn zip_name(id: &FileId) -> String {
    format!("files-{}.zip", &id.as_str()[..8.min(id.as_str().len())])
}

/// The zip's ticket for batch `id`, its link `url`.
pub(super) fn ticket(id: &FileId, url: String, expires_at: i64) -> ZipTicket {
    let file_name = zip_name(id);
    ZipTicket {
        // Retried while a zip built elsewhere is not there yet (`503` with
        // `Retry-After`), or every transfer slot is taken.
        command: format!(
            "curl -fsSL --retry 60 -o {} {}",
            crate::curl::shell_quote(&file_name),
            crate::curl::shell_quote(&url)
        ),
        file_ref: FileRef {
            file_id: id.clone(),
            download_url: url.clone(),
            mime_type: Some("application/zip".to_owned()),
            file_name: Some(file_name.clone()),
        },
        url,
        file_name,
        expires_at: rfc3339(expires_at),
    }
}

/// What a zip link delivers.
pub enum Zipped {
    /// The headers of the zip (`HEAD`) or the person's page: what it
    /// holds. Nothing spent.
    Described {
        /// What the zip is saved as.
        file_name: String,
        /// How many files.
        files: usize,
        /// Their bytes, in all.
        bytes: u64,
        /// Whether the page was asked for (else the headers).
        page: bool,
    },
    /// The zip built into the store: a presigned GET of it, valid for
    /// seconds (it honours `Range` itself).
    Redirect(String),
    /// The zip, as it is built.
    Stream {
        /// What the zip is saved as.
        file_name: String,
        /// Its bytes; the stream fails (and the response is cut) if any
        /// file is not its pin or was deleted, before the archive ends.
        stream: ByteStream,
    },
}

impl std::fmt::Debug for Zipped {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Zipped::Described { files, .. } => f
                .debug_struct("Described")
                .field("files", files)
                .finish_non_exhaustive(),
            Zipped::Redirect(_) => f.write_str("Redirect(<presigned URL>)"),
            Zipped::Stream { file_name, .. } => f
                .debug_struct("Stream")
                .field("file_name", file_name)
                .finish_non_exhaustive(),
        }
    }
}

/// One file of the zip.
pub(super) struct Entry {
    #[cfg_attr(not(feature = "zips"), allow(dead_code))]
    pub(super) path: String,
    pub(super) file: FileMeta,
}

impl Batches {
    /// Redeems the zip link `token` for what the request wants ([`Wanted`]:
    /// a `Range` is answered with the whole zip, which cannot resume).
    pub async fn redeem_zip(&self, token: &str, wanted: Wanted) -> Result<Zipped, Error> {
        let (short, batch) = self.batch_of(token, ShortKind::BatchZip).await?;
        let spending = self
            .downloads
            .spending(short.jti(), short.expires_at.unwrap_or(0));
        if self.ledger.is_spent(&spending.jti).await? {
            return Err(spending.replayed());
        }
        let file_name = zip_name(&short.file_id);
        let entries = self.entries(&batch).await?;
        let total: u64 = entries.iter().map(|e| e.file.size).sum();
        if let Wanted::Head | Wanted::Page = wanted {
            return Ok(Zipped::Described {
                file_name,
                files: entries.len(),
                bytes: total,
                page: wanted == Wanted::Page,
            });
        }
        if let Zips::InStore(_) = self.zips {
            return self
                .built_zip(&batch, &short.file_id, wanted, entries, &spending)
                .await;
        }
        let whole = Span {
            start: 0,
            end: total,
            size: total,
        };
        spending.charge(&whole).await?;
        tracing::info!(jti = %spending.jti, files = entries.len(), bytes = total, "zip started");
        Ok(Zipped::Stream {
            file_name,
            stream: self.zip_stream(Some(spending), entries)?,
        })
    }

    /// This build writes no zip: [`Zips::Here`] is never chosen for it
    /// (with the `zips` feature, the writer's, in `zip_writer.rs`).
    #[cfg(not(feature = "zips"))]
    fn zip_stream(&self, _: Option<Spending>, _: Vec<Entry>) -> Result<ByteStream, Error> {
        Err(Error::bug("a zip asked of a build without the zip writer"))
    }

    /// Every file of `batch`, there and deliverable: a zip is never started
    /// (or handed out) without one of its files.
    async fn entries(&self, batch: &Batch) -> Result<Vec<Entry>, Error> {
        let mut entries = Vec::with_capacity(batch.files.len());
        for f in &batch.files {
            let (_, record) = self.listed(f).await?;
            let file = record.ok_or(Error::NotFound)?.file;
            self.files.stored(&file).await?.deliverable()?;
            entries.push(Entry {
                path: f.path.clone(),
                file,
            });
        }
        Ok(entries)
    }

    /// The zip of `batch` (`id`) built into the store, its `entries` all
    /// still there: a presigned GET of the bytes `wanted` (a `Range` the
    /// store honours), charged to the link, which the redirect that hands
    /// out the last byte spends. Still being built: `503`, to try again;
    /// failed: `410` with why.
    async fn built_zip(
        &self,
        batch: &Batch,
        id: &FileId,
        wanted: Wanted,
        entries: Vec<Entry>,
        spending: &Spending,
    ) -> Result<Zipped, Error> {
        let store = &*self.store;
        let key = zip_key(batch, id);
        let Some(info) = store.head(&key).await? else {
            return Err(match self.why_failed(batch, id).await? {
                Some(why) => Error::ZipNotBuilt(why),
                None => Error::Busy(Busy::Zipping),
            });
        };
        let Access::Direct(presign) = store.access() else {
            return Err(Error::bug("a zip built into a store that is not S3"));
        };
        let Wanted::Bytes(ranged) = wanted else {
            return Err(Error::bug("a zip's headers are answered before its bytes"));
        };
        // A range past the end: the store answers `416` itself.
        if let Some(span) = ranged.span(info.size) {
            let files: Vec<FileMeta> = entries.into_iter().map(|e| e.file).collect();
            spending.redirected(&span, &files).await?;
        }
        let name = zip_name(id);
        let url = presigned_attachment(
            &self.transfers,
            presign,
            &key,
            &info,
            (&name, "application/zip"),
        )
        .await?;
        tracing::info!(jti = %spending.jti, "zip redirected to the store");
        Ok(Zipped::Redirect(url))
    }

    /// Why the build of `batch`'s zip failed, if it did.
    async fn why_failed(&self, batch: &Batch, id: &FileId) -> Result<Option<String>, Error> {
        let Some(mut stream) = self.store.get(&failed_key(batch, id)).await? else {
            return Ok(None);
        };
        let mut why = Vec::new();
        while let Some(chunk) = stream.next().await {
            why.extend_from_slice(&chunk.map_err(Error::internal)?);
        }
        Ok(Some(String::from_utf8_lossy(&why).into_owned()))
    }

    /// Builds the zip of download batch `id` into the store, in parts
    /// ([`Zips::InStore`]: what the importer function does when a zip link
    /// is issued on AWS). Built already (an event delivered again): what
    /// is there. A build that fails leaves why beside it, which the link
    /// answers, and ends as [`ZipBuild::Failed`]; an error is a batch
    /// that is not there (expired) or a store that cannot answer.
    pub async fn build_zip(&self, id: &str) -> Result<ZipBuild, Error> {
        let id = FileId::parse(id).ok_or_else(|| Error::Invalid("no batch id".into()))?;
        let batch = self
            .records
            .get_batch(&id)
            .await?
            .filter(|b| b.expires_at > crate::time::now_unix())
            .ok_or(Error::NotFound)?;
        let key = zip_key(&batch, &id);
        let store = &*self.store;
        if let Some(info) = store.head(&key).await? {
            tracing::info!(batch = %id, "a zip asked for again was built already");
            return Ok(ZipBuild::Built(Built {
                size: info.size,
                sha256: None,
                parts: 0,
            }));
        }
        let parts = store
            .parts()
            .ok_or_else(|| Error::bug("a zip is built into a store that takes parts"))?;
        let built = async {
            let zip = self.zip_stream(None, self.entries(&batch).await?)?;
            in_parts(parts, &key, zip).await
        }
        .await;
        match built {
            Ok(b) => {
                tracing::info!(batch = %id, bytes = b.size, parts = b.parts, "zip built into the store");
                Ok(ZipBuild::Built(b))
            }
            Err(e) => {
                tracing::warn!(batch = %id, error = %e, "the zip could not be built");
                let reason = match e {
                    Error::ZipNotBuilt(why) => why,
                    other => other.to_string(),
                };
                let why = Bytes::from(reason.clone());
                let (sha, size) = (Sha256::of(&why), why.len() as u64);
                let body = futures_util::stream::once(async move { Ok(why) }).boxed();
                store.put(&failed_key(&batch, &id), size, sha, body).await?;
                Ok(ZipBuild::Failed { reason })
            }
        }
    }
}

/// Stores `zip` under `key` in parts of [`PART_BYTES`] (the last one
/// shorter), each checked against its own SHA-256 by the store, then joins
/// them: the one part held at a time is what building costs in memory. A
/// zip that fails part way is discarded.
async fn in_parts(
    parts: &dyn PartStore,
    key: &ObjectKey,
    mut zip: ByteStream,
) -> Result<Built, Error> {
    let part_bytes = PART_BYTES as usize;
    parts.begin(key, "application/zip").await?;
    let mut whole = Hasher::new();
    let mut part = BytesMut::with_capacity(part_bytes);
    let (mut n, mut offset) = (0u32, 0u64);
    let put = |n: u32, offset: u64, bytes: Bytes| async move {
        let size = bytes.len() as u64;
        let sha = Sha256::of(&bytes);
        let body = futures_util::stream::once(async move { Ok(bytes) }).boxed();
        parts.put_part(key, n, offset, size, sha, body).await
    };
    let sent = async {
        loop {
            let chunk = zip
                .next()
                .await
                .transpose()
                .map_err(|e| Error::ZipNotBuilt(e.to_string()))?;
            let last = chunk.is_none();
            if let Some(chunk) = chunk {
                whole.update(&chunk);
                part.extend_from_slice(&chunk);
            }
            while part.len() >= part_bytes || (last && !part.is_empty()) {
                let bytes = part.split_to(part.len().min(part_bytes)).freeze();
                n += 1;
                let len = bytes.len() as u64;
                put(n, offset, bytes).await?;
                offset += len;
            }
            if last {
                return Ok::<_, Error>(());
            }
        }
    }
    .await;
    let plan = crate::multipart::Plan::new(offset, PART_BYTES);
    if let Err(e) = sent {
        let _ = parts.abort(key, &plan).await;
        return Err(e);
    }
    if plan.count != n {
        let _ = parts.abort(key, &plan).await;
        return Err(Error::ZipNotBuilt(format!(
            "{offset} bytes do not fit the store's parts"
        )));
    }
    let sha256 = whole.finish();
    parts.join(key, &plan, sha256).await?;
    Ok(Built {
        size: offset,
        sha256: Some(sha256),
        parts: n,
    })
}
