//! What the sweep deletes: objects whose record is gone, and temporary
//! files left by uploads that died (what each gives back to the quota:
//! [`super::counted`]).

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use super::LocalStore;
use super::counted::{quota_counted, walk};
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
        let removed = remove_each(&old, |bytes| self.quota.release(bytes));
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

/// Deletes each of `entries` (and its now-empty `<file_id>` directory),
/// going on past one that fails (another process removed it first, a
/// permission): logged, and left for the next sweep. Calls `gone` with
/// what each file deleted counted ([`quota_counted`], read before any of
/// them goes); returns how many were.
pub(super) fn remove_each(
    entries: &[(PathBuf, std::fs::Metadata)],
    mut gone: impl FnMut(u64),
) -> usize {
    let counts: Vec<u64> = entries
        .iter()
        .map(|(path, meta)| quota_counted(path, meta))
        .collect();
    let mut removed = 0;
    for ((path, _), count) in entries.iter().zip(counts) {
        if let Err(e) = std::fs::remove_file(path) {
            tracing::warn!(path = %path.display(), error = %e, "sweep could not delete a file");
            continue;
        }
        gone(count);
        // Ignore failure: another process may be writing a sibling.
        if let Some(dir) = path.parent() {
            let _ = std::fs::remove_dir(dir);
        }
        removed += 1;
    }
    removed
}
