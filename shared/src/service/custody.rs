//! Where a file's bytes end up once they are all there: kept, the file
//! marked ready (`file.ready`), or purged (every byte, an upload in parts
//! under way included). A delete wins over bytes arriving for a file
//! deleted meanwhile. The gate ([`super::gate`]) and a delete
//! ([`super::files::delete`]) act through it.

use super::base::Base;
use super::intake::Intake;
use crate::error::Error;
use crate::file::FileMeta;

/// Marks files ready and purges their bytes.
#[derive(Clone, Debug)]
pub struct Custody {
    base: Base,
}

impl Custody {
    /// Over `base`'s records and store.
    pub fn new(base: Base) -> Self {
        Self { base }
    }

    /// Marks `file` ready (`file.ready`), unless it was deleted meanwhile.
    pub(crate) async fn ready(&self, file: &FileMeta, jti: Option<&str>) -> Result<(), Error> {
        self.base
            .records()
            .mark_ready(&file.owner, &file.id)
            .await?;
        self.unless_deleted(file).await?;
        crate::telemetry::audit(crate::telemetry::Change::Ready, file, jti);
        Ok(())
    }

    /// Bytes of `file` just stored: purged, and [`Error::NotFound`], if it
    /// was deleted meanwhile.
    pub(crate) async fn unless_deleted(&self, file: &FileMeta) -> Result<(), Error> {
        if self.base.records().deleted(&file.id).await?.is_some() {
            tracing::info!(file_id = %file.id, "bytes arrived for a deleted file: purged");
            self.purge(file).await?;
            return Err(Error::NotFound);
        }
        Ok(())
    }

    /// Removes every byte of `file`: an upload in parts under way (S3's
    /// multipart upload, the local parts) and the object, every version
    /// a download could be given.
    pub(crate) async fn purge(&self, file: &FileMeta) -> Result<(), Error> {
        let key = file.object_key();
        if let Intake::Parts(parts, plan) = self.base.intake(file)
            && let Err(e) = parts.abort(&key, &plan).await
        {
            // A part arriving now holds it; the purge below takes the rest.
            tracing::warn!(file_id = %file.id, error = %e, "could not abort the upload in parts");
        }
        self.base.store().purge(&key).await?;
        Ok(())
    }
}
