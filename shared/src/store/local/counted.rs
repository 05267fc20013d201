//! What the quota counts of what is on disk, and where a stream stands:
//! a file's allocated bytes, a stream's as its checkpoint holds them, a
//! checkpoint's none. The store's start, its sweep, a delete and a stream's
//! appends all count through here, so the figure they keep agrees with
//! itself. Nothing here writes.

use std::io;
use std::path::{Path, PathBuf};

use crate::sha::Midstate;

/// The name of a stream's checkpoint, beside it.
pub(super) const CHECKPOINT_FILE: &str = "stream.at";

/// The name of a stream's bytes.
pub(super) const STREAM_FILE: &str = "stream";

/// The hash state of the last checkpoint (its offset with it), if there is
/// one that reads; one that does not is no checkpoint (the upload starts
/// over).
fn checkpointed(at: &Path) -> io::Result<Option<Midstate>> {
    match std::fs::read_to_string(at) {
        Ok(saved) => Ok(Midstate::resume(&saved)),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e),
    }
}

/// Where the stream at `paths` stands: its checkpoint, unless the stream
/// is shorter than the checkpoint counts (a restore, disk trouble), which
/// is no checkpoint (the upload starts over from byte 0). `HEAD` and
/// `PATCH` both read it here, so the offset one answers is the one the
/// other accepts. Also what the stream's bytes count against the quota.
pub(super) fn standing(paths_dir: &Path) -> io::Result<(Option<Midstate>, u64)> {
    let data = paths_dir.join(STREAM_FILE);
    let len = match std::fs::metadata(&data) {
        Ok(meta) => counted(&meta),
        Err(e) if e.kind() == io::ErrorKind::NotFound => 0,
        Err(e) => return Err(e),
    };
    let hash = checkpointed(&paths_dir.join(CHECKPOINT_FILE))?;
    Ok(match hash {
        Some(hash) if len >= hash.offset() => {
            let offset = hash.offset();
            (Some(hash), offset)
        }
        _ => (None, 0),
    })
}

/// The bytes a file takes that the quota counts: its allocated blocks where
/// it is sparse (a staging file whose parts have not all arrived), and its
/// length otherwise.
pub(super) fn counted(meta: &std::fs::Metadata) -> u64 {
    use std::os::unix::fs::MetadataExt as _;
    meta.len().min(meta.blocks().saturating_mul(512))
}

/// What a file below the objects counts against the quota, as the running
/// figure counted it: a stream, what its checkpoint holds (an append
/// cancelled is cut back to it, and what a crash left past it was never
/// kept); a checkpoint, nothing (bookkeeping the quota never reserved);
/// any other file, [`counted`].
pub(super) fn quota_counted(path: &Path, meta: &std::fs::Metadata) -> u64 {
    if path.ends_with(CHECKPOINT_FILE) {
        return 0;
    }
    match path.parent() {
        Some(dir) if path.file_name().is_some_and(|n| n == STREAM_FILE) => {
            standing(dir).map_or(0, |(_, at)| at.min(counted(meta)))
        }
        _ => counted(meta),
    }
}

/// Every regular file below `dir`, with its metadata.
pub(super) fn walk(dir: &Path) -> io::Result<Vec<(PathBuf, std::fs::Metadata)>> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let entries = match std::fs::read_dir(&d) {
            Ok(e) => e,
            // Removed by a concurrent sweep.
            Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
            Err(e) => return Err(e),
        };
        for entry in entries {
            let entry = entry?;
            let meta = match entry.metadata() {
                Ok(m) => m,
                Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
                Err(e) => return Err(e),
            };
            if meta.is_dir() {
                stack.push(entry.path());
            } else if meta.is_file() {
                out.push((entry.path(), meta));
            }
        }
    }
    Ok(out)
}

/// What the files below `dir` count against the quota
/// ([`quota_counted`]).
pub(super) fn dir_size(dir: &Path) -> io::Result<u64> {
    Ok(walk(dir)?
        .iter()
        .map(|(path, meta)| quota_counted(path, meta))
        .sum())
}
