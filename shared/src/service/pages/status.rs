//! A page's status: its files' records settled against the store, waited
//! on within the status call's budget.

use super::Pages;
use super::*;
use crate::service::files::FileState;

impl Pages {
    /// Where the browser upload `upload_id` of `owner` stands: for a page
    /// of several files, `ready` once a file is ready and none is still on
    /// its way, with every file uploaded so far.
    pub async fn upload_status(&self, owner: &str, upload_id: &str) -> Result<UploadStatus, Error> {
        self.upload_status_by(owner, upload_id, Look::Store).await
    }

    /// [`Pages::upload_status`], looking only as far as `look` says: a
    /// waiting call's polls read the records alone, and look at the store
    /// (a HEAD and a listing of parts on S3) only now and then.
    pub async fn upload_status_by(
        &self,
        owner: &str,
        upload_id: &str,
        look: Look,
    ) -> Result<UploadStatus, Error> {
        let (file_id, page_expires, files) = self
            .links
            .open_upload_id(owner, upload_id)
            .ok_or(Error::NotAnUploadId)?;
        if files == 1 {
            return self.file_status(owner, &file_id, page_expires, look).await;
        }
        let page = PageToken {
            owner: owner.to_owned(),
            file_id,
            filename: None,
            content_type: None,
            max_size: 0,
            files,
            expires_at: page_expires,
        };
        let (mut picked, mut arriving, mut held) = (Vec::new(), None::<(u64, u64)>, false);
        for n in 0..files {
            let status = self
                .file_status(owner, &page.file_id_of(n), page_expires, look)
                .await?;
            match (status.state, status.handle, status.file_id, status.filename) {
                (UploadState::Ready, Some(handle), Some(id), Some(filename)) => {
                    picked.push(PickedFile {
                        handle,
                        file_id: FileId::parse(&id).ok_or_else(|| Error::bug("a file id"))?,
                        filename,
                        size: status.size.unwrap_or(0),
                        sha256: status.sha256.unwrap_or_else(|| Sha256::of(b"")),
                    });
                }
                (UploadState::Scanning, ..) => held = true,
                (UploadState::Pending, ..) => {
                    if let (Some(size), Some(received)) = (status.size, status.received) {
                        let (s, r) = arriving.unwrap_or((0, 0));
                        arriving = Some((s + size, r + received));
                    }
                }
                _ => {}
            }
        }
        let state = match (picked.is_empty(), arriving.is_some()) {
            (_, true) => UploadState::Pending,
            // Every file in, one still held for its scan.
            _ if held => UploadState::Scanning,
            (false, false) => UploadState::Ready,
            (true, false) if now_unix() >= page_expires => UploadState::Expired,
            (true, false) => UploadState::Pending,
        };
        Ok(UploadStatus {
            size: arriving.map(|(s, _)| s),
            received: arriving.map(|(_, r)| r),
            files: Some(picked),
            ..UploadStatus::of(state)
        })
    }

    /// Where one file of a page stands.
    async fn file_status(
        &self,
        owner: &str,
        file_id: &FileId,
        page_expires: i64,
        look: Look,
    ) -> Result<UploadStatus, Error> {
        let status = UploadStatus::of;
        let now = now_unix();
        let Some(record) = self.records.get(owner, file_id).await? else {
            return Ok(status(if now >= page_expires {
                UploadState::Expired
            } else {
                UploadState::Pending
            }));
        };
        let (record, state) = match look {
            Look::Store => {
                let (record, state) = self.files.settle_state(record).await?;
                (record, Some(state))
            }
            Look::Records => {
                let held = self.files.held(&record);
                (record, held)
            }
        };
        match state {
            Some(FileState::Scanning) if !record.ready => {
                return Ok(UploadStatus {
                    file_id: Some(record.file.id.to_string()),
                    filename: Some(record.file.filename),
                    size: Some(record.file.size),
                    sha256: Some(record.file.sha256),
                    ..status(UploadState::Scanning)
                });
            }
            Some(FileState::Rejected) if !record.ready => {
                return Ok(UploadStatus {
                    reason: record.refusal(),
                    file_id: Some(record.file.id.to_string()),
                    filename: Some(record.file.filename),
                    ..status(UploadState::Rejected)
                });
            }
            _ => {}
        }
        if !record.ready {
            if now >= page_expires.max(record.expires_at) {
                return Ok(status(UploadState::Expired));
            }
            return self.arriving(&record.file, look).await;
        }
        if record.expires_at <= now {
            return Ok(status(UploadState::Expired));
        }
        Ok(UploadStatus {
            handle: Some(self.links.handle(&record.file.id)),
            file_id: Some(record.file.id.to_string()),
            filename: Some(record.file.filename),
            size: Some(record.file.size),
            sha256: Some(record.file.sha256),
            ..status(UploadState::Ready)
        })
    }

    /// A file the person chose, on its way: how much of it has arrived
    /// (with the records alone, what this process sees arriving: no read).
    async fn arriving(
        &self,
        file: &crate::file::FileMeta,
        look: Look,
    ) -> Result<UploadStatus, Error> {
        let progress = match look {
            Look::Store => self.uploads.progress_of(file).await?,
            Look::Records => self.uploads.progress_seen(file),
        };
        Ok(UploadStatus {
            size: Some(progress.total),
            received: Some(progress.received),
            ..UploadStatus::of(UploadState::Pending)
        })
    }
}
