//! Where the bytes of an import not declared wait until they are known:
//! a file of sluice's alone (0600) in the store's own private directory,
//! counted against the store's quota as it grows ([`crate::store::Quota`],
//! the one place that reserves against it), given back and removed when
//! dropped. A store without a quota (S3) has no directory of its own: the
//! spool is then `spool/` (0700) in the data directory (on Lambda, the
//! function's own `/tmp/sluice`), never the shared temporary directory.

use std::path::PathBuf;

use tokio::io::AsyncWriteExt as _;

use crate::file::FileId;
use crate::store::{ByteStream, ObjectStore, Quota};

/// One import's spool.
pub(super) struct Spool {
    path: PathBuf,
    file: Option<tokio::fs::File>,
    quota: Option<Quota>,
    /// Bytes of the quota this spool holds.
    held: u64,
}

/// Why a spool refused bytes.
#[derive(Debug)]
pub(super) enum Refused {
    /// The store's quota has no room for them.
    Full,
    /// The disk failed.
    Io(std::io::Error),
}

impl Spool {
    /// A new spool for import `id`, beside `store`'s objects, or in
    /// `elsewhere` (private, in the data directory) for a store without
    /// a directory of its own.
    pub(super) async fn create(
        store: &dyn ObjectStore,
        elsewhere: &std::path::Path,
        id: &FileId,
    ) -> std::io::Result<Self> {
        let (dir, quota) = match store.scratch() {
            Some(scratch) => (scratch.dir, Some(scratch.quota)),
            None => (elsewhere.to_path_buf(), None),
        };
        let path = dir.join(format!("import-{id}"));
        let at = path.clone();
        let file = tokio::task::spawn_blocking(move || -> std::io::Result<_> {
            use std::os::unix::fs::OpenOptionsExt as _;
            crate::store::private_dir(&dir)?;
            // A name no one else made: never a file or link already there.
            std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(0o600)
                .open(at)
        })
        .await
        .map_err(std::io::Error::other)??;
        Ok(Self {
            path,
            file: Some(tokio::fs::File::from_std(file)),
            quota,
            held: 0,
        })
    }

    /// Appends `chunk`, reserving its bytes of the quota first.
    pub(super) async fn write(&mut self, chunk: &[u8]) -> Result<(), Refused> {
        if let Some(quota) = &self.quota {
            quota
                .reserve(chunk.len() as u64)
                .map_err(|_| Refused::Full)?;
            self.held += chunk.len() as u64;
        }
        let file = self
            .file
            .as_mut()
            .ok_or_else(|| Refused::Io(std::io::Error::other("the spool was already read")))?;
        file.write_all(chunk).await.map_err(Refused::Io)
    }

    /// The bytes kept, as a stream, for the store's put: the quota they
    /// held is given back first, for the put reserves them itself.
    pub(super) async fn read(&mut self) -> std::io::Result<ByteStream> {
        if let Some(mut file) = self.file.take() {
            file.flush().await?;
        }
        self.give_back();
        let file = tokio::fs::File::open(&self.path).await?;
        Ok(Box::pin(futures_util::stream::unfold(
            file,
            |mut file| async move {
                use tokio::io::AsyncReadExt as _;
                let mut buf = vec![0u8; 256 * 1024];
                match file.read(&mut buf).await {
                    Ok(0) => None,
                    Ok(n) => {
                        buf.truncate(n);
                        Some((Ok(bytes::Bytes::from(buf)), file))
                    }
                    Err(e) => Some((Err(e), file)),
                }
            },
        )))
    }

    fn give_back(&mut self) {
        if let Some(quota) = &self.quota {
            quota.release(std::mem::take(&mut self.held));
        }
    }
}

impl Drop for Spool {
    fn drop(&mut self) {
        self.give_back();
        let _ = std::fs::remove_file(&self.path);
    }
}
