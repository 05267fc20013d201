//! Bodies to files and files to bodies: hashed and verified in chunks by
//! short blocking tasks, so no thread waits on a client.

use std::io::{self, Read, Write};
use std::path::Path;

use bytes::{Bytes, BytesMut};
use futures_util::StreamExt as _;

use super::READ_CHUNK;
use super::pump::{self, Flow, Written};
use super::slots::Slot;
use crate::sha::{Sha256, Verifier};
use crate::store::{ByteStream, StoreError};

/// Streams `body` into `file`, which must come out exactly `size` bytes of
/// digest `sha256`; hands the file back, written but not synced.
pub(super) async fn write_verified<W: Write + Send + 'static>(
    file: W,
    size: u64,
    sha256: Sha256,
    body: ByteStream,
) -> Result<W, StoreError> {
    // Each write is a whole batch, so the file is written unbuffered.
    let sink = (file, Verifier::new(size, sha256));
    let write: pump::Write<_> = write_batch;
    let ((file, verifier), flow) =
        pump::pump(sink, write, body, |_| true, std::future::pending()).await?;
    if let Flow::Ended(Some(e)) = flow {
        // A temporary file is removed when it drops.
        return Err(StoreError::Body(e));
    }
    verifier.finish()?;
    Ok(file)
}

/// What a whole PUT's batches are written to: the file, and the verifier
/// of what it must come out as.
type Sink<W> = (W, Verifier);

/// Hashes and writes a batch (one short blocking task), handing its
/// buffer back.
fn write_batch<W: Write>((mut file, mut verifier): Sink<W>, batch: Vec<u8>) -> Written<Sink<W>> {
    verifier.update(&batch)?;
    file.write_all(&batch)?;
    Ok(((file, verifier), batch))
}

/// Reads one chunk (a short blocking task); an empty chunk is the end.
fn read_chunk<R: Read>(mut file: R) -> (R, io::Result<Bytes>) {
    let mut buf = BytesMut::zeroed(READ_CHUNK);
    loop {
        match file.read(&mut buf) {
            Ok(n) => {
                buf.truncate(n);
                return (file, Ok(buf.freeze()));
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return (file, Err(e)),
        }
    }
}

/// Streams a file chunk by chunk, each read a short blocking task started
/// as the previous chunk is handed out (one chunk of read-ahead). The
/// transfer slot is held until the stream ends or is dropped.
pub(super) fn read_stream<R: Read + Send + 'static>(file: R, slot: Slot) -> ByteStream {
    let first = tokio::task::spawn_blocking(move || read_chunk(file));
    futures_util::stream::unfold(Some((first, slot)), |state| async move {
        let (reading, slot) = state?;
        let (file, chunk) = match reading.await {
            Ok(done) => done,
            Err(e) => return Some((Err(io::Error::other(e)), None)),
        };
        match chunk {
            Ok(chunk) if chunk.is_empty() => None,
            Ok(chunk) => {
                let next = tokio::task::spawn_blocking(move || read_chunk(file));
                Some((Ok(chunk), Some((next, slot))))
            }
            Err(e) => Some((Err(e), None)),
        }
    })
    .boxed()
}

/// [`StoreError::AlreadyExists`] if something is at `path` (an object, a
/// part's marker): written once. Asked off the runtime's threads.
pub(super) async fn refuse_if_there(path: &Path) -> Result<(), StoreError> {
    let path = path.to_owned();
    let there = tokio::task::spawn_blocking(move || path.exists())
        .await
        .map_err(join_error)?;
    if there {
        return Err(StoreError::AlreadyExists);
    }
    Ok(())
}

pub(super) fn join_error(e: tokio::task::JoinError) -> StoreError {
    StoreError::Io(io::Error::other(e))
}
