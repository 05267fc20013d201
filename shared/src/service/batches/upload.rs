//! Many files up in one call and one line: the steps are in the module's
//! first lines ([`super`]).

use super::Batches;
use crate::service::intake::Intake;
use std::collections::{HashMap, HashSet};

use futures_util::{StreamExt as _, TryStreamExt as _};

use super::*;

impl Batches {
    /// Issues every file of `entries` for `owner` at once (see the module's
    /// order).
    pub async fn issue_uploads(
        &self,
        owner: &str,
        entries: Vec<BatchEntry>,
    ) -> Result<BatchTicket, Error> {
        if entries.is_empty() || entries.len() > MAX_BATCH_FILES {
            return Err(Error::Invalid(format!(
                "files must list 1 to {MAX_BATCH_FILES} files, got {}",
                entries.len()
            )));
        }
        let checked = self.checked_entries(owner, entries);
        // The rate counts files: one call of a thousand takes a thousand.
        self.limits.check_rate_n(
            Kind::Issue,
            owner,
            checked.iter().filter(|c| c.is_ok()).count(),
        )?;
        let now = now_unix();
        let found = self.stored_copies(owner, &checked, now).await?;
        let expires_at = now + self.transfers.handle_ttl.as_secs() as i64;
        let files: Vec<Option<FileMeta>> = checked
            .iter()
            .map(|c| c.as_ref().ok().map(|(_, f)| f.clone()))
            .collect();
        let stored: Vec<bool> = found.iter().map(Option::is_some).collect();
        self.admit_batch(owner, &files, &stored, expires_at, now)
            .await?;
        // Copies of what is stored already; a copy the store cannot make
        // is sent like any other file.
        let pairs: Vec<(Option<FileMeta>, Option<StoredCopy>)> =
            files.into_iter().zip(found).collect();
        let copied: Vec<bool> = futures_util::stream::iter(pairs)
            .map(|pair| async move {
                match pair {
                    (Some(file), Some((old, info))) => self.copy_stored(&old, &info, &file).await,
                    _ => Ok(false),
                }
            })
            .buffered(AT_ONCE)
            .try_collect()
            .await?;
        let (items, listed, to_send) = itemized(checked, copied);
        // The uploads in parts begun (S3's upload is made when issued).
        futures_util::stream::iter(to_send)
            .map(|f| async move { self.uploads.begin_upload(&f).await })
            .buffer_unordered(AT_ONCE)
            .try_collect::<Vec<_>>()
            .await?;
        let id = FileId::random();
        let manifest = manifest_of(&listed);
        self.records
            .put_batch(&Batch {
                id: Some(id.clone()),
                owner: owner.to_owned(),
                expires_at,
                files: listed,
            })
            .await?;
        let counts = counted(&items);
        let command = if counts["send"] > 0 {
            Some(
                self.batch_line(&id, expires_at, &manifest, items.len())
                    .await?,
            )
        } else {
            None
        };
        Ok(BatchTicket {
            handle: self.links.batch_handle(&id),
            command,
            counts,
            files: items,
        })
    }

    /// Each entry checked once: its path and the file it would issue, or
    /// why it is refused (a path listed twice among them).
    fn checked_entries(&self, owner: &str, entries: Vec<BatchEntry>) -> Vec<Checked> {
        let mut paths = HashSet::new();
        entries
            .into_iter()
            .map(|e| {
                let (path, file) = self.checked_entry(owner, e)?;
                if !paths.insert(path.clone()) {
                    return Err(format!("path {path} is listed twice: list each file once"));
                }
                Ok((path, file))
            })
            .collect()
    }

    /// The line that sends batch `id`'s files (pinned to its `manifest`'s
    /// digest, `files` of them listed), through its link until `expires_at`.
    async fn batch_line(
        &self,
        id: &FileId,
        expires_at: i64,
        manifest: &Sha256,
        files: usize,
    ) -> Result<String, Error> {
        let link = self.links.batch_upload(id, expires_at);
        tracing::info!(batch = %id, jti = %link.jti, files, "batch issued");
        let (origin, probe) = self.uploads.line_origins().await?;
        let line = curl::batch_command(&link.url, &origin, manifest);
        Ok(curl::or_unreachable(&line, &probe, curl::UPLOAD_INSTEAD))
    }

    /// The caller's own stored copies of the `checked` entries, found by
    /// digest: each distinct size and digest looked up once, however many
    /// entries share it; one an entry, `None` where there is none (or the
    /// entry was refused).
    async fn stored_copies(
        &self,
        owner: &str,
        checked: &[Checked],
        now: i64,
    ) -> Result<Vec<Option<StoredCopy>>, Error> {
        let asked: Vec<Option<(u64, Sha256)>> = checked
            .iter()
            .map(|c| c.as_ref().ok().map(|(_, f)| (f.size, f.sha256)))
            .collect();
        let distinct: HashSet<(u64, Sha256)> = asked.iter().flatten().copied().collect();
        let looked: HashMap<(u64, Sha256), StoredCopy> = futures_util::stream::iter(distinct)
            .map(|(size, sha256)| async move {
                let copy = self.stored_copy(owner, size, sha256, now).await?;
                Ok::<_, Error>(copy.map(|c| ((size, sha256), c)))
            })
            .buffer_unordered(AT_ONCE)
            .try_collect::<Vec<_>>()
            .await?
            .into_iter()
            .flatten()
            .collect();
        Ok(asked
            .iter()
            .map(|a| a.and_then(|k| looked.get(&k).cloned()))
            .collect())
    }

    /// A ready file of `owner`'s with this size and digest whose object is
    /// there and matches, if any, with what the store said of its object.
    async fn stored_copy(
        &self,
        owner: &str,
        size: u64,
        sha256: Sha256,
        now: i64,
    ) -> Result<Option<StoredCopy>, Error> {
        let Some(record) = self.records.find_ready(owner, size, sha256, now).await? else {
            return Ok(None);
        };
        Ok(match self.files.stored(&record.file).await? {
            Stored::Ready(info) => Some((record, info)),
            _ => None,
        })
    }

    /// An entry of `request_uploads` checked as `request_upload` checks a
    /// file: its path and the file it issues, or why it is refused.
    fn checked_entry(&self, owner: &str, e: BatchEntry) -> Checked {
        let path = checked_path(&e.path)?;
        let req = UploadRequest {
            filename: e
                .filename
                .unwrap_or_else(|| curl::local_file_name(&path).to_owned()),
            size: e.size,
            sha256: e.sha256,
            content_type: e.content_type,
        };
        let (filename, content_type) = self.uploads.checked(&req).map_err(|e| e.to_string())?;
        let file = FileMeta {
            id: FileId::random(),
            owner: owner.to_owned(),
            filename,
            content_type,
            size: req.size,
            sha256: req.sha256,
        };
        Ok((path, file))
    }

    /// Copies `old`'s object (`info`: what the store said of it when it was
    /// found) to `file`'s inside the store and marks `file` ready: whether it
    /// was copied. The copy is of that very object (pinned to its ETag);
    /// where the store cannot vouch for the copy's digest, its record keeps
    /// the proof, for that very copy.
    async fn copy_stored(
        &self,
        from: &FileRecord,
        info: &ObjectInfo,
        file: &FileMeta,
    ) -> Result<bool, Error> {
        let old = &from.file;
        let copy = match self
            .store
            .copy(&old.object_key(), &file.object_key(), info)
            .await
        {
            Ok(Some(copy)) => copy,
            Ok(None) => return Ok(false),
            Err(e) => {
                tracing::warn!(file_id = %file.id, error = %e, "a stored copy could not be made: sent again");
                return Ok(false);
            }
        };
        if let Access::Direct(_) = self.store.access()
            && copy.sha256 != Some(file.sha256)
        {
            let proof = crate::service::proof::proven_for(copy.etag.clone());
            self.records
                .swap_proof(&file.owner, &file.id, None, Some(&proof))
                .await?;
        }
        // A copy of a file that passed its malware scan passes with it.
        self.files.gate().copied(file, from).await?;
        tracing::info!(file_id = %file.id, from = %old.id, "stored copy made");
        Ok(true)
    }

    /// Admits and records every file of a batch under the caller's caps at once, in one step of the
    /// record store where it has a single writer
    /// ([`Usage::put_all_within`](crate::records::Usage::put_all_within)): the files to send as
    /// pending ones, and the bytes sent or copied (a copy takes room as much as bytes sent) under
    /// the cap on pending bytes, all of them under the cap on all the caller's bytes; or refuses
    /// the whole batch, recording nothing, saying so.
    async fn admit_batch(
        &self,
        owner: &str,
        files: &[Option<FileMeta>],
        stored: &[bool],
        expires_at: i64,
        now: i64,
    ) -> Result<(), Error> {
        let caps = self.limits.pending_caps();
        let (mut sent, mut sent_bytes, mut new_bytes) = (0u64, 0u64, 0u64);
        for (file, stored) in files.iter().zip(stored) {
            if let Some(file) = file {
                new_bytes = new_bytes.saturating_add(file.size);
                if !stored {
                    sent += 1;
                    sent_bytes = sent_bytes.saturating_add(file.size);
                }
            }
        }
        let issued: Vec<FileRecord> = files
            .iter()
            .zip(stored)
            .filter_map(|(f, stored)| Some((f.as_ref()?, stored)))
            .map(|(f, stored)| FileRecord {
                copy: *stored,
                ..FileRecord::issued(f, expires_at)
            })
            .collect();
        let batch = crate::records::Admission {
            records: &issued,
            sent: (sent, new_bytes),
        };
        let Some(again) = self.limits.admit_all(owner, &batch, now).await? else {
            return Ok(());
        };
        Err(Error::Limited {
            message: format!(
                "this batch is refused whole, nothing was issued: its {sent} files to send \
                 ({sent_bytes} bytes; {new_bytes} new bytes with the copies of files you \
                 stored already) beside your {} pending ({} bytes) pass the limits of {} \
                 pending files and {} pending bytes{}; send fewer files at once, or wait for \
                 your pending files to arrive or expire",
                again.files,
                again.bytes,
                caps.files,
                caps.bytes,
                caps.stored
                    .map(|cap| format!(", or {cap} bytes stored per user"))
                    .unwrap_or_default(),
            ),
            retry_after: 60,
        })
    }

    /// What `GET /b/{token}` answers: one line per file of the batch, in
    /// order, its [`curl::manifest_line`] (the line pins their digest),
    /// then its upload link (`-`: stored already; `x`: deleted or expired)
    /// and its part size in MiB (0: one PUT), tab-separated. Files found
    /// stored are marked ready on the way.
    pub async fn batch_to_send(&self, token: &str) -> Result<String, Error> {
        let (_, batch) = self.batch_of(token, ShortKind::BatchUpload).await?;
        let lines: Vec<String> = futures_util::stream::iter(batch.files)
            .map(|f| async move {
                let (line, record) = self.listed(&f).await?;
                let Some(record) = record else {
                    return Ok(format!("{line}\tx\t0\n"));
                };
                let expires = record.expires_at;
                let (record, state) = self.files.settle_state(record).await?;
                if state == crate::service::files::FileState::Ready {
                    return Ok(format!("{line}\t-\t0\n"));
                }
                let file = record.file;
                let intake = Intake::of(&*self.store, &self.transfers, &file);
                let target = self
                    .uploads
                    .upload_target((&file, &intake), expires, Reader::Model)
                    .await?;
                // How it goes: one resumable stream where sluice receives
                // the bytes, else its part size in MiB (0: one PUT).
                let how = match intake.protocol() {
                    Protocol::Stream => "s".to_owned(),
                    Protocol::Parts(p) => (p.part_size / (1024 * 1024)).to_string(),
                    Protocol::Put => "0".to_owned(),
                };
                Ok::<_, Error>(format!("{line}\t{}\t{how}\n", target.url))
            })
            .buffered(AT_ONCE)
            .try_collect()
            .await?;
        Ok(lines.concat())
    }

    /// A file of a batch as its list begins its line (its manifest line,
    /// without the line break), and its record, if it still has one.
    pub(super) async fn listed(
        &self,
        f: &BatchFile,
    ) -> Result<(String, Option<FileRecord>), Error> {
        let line = curl::manifest_line(&f.sha256, f.size, &f.path)
            .trim_end_matches('\n')
            .to_owned();
        let record = match FileId::parse(&f.id) {
            Some(id) => self.records.find(&id).await?,
            None => None,
        };
        Ok((line, record))
    }

    /// The script a batch's line runs ([`curl::BATCH_SCRIPT`]), to a live
    /// batch link only.
    pub async fn batch_script(&self, token: &str) -> Result<&'static str, Error> {
        self.batch_of(token, ShortKind::BatchUpload).await?;
        Ok(curl::BATCH_SCRIPT)
    }
}

/// Each entry's answer, in the order asked (`copied`: whether a stored
/// copy was made for it), with the batch's files as its record lists them
/// and the files whose bytes are still to be sent.
fn itemized(
    checked: Vec<Checked>,
    copied: Vec<bool>,
) -> (Vec<BatchItem>, Vec<BatchFile>, Vec<FileMeta>) {
    let (mut items, mut listed, mut to_send) = (Vec::new(), Vec::new(), Vec::new());
    for (c, copied) in checked.into_iter().zip(copied) {
        let Ok((path, file)) = c else {
            let why = c.err();
            items.push(BatchItem {
                file_id: None,
                state: EntryState::Refused,
                error: why,
            });
            continue;
        };
        listed.push(BatchFile {
            id: file.id.to_string(),
            path,
            size: file.size,
            sha256: file.sha256,
        });
        items.push(BatchItem {
            file_id: Some(file.id.clone()),
            state: if copied {
                EntryState::Stored
            } else {
                EntryState::Send
            },
            error: None,
        });
        if !copied {
            to_send.push(file);
        }
    }
    (items, listed, to_send)
}

/// How many entries of `items` are to send, stored already, and refused.
fn counted(items: &[BatchItem]) -> BTreeMap<&'static str, usize> {
    let count = |s: EntryState| items.iter().filter(|i| i.state == s).count();
    BTreeMap::from([
        ("send", count(EntryState::Send)),
        ("stored", count(EntryState::Stored)),
        ("refused", count(EntryState::Refused)),
    ])
}
