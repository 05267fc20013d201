//! Many files down in one call and one line: the steps are in the
//! module's first lines ([`super`]).

use super::Batches;
use std::collections::HashSet;

use futures_util::{StreamExt as _, TryStreamExt as _};

use super::*;
use crate::service::downloads::MODEL_READS;

/// The most a tool's summary adds to the text of a batch's answer.
const SUMMARY_BYTES: usize = 128;

impl Batches {
    /// The script a download batch's line runs ([`curl::FETCH_SCRIPT`]),
    /// to a live list link only (asking for it does not spend the link).
    pub async fn fetch_script(&self, token: &str) -> Result<&'static str, Error> {
        self.batch_of(token, ShortKind::BatchDownload).await?;
        Ok(curl::FETCH_SCRIPT)
    }

    /// Issues one line that downloads every file `files` names (file ids,
    /// handles, or batch handles, in order) for `caller`; or, `zip`, one
    /// single-use link to them all as one zip ([`super::zip`]).
    pub async fn issue_downloads(
        &self,
        caller: &Caller,
        files: Vec<String>,
        zip: bool,
    ) -> Result<DownloadBatch, Error> {
        if zip && !self.zips.built() {
            return Err(Error::Invalid(
                "a zip of many files is built by a server that stays up or by the importer function, and this deployment has neither; run the line (call again without zip)"
                    .to_owned(),
            ));
        }
        let wanted = self.expanded(caller, files, MAX_BATCH_FILES).await?;
        if wanted.is_empty() {
            return Err(Error::Invalid(format!(
                "files must name 1 to {MAX_BATCH_FILES} files, got {}",
                wanted.len()
            )));
        }
        self.limits.check_rate(Kind::Links, &caller.owner)?;
        // An owned copy for the stream: a stream of borrowed items makes the
        // tool's future not Send-general enough for rmcp's handler.
        let found: Vec<Result<FileMeta, String>> = futures_util::stream::iter(wanted.clone())
            .map(|f| async move {
                let file = match self.files.resolve_file(caller, &f).await {
                    Ok(file) => file,
                    Err(e @ (Error::StoreUnavailable | Error::Internal(_))) => return Err(e),
                    Err(e) => return Ok(Err(e.to_string())),
                };
                let stored = self.files.stored(&file).await?;
                Ok(stored
                    .deliverable()
                    .map(|_| file)
                    .map_err(|e| e.to_string()))
            })
            .buffered(AT_ONCE)
            .try_collect()
            .await?;
        let (items, listed) = download_items(&found, &wanted, zip);
        if listed.is_empty() {
            return Ok(DownloadBatch {
                command: None,
                zip: None,
                files: items,
            });
        }
        self.charge_owners(&found).await?;
        let expires_at = now_unix() + self.transfers.link_ttl.as_secs() as i64;
        let id = FileId::random();
        let manifest = manifest_of(&listed);
        self.records
            .put_batch(&Batch {
                id: Some(id.clone()),
                owner: caller.owner.clone(),
                expires_at,
                files: listed,
            })
            .await?;
        if zip {
            let link = self.links.batch_zip(&id, expires_at);
            self.zips.start(&id).await?;
            tracing::info!(jti = %link.jti, files = items.len(), "download zip issued");
            return Ok(DownloadBatch {
                command: None,
                zip: Some(super::zip::ticket(&id, link.url, expires_at)),
                files: items,
            });
        }
        let link = self.links.batch_download(&id, expires_at);
        tracing::info!(jti = %link.jti, files = items.len(), "download batch issued");
        let url = link.url;
        Ok(self.with_file_refs(
            DownloadBatch {
                command: Some(curl::fetch_command(&url, &manifest)),
                zip: None,
                files: items,
            },
            &found,
        ))
    }

    /// `batch` with a file reference (a single-use link of its own) on each
    /// of its first `found` files whose reference still fits what a model
    /// reads of a batch's answer (1 KiB and 64 bytes a file): whole, else
    /// without its optional name and type (as `get_download_url`'s gives
    /// way), else none from there on.
    fn with_file_refs(
        &self,
        mut batch: DownloadBatch,
        found: &[Result<FileMeta, String>],
    ) -> DownloadBatch {
        // The text adds the answer's summary line to the same JSON.
        let max = MODEL_READS + PER_FILE_READS * found.len() - SUMMARY_BYTES;
        let fits = |b: &DownloadBatch| serde_json::to_vec(b).is_ok_and(|v| v.len() <= max);
        for (i, file) in found.iter().enumerate() {
            let Ok(file) = file else { continue };
            let Some(mut file_ref) = self.downloads.download_ticket(file).file_ref else {
                break;
            };
            batch.files[i].file_ref = Some(file_ref.clone());
            if fits(&batch) {
                continue;
            }
            (file_ref.file_name, file_ref.mime_type) = (None, None);
            batch.files[i].file_ref = Some(file_ref);
            if !fits(&batch) {
                batch.files[i].file_ref = None;
                break;
            }
        }
        batch
    }

    /// Takes the bytes of the `found` files from each owner's hourly
    /// allowance, once an owner, for all of their files.
    async fn charge_owners(&self, found: &[Result<FileMeta, String>]) -> Result<(), Error> {
        let mut by_owner: BTreeMap<&str, FileMeta> = BTreeMap::new();
        for file in found.iter().flatten() {
            by_owner
                .entry(file.owner.as_str())
                .and_modify(|sum| sum.size = sum.size.saturating_add(file.size))
                .or_insert_with(|| file.clone());
        }
        for sum in by_owner.values() {
            self.limits.charge_download(sum).await?;
        }
        Ok(())
    }

    /// What `GET /g/{token}` answers, once: one line per file of the batch,
    /// in order, its [`curl::manifest_line`] (SHA-256, size, name: the line
    /// pins their digest) and a fresh single-use download link (`x`: the
    /// file was deleted or has expired), tab-separated.
    pub async fn batch_links(&self, token: &str) -> Result<String, Error> {
        let (short, batch) = self.batch_of(token, ShortKind::BatchDownload).await?;
        let jti = short.jti();
        if self
            .ledger
            .spend(&jti, short.expires_at.unwrap_or(0))
            .await?
            == Spend::AlreadySpent
        {
            tracing::info!(%jti, "spent batch link presented again");
            return Err(Error::NotFound);
        }
        // The records read a few at once, as `batch_to_send` reads them.
        let lines: Vec<String> = futures_util::stream::iter(batch.files)
            .map(|f| async move {
                let (line, record) = self.listed(&f).await?;
                Ok::<_, Error>(match record {
                    Some(record) => {
                        let ticket = self.downloads.download_ticket(&record.file);
                        format!("{line}\t{}\n", ticket.download.url)
                    }
                    None => format!("{line}\tx\n"),
                })
            })
            .buffered(AT_ONCE)
            .try_collect()
            .await?;
        Ok(lines.concat())
    }
}

/// Each file asked for as the answer lists it (its name, if not its own;
/// or why it is left out), and the batch's files under the names they are
/// saved as, collisions resolved in the order asked (`zip`: the zip's own
/// `SHA256SUMS` taken first).
fn download_items(
    found: &[Result<FileMeta, String>],
    wanted: &[String],
    zip: bool,
) -> (Vec<DownloadItem>, Vec<BatchFile>) {
    let mut taken = HashSet::new();
    if zip {
        taken.insert(super::zip::SUMS.to_lowercase());
    }
    let mut listed = Vec::new();
    let items = found
        .iter()
        .zip(wanted)
        .map(|(f, asked)| match f {
            Ok(file) => {
                let own = file.safe_name();
                let name = unique_name(&own, &mut taken);
                listed.push(BatchFile {
                    id: file.id.to_string(),
                    path: name.clone(),
                    size: file.size,
                    sha256: file.sha256,
                });
                DownloadItem {
                    file_id: Some(file.id.clone()),
                    name: (name != own).then_some(name),
                    error: None,
                    file_ref: None,
                }
            }
            Err(why) => DownloadItem {
                file_id: None,
                name: None,
                error: Some(format!("{}: {why}", short_input(asked))),
                file_ref: None,
            },
        })
        .collect();
    (items, listed)
}
