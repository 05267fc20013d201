//! An import's request, checked whole before anything is recorded, and its
//! admission in the one order (DESIGN.md, "Admission"): the issuing rate →
//! one of the caller's imports under way, a turn counted in the records →
//! with a size and digest declared, the file issued under the pending caps.
//! What an import holds is given back when it ends, or is refused.

use url::Url;

use super::{ImportRequest, Imports, fetch};
use crate::error::Error;
use crate::file::{FileId, FileMeta};
use crate::rate::Kind;
use crate::service::uploads::issue::{Counted, UploadRequest};

impl Imports {
    /// The form of `req`, whole, before anything is recorded: one source
    /// (a URL, or the file a host handed over), a URL the guard lets
    /// through, a declared size under the import limit.
    pub(super) fn checked(&self, mut req: ImportRequest) -> Result<(Url, ImportRequest), Error> {
        let raw = match (req.url.take(), req.file.take()) {
            (Some(url), None) => url,
            (None, Some(file)) => {
                req.filename = req.filename.or(file.file_name);
                req.content_type = req.content_type.or(file.mime_type);
                file.download_url
            }
            _ => {
                return Err(Error::Invalid(
                    "give the file's url (or the file the host handed over), one of them".into(),
                ));
            }
        };
        let url =
            Url::parse(raw.trim()).map_err(|e| Error::Invalid(format!("url is not a URL: {e}")))?;
        self.settings
            .guard
            .check_url(&url)
            .map_err(|r| Error::Invalid(format!("{r}; nothing was fetched")))?;
        let max = self.max_bytes();
        if let Some(size) = req.size
            && size > max
        {
            return Err(Error::Invalid(format!(
                "size {size} is over the import limit of {max} bytes; nothing was fetched"
            )));
        }
        Ok((url, req))
    }

    /// Admission, in its one order (the scope is the tool's, the form
    /// checked before): the rate → one of the caller's imports under way,
    /// counted in the records so every replica and function sees it →
    /// with a size and digest declared, the file issued under the pending
    /// caps → only then the fetch. The turn taken, and the file issued if
    /// declared; nothing held when refused.
    pub(super) async fn admitted(
        &self,
        owner: &str,
        id: &FileId,
        url: &Url,
        req: &ImportRequest,
    ) -> Result<(u32, Option<FileMeta>), Error> {
        self.limits.check_rate(Kind::Issue, owner)?;
        let turn = self.take_turn(owner, id).await?;
        let (Some(size), Some(sha256)) = (req.size, req.sha256) else {
            return Ok((turn, None));
        };
        let filename = fetch::kept_name([req.filename.clone(), crate::fetch::url_filename(url)]);
        let request = UploadRequest {
            filename,
            size,
            sha256,
            content_type: req.content_type.clone(),
        };
        let issued = self
            .uploads
            .issue_file_as(owner, request, id.clone(), Counted::CapsOnly)
            .await;
        match issued {
            Ok((file, _, _)) => Ok((turn, Some(file))),
            Err(e) => {
                self.give_turn(owner, turn, id).await;
                Err(e)
            }
        }
    }

    /// Takes one of `owner`'s turns for an import under way (at most
    /// `SLUICE_IMPORTS_PER_USER`), kept in the records so that every
    /// process and function counts the same imports; a turn whose process
    /// died lapses past the import's deadline.
    pub(super) async fn take_turn(&self, owner: &str, id: &FileId) -> Result<u32, Error> {
        let per_user = u32::try_from(self.settings.per_user).unwrap_or(u32::MAX);
        let until = crate::time::now_unix() + self.settings.deadline.as_secs() as i64 + 60;
        match self
            .records
            .take_import_turn(owner, id.as_str(), per_user, until)
            .await?
        {
            Some(turn) => Ok(turn),
            None => Err(Error::Limited {
                message: format!(
                    "you have {per_user} imports under way, the most at once: nothing was fetched; \
                     ask again when one has ended"
                ),
                retry_after: 10,
            }),
        }
    }

    /// Gives back `owner`'s turn `turn`, held by import `id`; a failure is
    /// logged (the turn lapses at the import's deadline).
    pub(super) async fn give_turn(&self, owner: &str, turn: u32, id: &FileId) {
        if let Err(e) = self
            .records
            .give_import_turn(owner, turn, id.as_str())
            .await
        {
            tracing::warn!(file_id = %id, error = %e, "an import's turn was not given back: it lapses");
        }
    }

    /// A declared file whose import ended rejected: reported rejected
    /// (`file.rejected`), its record deleted, its bytes purged.
    pub(super) async fn forget(&self, file: &FileMeta) {
        self.files
            .reporter()
            .reject(file, &format!("import-{}", file.id))
            .await;
        if let Err(e) = self.records.delete(&file.owner, &file.id).await {
            tracing::warn!(file_id = %file.id, error = %e, "a rejected import's record was not deleted");
        }
        if let Err(e) = self.files.custody().purge(file).await {
            tracing::warn!(file_id = %file.id, error = %e, "a rejected import's bytes were not purged");
        }
    }
}
