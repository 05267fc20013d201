//! The zip writer ([`super::zip`]), where this build has one (the `zips`
//! feature: the local server and the importer function; the other
//! functions never write a zip, and ship without it).

use std::io;

use async_zip::base::write::ZipFileWriter;
use async_zip::{Compression, ZipEntryBuilder};
use bytes::{Bytes, BytesMut};
use futures_util::{AsyncWriteExt as _, StreamExt as _};
use tokio::io::AsyncReadExt as _;

use super::Batches;
use super::zip::{Entry, PIPE_BYTES, SUMS};
use crate::error::Error;
use crate::file::FileMeta;
use crate::service::downloads::{Spending, none_deleted};
use crate::sha::Sha256;
use crate::store::{ByteStream, verified};

impl Batches {
    /// The zip of `entries` as it is written, to the link `spending` says
    /// (none: into the store).
    pub(super) fn zip_stream(
        &self,
        spending: Option<Spending>,
        entries: Vec<Entry>,
    ) -> Result<ByteStream, Error> {
        let writer = Writer {
            store: self.store.clone(),
            records: self.records.clone(),
            spending,
            entries,
        };
        Ok(writer.stream())
    }
}

/// What the writer of one zip holds: it outlives the request's call.
struct Writer {
    store: std::sync::Arc<dyn crate::store::ObjectStore>,
    records: std::sync::Arc<dyn crate::records::RecordStore>,
    /// The link the zip is streamed to (none: built into the store).
    spending: Option<Spending>,
    entries: Vec<Entry>,
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
        // each file reported downloaded, before the central directory (a
        // zip built into the store is spent as it is handed out).
        let files: Vec<FileMeta> = self.entries.iter().map(|e| e.file.clone()).collect();
        let ended = match &self.spending {
            Some(spending) => spending.last_byte(&files).await,
            None => none_deleted(&*self.records, &files).await,
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
