//! The zip writer ([`super::zip`]), where this build has one (the `zips`
//! feature: the local server and the importer function; the other
//! functions never write a zip, and ship without it).

use std::io;

use async_zip::base::write::ZipFileWriter;
use async_zip::{Compression, ZipEntryBuilder};
use bytes::{Bytes, BytesMut};
use futures_util::{AsyncWriteExt as _, StreamExt as _};
use tokio::io::AsyncReadExt as _;

use super::zip::{Built, Entry, PART_BYTES, PIPE_BYTES, SUMS};
use crate::error::Error;
use crate::file::{FileMeta, ObjectKey};
use crate::service::base::Base;
use crate::service::downloads::{Spending, none_deleted};
use crate::sha::{Hasher, Sha256};
use crate::store::{ByteStream, PartStore, verified};

/// What the writer of one zip holds: it outlives the request's call.
pub(super) struct Writer {
    pub(super) base: Base,
    /// The link the zip is streamed to (none: built into the store).
    pub(super) spending: Option<Spending>,
    pub(super) entries: Vec<Entry>,
}

/// Stores `zip` under `key` in parts of [`PART_BYTES`] (the last one
/// shorter), each checked against its own SHA-256 by the store, then joins
/// them: the one part held at a time is what building costs in memory. A
/// zip that fails part way is discarded.
pub(super) async fn in_parts(
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

impl Writer {
    /// The zip as a stream: written by a task into a pipe the stream
    /// reads; the stream ends in the task's error, if any, so a zip cut
    /// short is a response cut short.
    pub(super) fn stream(self) -> ByteStream {
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
                .base
                .store()
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
        // each file reported downloaded, before the central directory (a
        // zip built into the store is spent as it is handed out).
        let files: Vec<FileMeta> = self.entries.iter().map(|e| e.file.clone()).collect();
        let ended = match &self.spending {
            Some(spending) => spending.last_byte(&files).await,
            None => none_deleted(&self.base, &files).await,
        };
        ended.map_err(|e| io::Error::other(format!("the zip was cut: {e}")))?;
        zip.close().await.map_err(zip_error)?;
        if let Some(spending) = &self.spending {
            tracing::info!(jti = %spending.jti, "zip delivered");
        }
        Ok(())
    }
}

/// A line of the zip's digests: `sha256sum -c` reads it.
fn sums_line(sha: &Sha256, path: &str) -> String {
    format!("{sha}  {path}\n")
}
