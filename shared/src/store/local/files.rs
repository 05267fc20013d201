//! Bodies to files and files to bodies: hashed and verified in chunks by
//! short blocking tasks, so no thread waits on a client.

use std::io::{self, Read, Write};
use std::path::Path;

use bytes::{Bytes, BytesMut};
use futures_util::StreamExt as _;

use super::slots::Slot;
use super::{CHUNK, QUEUED, READ_CHUNK};
use crate::sha::{Sha256, Verifier};
use crate::store::{ByteStream, StoreError};

/// What a write hands back: the file and the verifier, for the next.
type WriteResult<W> = Result<(std::io::BufWriter<W>, Verifier), StoreError>;

/// Streams `body` into `file`, which must come out exactly `size` bytes of
/// digest `sha256`; hands the file back, written but not synced.
pub(super) async fn write_verified<W: Write + Send + 'static>(
    file: W,
    size: u64,
    sha256: Sha256,
    body: ByteStream,
) -> Result<W, StoreError> {
    let buffered = std::io::BufWriter::with_capacity(CHUNK, file);
    let (file, verifier) = stream_into(buffered, Verifier::new(size, sha256), body).await?;
    verifier.finish()?;
    file.into_inner()
        .map_err(|e| StoreError::Io(e.into_error()))
}

/// Streams `body` into `file` through `verifier`, and hands both back once
/// the body ended (the caller finishes the verifier). Chunks are hashed and
/// written by short blocking tasks.
async fn stream_into<W: Write + Send + 'static>(
    file: std::io::BufWriter<W>,
    verifier: Verifier,
    mut body: ByteStream,
) -> WriteResult<W> {
    // The file and the verifier travel to each short blocking write and
    // back; the body is read here, in async code, between writes. Frames
    // are copied into the batch as they come (the connection's read buffer
    // is then free again, and reused in place) until it holds CHUNK bytes;
    // the batch goes to the write and comes back to be filled again (two
    // buffers a transfer, nothing allocated in one thread and freed in
    // another).
    let mut state = Some((file, verifier));
    let mut pending: Option<tokio::task::JoinHandle<Written<W>>> = None;
    let (mut batch, mut spare) = (Vec::with_capacity(CHUNK), Some(Vec::with_capacity(CHUNK)));
    let mut ended = false;
    let mut body_error = None;
    // The body keeps being read while a write runs, up to QUEUED bytes
    // ahead of the disk, so a stall in writeback does not stop the
    // network at once.
    loop {
        if pending.is_none() && (batch.len() >= CHUNK || (ended && !batch.is_empty())) {
            let (file, verifier) = state.take().expect("no write is in flight");
            let full = std::mem::replace(&mut batch, spare.take().unwrap_or_default());
            pending = Some(tokio::task::spawn_blocking(move || {
                write_batch(file, verifier, full)
            }));
        }
        if ended && pending.is_none() {
            break;
        }
        tokio::select! {
            written = async { pending.as_mut().expect("guarded").await }, if pending.is_some() => {
                pending = None;
                let (file, verifier, mut used) = written.map_err(join_error)??;
                used.clear();
                state = Some((file, verifier));
                spare = Some(used);
            }
            next = body.next(), if !ended && batch.len() < QUEUED => match next {
                Some(Ok(chunk)) => batch.extend_from_slice(&chunk),
                Some(Err(e)) => {
                    body_error = Some(e);
                    ended = true;
                    batch.clear();
                }
                None => ended = true,
            },
        }
    }
    if let Some(e) = body_error {
        // A temporary file is removed when `state` drops.
        return Err(StoreError::Body(e));
    }
    Ok(state.expect("the last write returned the file"))
}

/// What a write hands back: the file and the verifier, and the batch's
/// buffer to fill again.
type Written<W> = Result<(std::io::BufWriter<W>, Verifier, Vec<u8>), StoreError>;

/// Hashes and writes a batch (one short blocking task), handing its
/// buffer back.
fn write_batch<W: Write>(
    mut file: std::io::BufWriter<W>,
    mut verifier: Verifier,
    batch: Vec<u8>,
) -> Written<W> {
    verifier.update(&batch)?;
    file.write_all(&batch)?;
    Ok((file, verifier, batch))
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
