//! clamd, over its Unix socket or TCP, through the `clamav-client` crate:
//! `VERSION` names the engine and its signatures for the verdict, then
//! the object's bytes go to `INSTREAM` as they are read from the store,
//! never held whole. clamd answers `stream: OK`, `stream: <name> FOUND`,
//! or refuses a stream over its `StreamMaxLength` (it closes the
//! connection, or answers `INSTREAM size limit exceeded`).
//!
//! Only that refusal is "cannot scan": the answer, or a stream cut off for
//! a file over the configured `StreamMaxLength` while clamd still answers.
//! A read of the store that fails is the store's failure, and any other
//! break (a connection dropped, clamd restarting) gives no finding: the
//! scan is tried again. A hiccup is never a verdict.

use clamav_client::tokio as clam;

use super::{Finding, ScanError, Scanner};
use crate::config::ClamdAddress;
use crate::file::FileMeta;
use crate::store::ObjectStore;

/// clamd at an address.
#[derive(Debug, Clone)]
pub struct Clamd {
    address: ClamdAddress,
    /// clamd's `StreamMaxLength`, as the operator set it.
    stream_max: u64,
}

/// The chunk each `INSTREAM` frame carries at most.
const CHUNK: usize = 256 * 1024;

/// `$call` with `$conn` bound to the crate's connection to `$address`: a
/// Unix socket or TCP, two types the crate's functions are generic over.
macro_rules! over {
    ($address:expr, |$conn:ident| $call:expr) => {
        match $address {
            ClamdAddress::Unix(path) => {
                let $conn = clam::Socket {
                    socket_path: path.as_path(),
                };
                $call.await
            }
            ClamdAddress::Tcp(addr) => {
                let $conn = clam::Tcp {
                    host_address: addr.as_str(),
                };
                $call.await
            }
        }
    };
}

impl Clamd {
    /// clamd listening at `address`, taking streams of up to `stream_max`
    /// bytes (its `StreamMaxLength`).
    pub fn new(address: ClamdAddress, stream_max: u64) -> Self {
        Self {
            address,
            stream_max,
        }
    }

    /// The engine's version and its signatures' (`ClamAV 1.4.6/27000/…`).
    pub async fn version(&self) -> Result<String, ScanError> {
        let reply = over!(&self.address, |conn| clam::get_version(conn))
            .map_err(|e| ScanError::Unreachable(e.to_string()))?;
        Ok(text(&reply))
    }

    /// Whether clamd answers a `PING`.
    async fn answers(&self) -> bool {
        let reply = over!(&self.address, |conn| clam::ping(conn));
        reply.is_ok_and(|r| r == clamav_client::PONG)
    }
}

#[async_trait::async_trait]
impl Scanner for Clamd {
    fn reads_bytes(&self) -> bool {
        true
    }

    async fn scan(&self, file: &FileMeta, store: &dyn ObjectStore) -> Result<Finding, ScanError> {
        let by = self.version().await?;
        let body = store
            .get(&file.object_key())
            .await?
            .ok_or(ScanError::Gone)?;
        // A read of the store that fails is told apart from clamd's side.
        let store_failed = std::sync::Arc::new(std::sync::Mutex::new(None::<String>));
        let noted = store_failed.clone();
        let body = futures_util::StreamExt::inspect(body, move |chunk| {
            if let Err(e) = chunk {
                *noted.lock().unwrap_or_else(|p| p.into_inner()) = Some(e.to_string());
            }
        });
        let reply = over!(&self.address, |conn| clam::scan_stream(
            body,
            conn,
            Some(CHUNK)
        ));
        let reply = match reply {
            Ok(reply) => return finding(&text(&reply), by),
            Err(e) => e,
        };
        let failed = store_failed
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take();
        if let Some(why) = failed {
            return Err(ScanError::Store(crate::store::StoreError::Io(
                std::io::Error::other(why),
            )));
        }
        // clamd closes a stream past its StreamMaxLength before the end:
        // for a file over it, while clamd still answers, that is a file it
        // will not take. Any other break is no verdict.
        if file.size > self.stream_max && self.answers().await {
            return Ok(Finding::Unscannable {
                why: format!(
                    "clamd ended the stream of a file over its StreamMaxLength of {} bytes ({reply})",
                    self.stream_max
                ),
            });
        }
        Err(ScanError::Unreachable(format!(
            "clamd broke off the stream ({reply}): it is scanned again"
        )))
    }
}

/// clamd's reply as text, without its terminating NUL.
fn text(reply: &[u8]) -> String {
    String::from_utf8_lossy(reply)
        .trim_end_matches(['\0', '\n', ' '])
        .to_owned()
}

/// What an `INSTREAM` reply says.
pub fn finding(reply: &str, by: String) -> Result<Finding, ScanError> {
    let said = reply.strip_prefix("stream: ").unwrap_or(reply);
    if said == "OK" {
        return Ok(Finding::Clean { by });
    }
    if let Some(signature) = said.strip_suffix(" FOUND") {
        return Ok(Finding::Infected {
            signature: signature.trim().to_owned(),
            by,
        });
    }
    if said.contains("size limit exceeded") {
        return Ok(Finding::Unscannable {
            why: "over clamd's StreamMaxLength".into(),
        });
    }
    Err(ScanError::Odd(reply.chars().take(200).collect()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_reply_of_instream_is_read() {
        let by = || "ClamAV 1.4.6".to_owned();
        assert_eq!(
            finding("stream: OK", by()).unwrap(),
            Finding::Clean { by: by() }
        );
        assert_eq!(
            finding("stream: Eicar-Test-Signature FOUND", by()).unwrap(),
            Finding::Infected {
                signature: "Eicar-Test-Signature".into(),
                by: by()
            }
        );
        assert!(matches!(
            finding("INSTREAM size limit exceeded. ERROR", by()).unwrap(),
            Finding::Unscannable { .. }
        ));
        assert!(matches!(
            finding("stream: Can't allocate memory ERROR", by()),
            Err(ScanError::Odd(_))
        ));
        assert_eq!(text(b"stream: OK\0"), "stream: OK");
    }

    /// A clamd on a Unix socket of a test's own that answers `VERSION` and
    /// `PING` like clamd, and does `instream` to an `INSTREAM`.
    fn fake_clamd(dir: &std::path::Path, instream: Instream) -> ClamdAddress {
        use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
        let path = dir.join("clamd.sock");
        let listener = tokio::net::UnixListener::bind(&path).unwrap();
        tokio::spawn(async move {
            while let Ok((mut conn, _)) = listener.accept().await {
                tokio::spawn(async move {
                    let mut command = Vec::new();
                    let mut byte = [0u8; 1];
                    while conn.read_exact(&mut byte).await.is_ok() && byte[0] != 0 {
                        command.push(byte[0]);
                    }
                    match (command.as_slice(), instream) {
                        (b"zVERSION", _) => {
                            let _ = conn.write_all(b"ClamAV 1.4.3/27000/test\0").await;
                        }
                        (b"zPING", _) => {
                            let _ = conn.write_all(b"PONG\0").await;
                        }
                        (b"zINSTREAM", Instream::Drops) => {
                            // Takes what came first, then hangs up.
                            let mut some = [0u8; 1024];
                            let _ = conn.read(&mut some).await;
                        }
                        (b"zINSTREAM", Instream::Swallows) => {
                            let mut sink = vec![0u8; 64 * 1024];
                            while conn.read(&mut sink).await.is_ok_and(|n| n > 0) {}
                        }
                        (b"zINSTREAM", Instream::SizeLimit) => {
                            let mut some = [0u8; 1024];
                            let _ = conn.read(&mut some).await;
                            let _ = conn
                                .write_all(b"INSTREAM size limit exceeded. ERROR\0")
                                .await;
                        }
                        _ => {}
                    }
                });
            }
        });
        ClamdAddress::Unix(path)
    }

    #[derive(Debug, Clone, Copy)]
    enum Instream {
        /// The connection dropped after the first bytes.
        Drops,
        /// clamd's own answer to a stream over its limit.
        SizeLimit,
        /// Every byte read, nothing answered until the stream ends.
        Swallows,
    }

    /// One object of `size` bytes, whose read breaks after its first
    /// chunk where `breaks`.
    #[derive(Debug)]
    struct OneObject {
        size: usize,
        breaks: bool,
    }

    #[async_trait::async_trait]
    impl ObjectStore for OneObject {
        async fn head(
            &self,
            _: &crate::file::ObjectKey,
        ) -> Result<Option<crate::store::ObjectInfo>, crate::store::StoreError> {
            Ok(None)
        }
        async fn put(
            &self,
            _: &crate::file::ObjectKey,
            _: u64,
            _: crate::sha::Sha256,
            _: crate::store::ByteStream,
        ) -> Result<(), crate::store::StoreError> {
            Ok(())
        }
        async fn get(
            &self,
            _: &crate::file::ObjectKey,
        ) -> Result<Option<crate::store::ByteStream>, crate::store::StoreError> {
            let chunk = 256 * 1024;
            let mut chunks: Vec<std::io::Result<bytes::Bytes>> = (0..self.size)
                .step_by(chunk)
                .map(|at| Ok(bytes::Bytes::from(vec![b'x'; chunk.min(self.size - at)])))
                .collect();
            if self.breaks {
                chunks.truncate(1);
                chunks.push(Err(std::io::Error::other("the disk said no")));
            }
            Ok(Some(Box::pin(futures_util::stream::iter(chunks))))
        }
        async fn get_range(
            &self,
            key: &crate::file::ObjectKey,
            _: std::ops::Range<u64>,
            _: Option<&str>,
        ) -> Result<Option<crate::store::ByteStream>, crate::store::StoreError> {
            self.get(key).await
        }
        async fn delete(&self, _: &crate::file::ObjectKey) -> Result<(), crate::store::StoreError> {
            Ok(())
        }
        fn access(&self) -> crate::store::Access<'_> {
            crate::store::Access::Proxied
        }
    }

    fn file_of(size: usize) -> FileMeta {
        FileMeta {
            id: crate::file::FileId::random(),
            owner: "alice".into(),
            filename: "a.bin".into(),
            content_type: "application/octet-stream".into(),
            size: size as u64,
            sha256: crate::sha::Sha256::of(b""),
        }
    }

    /// A stream clamd drops while it still answers `PING` is no verdict
    /// (tried again), unless the file is over clamd's `StreamMaxLength`;
    /// a store that cannot be read is the store's failure; clamd's own
    /// size-limit answer is "cannot scan".
    #[tokio::test]
    async fn only_clamds_size_limit_makes_a_file_unscannable() {
        let dir = tempfile::tempdir().unwrap();
        let drops = fake_clamd(dir.path(), Instream::Drops);
        let size = 4 * 1024 * 1024;
        let under = Clamd::new(drops.clone(), 100 * 1024 * 1024);
        let object = OneObject {
            size,
            breaks: false,
        };
        let dropped = under.scan(&file_of(size), &object).await;
        assert!(
            matches!(dropped, Err(ScanError::Unreachable(_))),
            "a dropped stream is tried again: {dropped:?}"
        );
        let over = Clamd::new(drops, 1024 * 1024);
        let cut = over.scan(&file_of(size), &object).await;
        assert!(
            matches!(cut, Ok(Finding::Unscannable { .. })),
            "a file over StreamMaxLength cut off: {cut:?}"
        );
        let broken = OneObject { size, breaks: true };
        let reads = tempfile::tempdir().unwrap();
        let swallows = Clamd::new(fake_clamd(reads.path(), Instream::Swallows), u64::MAX);
        let unread = swallows.scan(&file_of(size), &broken).await;
        assert!(
            matches!(unread, Err(ScanError::Store(_))),
            "the store's failure: {unread:?}"
        );
        let other = tempfile::tempdir().unwrap();
        let limit = Clamd::new(fake_clamd(other.path(), Instream::SizeLimit), u64::MAX);
        let small = OneObject {
            size: 500,
            breaks: false,
        };
        let said = limit.scan(&file_of(500), &small).await;
        assert!(
            matches!(said, Ok(Finding::Unscannable { .. })),
            "clamd's own answer: {said:?}"
        );
    }

    #[test]
    fn addresses_are_a_socket_or_tcp() {
        assert_eq!(
            ClamdAddress::parse("unix:/run/clamav/clamd.ctl"),
            Some(ClamdAddress::Unix("/run/clamav/clamd.ctl".into()))
        );
        assert_eq!(
            ClamdAddress::parse("tcp:127.0.0.1:3310"),
            Some(ClamdAddress::Tcp("127.0.0.1:3310".into()))
        );
        for bad in [
            "",
            "unix:",
            "tcp:host",
            "tcp::3310",
            "tcp:h:0",
            "/run/clamd.ctl",
        ] {
            assert_eq!(ClamdAddress::parse(bad), None, "{bad}");
        }
    }
}
