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
use crate::records::{ScanNote, Verdict};
use crate::time::now_unix;
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

    /// Notes the type told of `file` where no scan will (scanning off):
    /// before it is marked ready, which no note follows.
    pub(super) async fn note_type(&self, file: &FileMeta, detected: Option<String>) {
        if let Some(detected) = detected {
            self.write_note(file, None, detected).await;
        }
    }

    /// Writes `file`'s note of the type told and a `verdict`, now; one that
    /// could not be written is logged (the type is lost, never the file).
    async fn write_note(&self, file: &FileMeta, verdict: Option<Verdict>, detected: String) {
        let note = ScanNote {
            since: now_unix(),
            verdict,
            detected: Some(detected),
        };
        if let Err(e) = self
            .base
            .records()
            .note_scan(&file.owner, &file.id, &note)
            .await
        {
            tracing::warn!(file_id = %file.id, error = %e, "its type was not recorded");
        }
    }

    /// The type `file`'s note keeps (to keep it beside a verdict).
    pub(super) async fn kept_type(&self, file: &FileMeta) -> Option<String> {
        let record = self
            .base
            .records()
            .get(&file.owner, &file.id)
            .await
            .ok()??;
        record.scan?.detected
    }

    /// The first bytes of `file`'s object, at most [`SNIFF_BYTES`].
    async fn first_bytes(&self, file: &FileMeta) -> Result<Vec<u8>, Error> {
        use futures_util::StreamExt as _;
        let n = file.size.min(SNIFF_BYTES);
        let Some(mut stream) = self
            .base
            .store()
            .get_range(&file.object_key(), 0..n, None)
            .await?
        else {
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
