//! clamd, over its Unix socket or TCP, through the `clamav-client` crate:
//! `VERSION` names the engine and its signatures for the verdict, then
//! the object's bytes go to `INSTREAM` as they are read from the store,
//! never held whole. clamd answers `stream: OK`, `stream: <name> FOUND`,
//! or refuses a stream over its `StreamMaxLength` (it closes the
//! connection, or answers `INSTREAM size limit exceeded`).

use clamav_client::tokio as clam;

use super::{Finding, ScanError, Scanner};
use crate::config::ClamdAddress;
use crate::file::FileMeta;
use crate::store::ObjectStore;

/// clamd at an address.
#[derive(Debug, Clone)]
pub struct Clamd {
    address: ClamdAddress,
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
    /// clamd listening at `address`.
    pub fn new(address: ClamdAddress) -> Self {
        Self { address }
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
        let reply = over!(&self.address, |conn| clam::scan_stream(
            body,
            conn,
            Some(CHUNK)
        ));
        match reply {
            Ok(reply) => finding(&text(&reply), by),
            // clamd closes a stream past its StreamMaxLength before the
            // end: if it still answers, the file is one it will not take.
            Err(e) if self.answers().await => Ok(Finding::Unscannable {
                why: format!("clamd ended the stream ({e}): over its StreamMaxLength, or refused"),
            }),
            Err(e) => Err(ScanError::Unreachable(e.to_string())),
        }
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
