//! The gate's first look at bytes that arrived: the type their first
//! [`SNIFF_BYTES`] show ([`crate::types`]), under `SLUICE_TYPE_CHECK`.
//! `note`: told, and kept in the record's note (shown by `list_files`,
//! signed in the receipt). `refuse`: an executable or an archive declared a
//! document is rejected at once: noted, its bytes deleted, `file.rejected`
//! with the reason, and the upload answered with it. A store that cannot
//! be read now costs the file its type, never its upload.

use super::Gate;
use crate::config::TypeCheck;
use crate::error::Error;
use crate::file::FileMeta;
use crate::records::Verdict;
use crate::types::{SNIFF_BYTES, contradiction, detect};

impl Gate {
    /// The type `file`'s first bytes show (`None`: none told, or the check
    /// is off); [`Error::ScanRejected`] for a file refused for it, its
    /// bytes deleted.
    pub(super) async fn typed(&self, file: &FileMeta) -> Result<Option<String>, Error> {
        if self.types == TypeCheck::Off || file.size == 0 {
            return Ok(None);
        }
        let first = match self.first_bytes(file).await {
            Ok(first) => first,
            Err(e) => {
                tracing::warn!(file_id = %file.id, error = %e, "its first bytes could not be read: no type told");
                return Ok(None);
            }
        };
        let Some(detected) = detect(&first) else {
            return Ok(None);
        };
        if self.types == TypeCheck::Refuse
            && let Some(why) = contradiction(&file.content_type, &detected)
        {
            return Err(self.mistyped(file, detected.mime, why).await);
        }
        if detected.mime != file.content_type {
            tracing::info!(file_id = %file.id, declared = %file.content_type, detected = %detected.mime, "its bytes show another type than declared");
        }
        Ok(Some(detected.mime))
    }

    /// The first bytes of `file`'s object, at most [`SNIFF_BYTES`].
    async fn first_bytes(&self, file: &FileMeta) -> Result<Vec<u8>, Error> {
        use futures_util::StreamExt as _;
        let n = file.size.min(SNIFF_BYTES);
        let Some(mut stream) = self.store.get_range(&file.object_key(), 0..n, None).await? else {
            return Ok(Vec::new());
        };
        let mut first = Vec::with_capacity(n as usize);
        while let Some(chunk) = stream.next().await {
            first.extend_from_slice(&chunk.map_err(Error::internal)?);
            if first.len() as u64 >= n {
                break;
            }
        }
        first.truncate(n as usize);
        Ok(first)
    }

    /// Refuses `file` for its type: noted, its bytes deleted, reported
    /// (`file.rejected`, with `why`); the error the upload is answered.
    async fn mistyped(&self, file: &FileMeta, detected: String, why: String) -> Error {
        let verdict = Verdict::Mistyped { why: why.clone() };
        self.write_note(file, Some(verdict), detected).await;
        tracing::warn!(target: "sluice::audit", change = "rejected", file_id = %file.id, owner = %file.owner, reason = %why, "file rejected for its type: its bytes are deleted");
        if let Err(e) = self
            .custody
            .refuse(file, &format!("type-{}", file.id), &why)
            .await
        {
            tracing::warn!(file_id = %file.id, error = %e, "the refused file's bytes were not all deleted");
        }
        Error::ScanRejected(why)
    }
}
