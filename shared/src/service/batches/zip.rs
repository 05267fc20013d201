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
//! any size holds a constant. A server that lives on builds it from any
//! store (a directory, S3); a function does not (`zips_here`): it would
//! read every byte within API Gateway's 30 s and 10 MB answer, so there
//! the line fetches the files from S3 instead.

use std::io;

use async_zip::base::write::ZipFileWriter;
use async_zip::{Compression, ZipEntryBuilder};
use bytes::{Bytes, BytesMut};
use futures_util::{AsyncWriteExt as _, StreamExt as _};
use serde::Serialize;
use tokio::io::AsyncReadExt as _;

use super::Batches;
use crate::error::Error;
use crate::file::{FileId, FileMeta};
use crate::service::downloads::{FileRef, Span, Spending, Wanted};
use crate::sha::Sha256;
use crate::store::{ByteStream, ObjectStore, verified};
use crate::time::rfc3339;
use crate::token::ShortKind;

/// The name of the zip's own list of digests.
pub const SUMS: &str = "SHA256SUMS";

/// How much of the zip waits between its writer and the response.
pub const PIPE_BYTES: usize = 256 * 1024;

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
        command: format!(
            "curl -fsSL -o {} {}",
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
            Zipped::Stream { file_name, .. } => f
                .debug_struct("Stream")
                .field("file_name", file_name)
                .finish_non_exhaustive(),
        }
    }
}

/// One file of the zip.
struct Entry {
    path: String,
    file: FileMeta,
}

/// What the writer of one zip holds: it outlives the request's call.
struct Writer {
    store: std::sync::Arc<dyn ObjectStore>,
    spending: Spending,
    entries: Vec<Entry>,
}

impl Batches {
    /// Redeems the zip link `token` for what the request wants ([`Wanted`]:
    /// a `Range` is answered with the whole zip, which cannot resume).
    pub async fn redeem_zip(&self, token: &str, wanted: Wanted) -> Result<Zipped, Error> {
        let (short, batch) = self.batch_of(token, ShortKind::BatchZip).await?;
        let spending = self
            .downloads
            .spending(short.jti(), short.expires_at.unwrap_or(0));
        if self.base.ledger().is_spent(&spending.jti).await? {
            return Err(spending.replayed());
        }
        let file_name = zip_name(&short.file_id);
        // Every file there and deliverable before any byte: a zip is never
        // started without one of its files.
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
        let total: u64 = entries.iter().map(|e| e.file.size).sum();
        if let Wanted::Head | Wanted::Page = wanted {
            return Ok(Zipped::Described {
                file_name,
                files: entries.len(),
                bytes: total,
                page: wanted == Wanted::Page,
            });
        }
        let whole = Span {
            start: 0,
            end: total,
            size: total,
        };
        spending.charge(&whole).await?;
        tracing::info!(jti = %spending.jti, files = entries.len(), bytes = total, "zip started");
        let writer = Writer {
            store: self.base.store_arc(),
            spending,
            entries,
        };
        Ok(Zipped::Stream {
            file_name,
            stream: writer.stream(),
        })
    }
}

impl Writer {
    /// The zip as a stream: written by a task into a pipe the stream
    /// reads; the stream ends in the task's error, if any, so a zip cut
    /// short is a response cut short.
    fn stream(self) -> ByteStream {
        let (ours, theirs) = tokio::io::duplex(PIPE_BYTES);
        let task = tokio::spawn(self.write(ours));
        futures_util::stream::unfold((theirs, Some(task)), |(mut pipe, task)| async move {
            let mut buf = BytesMut::with_capacity(64 * 1024);
            match pipe.read_buf(&mut buf).await {
                Ok(0) => {
                    let verdict = match task?.await {
                        Ok(Ok(())) => return None,
                        Ok(Err(e)) => e,
                        Err(e) => io::Error::other(e),
                    };
                    Some((Err(verdict), (pipe, None)))
                }
                Ok(_) => Some((Ok(buf.freeze()), (pipe, task))),
                Err(e) => Some((Err(e), (pipe, None))),
            }
        })
        .boxed()
    }

    /// Writes the zip into `pipe`: each file's entry, the digests, then,
    /// once every file is still there and the link is spent, the central
    /// directory.
    async fn write(self, pipe: tokio::io::DuplexStream) -> io::Result<()> {
        let zip_error = |e: async_zip::error::ZipError| io::Error::other(e.to_string());
        let mut zip = ZipFileWriter::with_tokio(pipe);
        let mut sums = String::new();
        for entry in &self.entries {
            let file = &entry.file;
            let stream = self
                .store
                .get(&file.object_key())
                .await
                .map_err(io::Error::other)?
                .ok_or_else(|| io::Error::other(format!("{} is gone", file.id)))?;
            let mut bytes = verified(stream, file.size, file.sha256);
            let builder = ZipEntryBuilder::new(entry.path.clone().into(), Compression::Stored)
                .unix_permissions(0o644);
            let mut out = zip.write_entry_stream(builder).await.map_err(zip_error)?;
            while let Some(chunk) = bytes.next().await {
                let chunk: Bytes = chunk?;
                out.write_all(&chunk).await?;
            }
            out.close().await.map_err(zip_error)?;
            sums.push_str(&sums_line(&file.sha256, &entry.path));
        }
        let builder = ZipEntryBuilder::new(SUMS.to_owned().into(), Compression::Stored)
            .unix_permissions(0o644);
        zip.write_entry_whole(builder, sums.as_bytes())
            .await
            .map_err(zip_error)?;
        // A delete (or a rejection) wins over a zip under way: without one
        // of its files, the archive never ends; else the link is spent and
        // each file reported downloaded, before the central directory.
        let files: Vec<FileMeta> = self.entries.iter().map(|e| e.file.clone()).collect();
        self.spending
            .last_byte(&files)
            .await
            .map_err(|e| io::Error::other(format!("the zip was cut: {e}")))?;
        zip.close().await.map_err(zip_error)?;
        tracing::info!(jti = %self.spending.jti, "zip delivered");
        Ok(())
    }
}

/// A line of the zip's digests: `sha256sum -c` reads it.
fn sums_line(sha: &Sha256, path: &str) -> String {
    format!("{sha}  {path}\n")
}
