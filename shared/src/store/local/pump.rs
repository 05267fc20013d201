//! A body into the local store, batch by batch: the one write loop a whole
//! PUT (`files::write_verified`) and a stream's append (`stream::pump`)
//! share.
//!
//! The body is read here, in async code; each batch of BATCH bytes is
//! hashed and written by one short blocking task, one at a time, while the
//! next batch fills (so the network does not stop while the disk writes;
//! the kernel's socket buffer holds what comes beyond that). Frames are
//! copied into the batch as they come (the connection's read buffer is then
//! free again, and reused in place), a frame that does not fit cut where
//! the batch is full; the batch goes to the write and comes back to be
//! filled again. So a transfer holds two buffers of BATCH bytes, whatever
//! the client sends, and allocates nothing in its steady state.

use std::future::Future;
use std::io;

use bytes::Bytes;
use futures_util::StreamExt as _;

use super::CHUNK;
use super::files::join_error;
use crate::store::{ByteStream, StoreError};

/// What one blocking write takes: four chunks. Smaller batches cost the
/// line's rate (256 KiB: 0.85× of this, in turns with
/// `sluice-bench --only peer`); a transfer holds two.
pub(super) const BATCH: usize = 4 * CHUNK;

/// What a batch's write does on its blocking thread: takes the sink and the
/// batch, and hands both back (the batch to be filled again).
pub(super) type Write<S> = fn(S, Vec<u8>) -> Written<S>;

/// The sink and the batch, handed back by a write.
pub(super) type Written<S> = Result<(S, Vec<u8>), StoreError>;

/// How the body's pumping ended.
pub(super) enum Flow {
    /// The body ended (`Some`: it broke off); all it brought is written.
    Ended(Option<io::Error>),
    /// Stopped before its end: a frame refused by `admit`, or `stop` came.
    /// Nothing from the last write on is written.
    Stopped,
}

/// Pumps `body` through `write` into `sink`, and hands the sink back with
/// how the body ended. Each frame is offered to `admit` first (false: stop
/// here); `stop` ending stops it too, at once.
pub(super) async fn pump<S: Send + 'static>(
    sink: S,
    write: Write<S>,
    mut body: ByteStream,
    mut admit: impl FnMut(&[u8]) -> bool,
    stop: impl Future<Output = ()>,
) -> Result<(S, Flow), StoreError> {
    // The sink and the spare buffer while no write is in flight (a write
    // takes both and hands both back); the batch being filled.
    let mut idle = Some((sink, Vec::with_capacity(BATCH)));
    let mut pending: Option<tokio::task::JoinHandle<Written<S>>> = None;
    let mut batch = Vec::with_capacity(BATCH);
    // What did not fit of the last frame, for the next batch.
    let mut rest = Bytes::new();
    let (mut ended, mut stopped) = (false, false);
    let mut broke = None;
    tokio::pin!(stop);
    loop {
        if pending.is_none() && !stopped && (batch.len() >= BATCH || (ended && !batch.is_empty())) {
            let (sink, spare) = idle.take().expect("no write is in flight");
            let full = std::mem::replace(&mut batch, spare);
            pending = Some(tokio::task::spawn_blocking(move || write(sink, full)));
            fill(&mut batch, &mut rest);
        }
        if (ended || stopped) && pending.is_none() {
            break;
        }
        tokio::select! {
            written = async { pending.as_mut().expect("guarded").await }, if pending.is_some() => {
                pending = None;
                let (sink, mut used) = written.map_err(join_error)??;
                used.clear();
                idle = Some((sink, used));
            }
            () = &mut stop, if !stopped => stopped = true,
            next = body.next(), if !ended && !stopped && rest.is_empty() && batch.len() < BATCH => match next {
                Some(Ok(chunk)) if !admit(&chunk) => stopped = true,
                Some(Ok(chunk)) => {
                    rest = chunk;
                    fill(&mut batch, &mut rest);
                }
                // What arrived before the body broke off is written.
                Some(Err(e)) => {
                    broke = Some(e);
                    ended = true;
                }
                None => ended = true,
            },
        }
    }
    let (sink, _) = idle.expect("the last write returned the sink");
    let flow = if stopped {
        Flow::Stopped
    } else {
        Flow::Ended(broke)
    };
    Ok((sink, flow))
}

/// Moves what fits of `rest` into `batch` (up to BATCH bytes).
fn fill(batch: &mut Vec<u8>, rest: &mut Bytes) {
    let fits = rest.len().min(BATCH.saturating_sub(batch.len()));
    batch.extend_from_slice(&rest.split_to(fits));
}
