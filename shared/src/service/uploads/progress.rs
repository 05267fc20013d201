//! How far a person's upload has come, for `get_upload_status` to report
//! while it waits: the bytes of the parts stored, which every store can
//! list (on S3 that is all sluice sees: the bytes go straight to it), plus
//! the bytes arriving through this process right now (a proxied store: the
//! local one), counted as they pass.

use super::Uploads;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use crate::error::Error;
use crate::file::{FileId, FileMeta};
use crate::service::intake::Intake;
use crate::store::ByteStream;

/// The bytes arriving through this process, per file: each body adds what
/// it has carried, and takes it back when it ends, stored or not (a stored
/// part is counted as stored from then on).
#[derive(Debug, Default, Clone)]
pub struct Arrivals(Arc<Mutex<HashMap<FileId, Arc<AtomicU64>>>>);

impl Arrivals {
    /// `body`, counted under `file` as it passes (one atomic add a chunk).
    pub(crate) fn count(&self, file: &FileId, body: ByteStream) -> ByteStream {
        self.count_from(file, 0, body)
    }

    /// `body`, counted under `file` as it passes, after the `kept` bytes
    /// before it (an append to a resumable upload: what it stands on).
    pub(crate) fn count_from(&self, file: &FileId, kept: u64, body: ByteStream) -> ByteStream {
        use futures_util::StreamExt as _;
        let counter = self.lock().entry(file.clone()).or_default().clone();
        counter.fetch_add(kept, Ordering::Relaxed);
        let mut carried = Carried {
            arrivals: self.clone(),
            file: file.clone(),
            counter,
            bytes: kept,
        };
        body.map(move |chunk| {
            if let Ok(bytes) = &chunk {
                let n = bytes.len() as u64;
                carried.bytes += n;
                carried.counter.fetch_add(n, Ordering::Relaxed);
            }
            chunk
        })
        .boxed()
    }

    /// The bytes arriving for `file` now.
    fn of(&self, file: &FileId) -> u64 {
        self.lock()
            .get(file)
            .map_or(0, |c| c.load(Ordering::Relaxed))
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<FileId, Arc<AtomicU64>>> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// One body's share of its file's arrivals, given back when it is dropped.
struct Carried {
    arrivals: Arrivals,
    file: FileId,
    counter: Arc<AtomicU64>,
    bytes: u64,
}

impl Drop for Carried {
    fn drop(&mut self) {
        let mut map = self.arrivals.lock();
        let left = self.counter.fetch_sub(self.bytes, Ordering::Relaxed) - self.bytes;
        // The last body of a file (no other holds its counter) takes it out.
        if left == 0 && Arc::strong_count(&self.counter) == 2 {
            map.remove(&self.file);
        }
    }
}

/// How much of an upload has arrived.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Progress {
    /// Bytes stored or arriving (never more than `total`).
    pub received: u64,
    /// The file's size.
    pub total: u64,
}

impl Uploads {
    /// How far the upload of `file` has come by the bytes arriving through
    /// this process alone: no read of the store.
    pub(crate) fn progress_seen(&self, file: &FileMeta) -> Progress {
        Progress {
            received: self.arrivals.of(&file.id).min(file.size),
            total: file.size,
        }
    }

    /// How far the upload of `file` has come, by what this process sees.
    pub(crate) async fn progress_of(&self, file: &FileMeta) -> Result<Progress, Error> {
        let mut received = self.progress_seen(file).received;
        match Intake::of(&*self.store, &self.transfers, file) {
            // What the stream kept (checkpointed) or what this process
            // sees arriving on it, whichever is further.
            Intake::Stream(stream) => {
                received = received.max(stream.offset(&file.object_key(), file.size).await?);
            }
            Intake::Parts(parts, plan) => {
                for n in parts.stored_parts(&file.object_key()).await? {
                    received += plan.len(n).unwrap_or(0);
                }
            }
            Intake::Put(_) => {}
        }
        Ok(Progress {
            received: received.min(file.size),
            total: file.size,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;
    use futures_util::StreamExt as _;

    fn body(chunks: &[usize]) -> ByteStream {
        let chunks: Vec<std::io::Result<Bytes>> = chunks
            .iter()
            .map(|n| Ok(Bytes::from(vec![0u8; *n])))
            .collect();
        futures_util::stream::iter(chunks).boxed()
    }

    #[tokio::test]
    async fn bodies_count_as_they_pass_and_give_it_back_when_they_end() {
        let arrivals = Arrivals::default();
        let file = FileId::parse("AAAAAAAAAAAAAAAAAAAAAA").expect("an id");
        let mut one = arrivals.count(&file, body(&[10, 20]));
        let mut two = arrivals.count(&file, body(&[5]));
        assert_eq!(arrivals.of(&file), 0);
        one.next().await.unwrap().unwrap();
        two.next().await.unwrap().unwrap();
        assert_eq!(arrivals.of(&file), 15);
        one.next().await.unwrap().unwrap();
        assert_eq!(arrivals.of(&file), 35);
        drop(one);
        assert_eq!(arrivals.of(&file), 5, "an ended body takes back its bytes");
        drop(two);
        assert_eq!(arrivals.of(&file), 0);
        assert!(
            arrivals.lock().is_empty(),
            "nothing kept for a file with no body"
        );
    }
}
