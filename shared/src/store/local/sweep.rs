//! What the sweep deletes, and how the quota counts what is on disk.

use std::collections::HashSet;
use std::io;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use super::LocalStore;
use super::slots::release;
use crate::store::StoreError;

impl LocalStore {
    /// Deletes objects older than `max_age` whose file has no record
    /// (`live` answers which of the file ids asked have one), and temporary
    /// files left by uploads that died. Returns how many objects were
    /// removed. An object is swept by its record, not by its time: a
    /// deduplicated copy is a hard link, with its original's time, and
    /// lives as long as its own record.
    pub fn sweep(
        &self,
        max_age: Duration,
        live: impl FnOnce(&[String]) -> Result<HashSet<String>, StoreError>,
    ) -> Result<usize, StoreError> {
        let older_than = |cutoff: SystemTime| {
            move |entry: &(PathBuf, std::fs::Metadata)| entry.1.modified().is_ok_and(|m| m < cutoff)
        };
        let old: Vec<_> = walk(&self.objects)?
            .into_iter()
            .filter(older_than(SystemTime::now() - max_age))
            .collect();
        let ids: Vec<String> = old
            .iter()
            .filter_map(|(path, _)| self.file_id_of(path))
            .collect::<HashSet<_>>()
            .into_iter()
            .collect();
        let live = live(&ids)?;
        let old: Vec<_> = old
            .into_iter()
            .filter(|(path, _)| self.file_id_of(path).is_none_or(|id| !live.contains(&id)))
            .collect();
        let removed = remove_each(&old, |bytes| release(&self.used, bytes));
        let stale: Vec<_> = walk(&self.tmp)?
            .into_iter()
            .filter(older_than(
                SystemTime::now() - Duration::from_secs(24 * 3600),
            ))
            .collect();
        remove_each(&stale, |_| {});
        Ok(removed)
    }
}

impl LocalStore {
    /// The file id an object's path is kept under (`files/<owner>/<id>/…`,
    /// `parts/<owner>/<id>/…`).
    fn file_id_of(&self, path: &Path) -> Option<String> {
        let relative = path.strip_prefix(&self.objects).ok()?;
        relative
            .components()
            .nth(2)
            .and_then(|c| c.as_os_str().to_str())
            .map(str::to_owned)
    }
}

/// The bytes a file takes that the quota counts: its allocated blocks where
/// it is sparse (a staging file whose parts have not all arrived), and its
/// length otherwise.
pub(super) fn counted(meta: &std::fs::Metadata) -> u64 {
    use std::os::unix::fs::MetadataExt as _;
    meta.len().min(meta.blocks().saturating_mul(512))
}

/// Deletes each of `entries` (and its now-empty `<file_id>` directory),
/// going on past one that fails (another process removed it first, a
/// permission): logged, and left for the next sweep. Calls `gone` with the
/// size of each file deleted; returns how many were.
pub(super) fn remove_each(
    entries: &[(PathBuf, std::fs::Metadata)],
    mut gone: impl FnMut(u64),
) -> usize {
    let mut removed = 0;
    for (path, meta) in entries {
        if let Err(e) = std::fs::remove_file(path) {
            tracing::warn!(path = %path.display(), error = %e, "sweep could not delete a file");
            continue;
        }
        gone(counted(meta));
        // Ignore failure: another process may be writing a sibling.
        if let Some(dir) = path.parent() {
            let _ = std::fs::remove_dir(dir);
        }
        removed += 1;
    }
    removed
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

/// What the files below `dir` count against the quota: the bytes of
/// files, not a stream's checkpoint beside them (bookkeeping the quota
/// never reserved).
pub(super) fn dir_size(dir: &Path) -> io::Result<u64> {
    Ok(walk(dir)?
        .iter()
        .filter(|(path, _)| !path.ends_with(super::stream::CHECKPOINT_FILE))
        .map(|(_, m)| counted(m))
        .sum())
}
