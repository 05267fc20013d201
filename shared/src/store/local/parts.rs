//! Uploads in parts to a directory: each part is written in place, at its
//! offset in one staging file per upload, and marked stored (an empty file
//! named by its number, beside it) once verified and synced. Joining is a
//! read that proves the whole and a rename, never a copy: this store
//! proves what it joins, as it checks everything it writes.

use std::fs::File;
use std::io::{self, Read};
use std::path::PathBuf;

use super::files::{join_error, refuse_if_there, write_verified};
use super::slots::release;
use super::{LocalStore, READ_CHUNK};
use crate::file::ObjectKey;
use crate::multipart::Plan;
use crate::sha::{Sha256, Verifier};
use crate::store::{ByteStream, Joined, PartStore, StoreError};

#[async_trait::async_trait]
impl PartStore for LocalStore {
    async fn begin(&self, _key: &ObjectKey, _content_type: &str) -> Result<(), StoreError> {
        // The staging file is made by the first part that arrives.
        Ok(())
    }

    async fn put_part(
        &self,
        key: &ObjectKey,
        n: u32,
        offset: u64,
        size: u64,
        sha256: Sha256,
        body: ByteStream,
    ) -> Result<(), StoreError> {
        let (staging, marker) = (self.staging(key), self.path(&key.part(n)));
        // One upload of a part at a time; its bytes count against the quota.
        // Stored already is decided under that claim, so two uploads of one
        // part never both write; and a joined file takes no more parts.
        let guard = self.begin_upload(&key.part(n), size)?;
        refuse_if_there(&marker).await?;
        refuse_if_there(&self.path(key)).await?;
        let _slot = self.transfer_slot(key)?;
        let file = tokio::task::spawn_blocking(move || -> io::Result<File> {
            use std::io::Seek as _;
            use std::os::unix::fs::OpenOptionsExt as _;
            std::fs::create_dir_all(staging.parent().expect("a staging file has a directory"))?;
            let mut file = std::fs::OpenOptions::new()
                .write(true)
                .create(true)
                .truncate(false)
                .mode(0o600)
                .open(&staging)?;
            file.seek(io::SeekFrom::Start(offset))?;
            Ok(file)
        })
        .await
        .map_err(join_error)??;
        let file = write_verified(file, size, sha256, body).await?;
        tokio::task::spawn_blocking(move || -> io::Result<()> {
            file.sync_data()?;
            File::create(&marker)?;
            File::open(marker.parent().expect("a marker has a directory"))?.sync_all()
        })
        .await
        .map_err(join_error)??;
        guard.stored();
        Ok(())
    }

    async fn stored_parts(&self, key: &ObjectKey) -> Result<Vec<u32>, StoreError> {
        let dir = self.objects.join(key.parts_prefix());
        tokio::task::spawn_blocking(move || {
            let mut parts = Vec::new();
            let entries = match std::fs::read_dir(&dir) {
                Ok(entries) => entries,
                Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(parts),
                Err(e) => return Err(StoreError::Io(e)),
            };
            for entry in entries {
                if let Some(n) = entry?.file_name().to_str().and_then(|n| n.parse().ok()) {
                    parts.push(n);
                }
            }
            parts.sort_unstable();
            Ok(parts)
        })
        .await
        .map_err(join_error)?
    }

    async fn join(
        &self,
        key: &ObjectKey,
        plan: &Plan,
        sha256: Sha256,
    ) -> Result<Joined, StoreError> {
        // One read of the file on the local disk: proven in one call, by
        // one completion at a time (the others are told it is under way),
        // in a transfer slot like any read of a whole file. A file joined
        // already is not read again.
        let (staging, dest) = (self.staging(key), self.path(key));
        // Joined (and so proven) already: the same answer.
        if refuse_if_there(&dest).await.is_err() {
            return Ok(Joined::Proven);
        }
        let _claim = self.begin_join(key)?;
        let _slot = self.transfer_slot(key)?;
        if refuse_if_there(&dest).await.is_err() {
            return Ok(Joined::Proven);
        }
        let dir = self.objects.join(key.parts_prefix());
        let markers: Vec<PathBuf> = plan.numbers().map(|n| self.path(&key.part(n))).collect();
        let plan = *plan;
        let joined = tokio::task::spawn_blocking(move || -> Result<(), StoreError> {
            // Every part marked stored before anything is read.
            for (n, marker) in plan.numbers().zip(&markers) {
                if !marker.exists() {
                    return Err(StoreError::MissingPart(n));
                }
            }
            prove_file(&staging, plan.size, sha256)?;
            let parent = dest.parent().expect("object keys have a directory");
            std::fs::create_dir_all(parent)?;
            // Moved, not linked: the staging name is gone with the proof,
            // so no later write to it can reach the object. Under the
            // claim, with the object checked absent, nothing is clobbered.
            std::fs::rename(&staging, &dest)?;
            File::open(parent)?.sync_all()?;
            Ok(())
        })
        .await
        .map_err(join_error)?;
        // Joined, or not the file declared: the parts go either way (no
        // upload of them can ever match). Their bytes were counted as they
        // arrived; the object keeps them counted, a mismatch frees them,
        // once: under the claim, and the next completion finds no part.
        if matches!(joined, Ok(()) | Err(StoreError::Mismatch(_))) {
            if joined.is_err() {
                release(&self.used, plan.size);
            }
            tokio::task::spawn_blocking(move || {
                let _ = std::fs::remove_dir_all(dir);
            })
            .await
            .map_err(join_error)?;
        }
        joined.map(|()| Joined::Proven)
    }

    async fn abort(&self, key: &ObjectKey, _plan: &Plan) -> Result<(), StoreError> {
        let _claim = self.begin_join(key)?;
        crate::store::ObjectStore::delete(self, key).await
    }
}

/// The proof: the file at `path`, read once, is `size` bytes of `sha256`.
fn prove_file(path: &std::path::Path, size: u64, sha256: Sha256) -> Result<(), StoreError> {
    let mut verifier = Verifier::new(size, sha256);
    let mut file = File::open(path)?;
    let mut buf = vec![0u8; READ_CHUNK];
    loop {
        let read = file.read(&mut buf)?;
        if read == 0 {
            break;
        }
        verifier.update(&buf[..read])?;
    }
    verifier.finish()?;
    Ok(())
}
