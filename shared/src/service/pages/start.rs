//! A page's start: the file the page hashed, issued once per page under
//! its owner's limits, and where its bytes go (a stream, parts, or one
//! PUT).

use super::Pages;
use super::*;

/// A page's start refused for a file other than the one it issued.
const IN_USE: &str = "This link is in use for another file. Go back to the conversation and \
     ask for a new link.";

impl Pages {
    /// The signed PUT for the file the person picked on `page` (opened by
    /// [`Pages::page_for_start`]) as its file `n` (0 for the first): the
    /// file is issued (once per page and number) with that file's id, for
    /// exactly the size and digest the browser computed.
    pub async fn start_browser_upload(
        &self,
        page: &PageToken,
        n: u32,
        start: BrowserStart,
    ) -> Result<BrowserTarget, Error> {
        if n >= page.files {
            return Err(Error::PageConflict(if page.files == 1 {
                "This link takes one file. Go back to the conversation and ask for a link for more."
            } else {
                "This link takes no more files. Go back to the conversation and ask for a new link for more."
            }));
        }
        let file_id = page.file_id_of(n);
        if start.size > page.max_size {
            return Err(Error::TooLarge(format!(
                "This file is {} bytes; this link accepts files up to {} bytes.",
                start.size, page.max_size
            )));
        }
        // A start without the digest, where it may come with the last
        // bytes: the page sends while it hashes. An empty file's is known.
        let sha256 = match start.sha256 {
            Some(d) => d,
            None if start.size == 0 => Sha256::of(b""),
            None if self.uploads.digest_may_come_last() => Sha256::TO_COME,
            None => return Err(Error::DigestFirst),
        };
        let req = UploadRequest {
            filename: start.filename,
            size: start.size,
            sha256,
            content_type: page.content_type.clone().or(start.content_type),
        };
        // Everything checked first; then the page's own rate, so whoever
        // holds its URL cannot drain its owner's issuing rate with starts.
        if sha256.is_to_come() {
            self.uploads.form(&req)?;
        } else {
            self.uploads.checked(&req)?;
        }
        self.limits.check_rate(Kind::PageStarts, file_id.as_str())?;
        let (file, expires_at) = self.page_file(page, req, file_id).await?;
        self.target(file, expires_at).await
    }

    /// The page's file `file_id`, issued once for `req`: the one an earlier
    /// start (or a start beside this one) issued, if it is the same file.
    async fn page_file(
        &self,
        page: &PageToken,
        req: UploadRequest,
        file_id: crate::file::FileId,
    ) -> Result<(crate::file::FileMeta, i64), Error> {
        let again = (req.size, req.filename.clone(), req.sha256);
        match self.records.get(&page.owner, &file_id).await? {
            Some(record) => self.page_file_again(record, again).await,
            None => match self.issue(page, req, file_id.clone()).await {
                Ok((file, _, expires_at)) => Ok((file, expires_at)),
                // Another start of this page recorded its file first:
                // the record is written once, so that one stands.
                Err(Error::AlreadyUploaded) => {
                    let record = self
                        .records
                        .get(&page.owner, &file_id)
                        .await?
                        // Refused, and not there: the page's file was
                        // deleted, and stays so.
                        .ok_or(Error::PageConflict(
                            "this page's file was deleted; ask for a new page",
                        ))?;
                    self.page_file_again(record, again).await
                }
                Err(e) => Err(e),
            },
        }
    }

    /// The page's file `file_id` issued for `req`: its digest declared, or
    /// to come with its last bytes.
    async fn issue(
        &self,
        page: &PageToken,
        req: UploadRequest,
        file_id: crate::file::FileId,
    ) -> Result<(crate::file::FileMeta, String, i64), Error> {
        if req.sha256.is_to_come() {
            self.uploads
                .issue_file_to_come(&page.owner, req, file_id)
                .await
        } else {
            self.uploads.issue_file(&page.owner, req, file_id).await
        }
    }

    /// Where the page sends `file`'s bytes: the parts of the upload line
    /// (so a page started again, a reload, sends only those not stored
    /// yet), one resumable stream (a page started again goes on from where
    /// the upload stands), or one PUT.
    async fn target(
        &self,
        file: crate::file::FileMeta,
        expires_at: i64,
    ) -> Result<BrowserTarget, Error> {
        let intake = self.uploads.begin_upload(&file).await?;
        let upload = match &intake {
            // In parts: the same parts as the upload line's, so a page
            // started again (a reload) sends only those not stored yet.
            Intake::Parts(_, plan) => {
                let upload = self
                    .uploads
                    .upload_target((&file, &intake), expires_at, Reader::Model)
                    .await?;
                return Ok(BrowserTarget {
                    parts: Some(PageParts {
                        link: upload.url.clone(),
                        count: plan.count,
                        part_size: plan.part_size,
                        origin: self.uploads.part_origin().await?,
                    }),
                    upload,
                    file_id: file.id,
                    stream: None,
                });
            }
            // As one resumable stream: a page started again goes on from
            // where the upload stands.
            Intake::Stream(_) => {
                let upload = self
                    .uploads
                    .upload_target((&file, &intake), expires_at, Reader::Page)
                    .await?;
                return Ok(BrowserTarget {
                    stream: Some(PageStream {
                        link: upload.url.clone(),
                        chunk_size: self.transfers.part_bytes,
                    }),
                    upload,
                    file_id: file.id,
                    parts: None,
                });
            }
            Intake::Put(_) => {
                self.uploads
                    .upload_target((&file, &intake), expires_at, Reader::Page)
                    .await?
            }
        };
        Ok(BrowserTarget {
            upload,
            file_id: file.id,
            parts: None,
            stream: None,
        })
    }

    /// The file a page already issued, for another start of the page: the
    /// same file may try again (a network failure mid-upload, a reload);
    /// another may not. The same: the same size and digest; where either
    /// digest is still to come, the same size and name (a reload of a page
    /// that sends while it hashes). A digest given where the record's is to
    /// come is declared now, so the upload's last bytes are checked against it.
    async fn page_file_again(
        &self,
        record: crate::records::FileRecord,
        (size, filename, sha256): (u64, String, Sha256),
    ) -> Result<(crate::file::FileMeta, i64), Error> {
        let record = self.files.settle(record).await?;
        if record.ready {
            return Err(Error::PageConflict(
                "A file was already uploaded with this link. Go back to the conversation \
                 and ask for a new link to upload another.",
            ));
        }
        let given = sha256.declared();
        let same = record.file.size == size
            && match (record.file.digest(), given) {
                (Some(kept), Some(given)) => kept == given,
                _ => record.file.filename == filename.trim(),
            };
        if !same {
            return Err(Error::PageConflict(IN_USE));
        }
        match (record.file.digest(), given) {
            (None, Some(given)) => match self.files.declare(record.file, given).await {
                Err(Error::DigestDeclared(_)) => Err(Error::PageConflict(IN_USE)),
                declared => Ok((declared?, record.expires_at)),
            },
            _ => Ok((record.file, record.expires_at)),
        }
    }
}
