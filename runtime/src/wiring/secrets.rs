//! The master secret of a local data directory, and its keyring.

use std::io;
use std::path::Path;

use sluice::config::Config;
use sluice::keys::{Keyring, MasterSecret};

use super::StartError;
use super::error::io_error;

/// The file in a data directory that keeps its generated master secret.
pub const SECRET_FILE: &str = "master.key";

/// The master secret of a local data directory: the configured one, or the
/// one generated on first run and kept (mode 0600) in [`SECRET_FILE`].
pub fn local_secret(config: &Config) -> Result<MasterSecret, StartError> {
    if let Some(secret) = &config.keys.master_secret {
        return Ok(secret.clone());
    }
    let dir = &config.data.path;
    sluice::store::private_dir(dir).map_err(io_error(format!("creating {}", dir.display())))?;
    let path = dir.join(SECRET_FILE);
    match std::fs::read(&path) {
        Ok(bytes) => MasterSecret::new(trim_newline(bytes)).map_err(|e| StartError::Io {
            what: format!("reading {}", path.display()),
            source: io::Error::new(io::ErrorKind::InvalidData, e),
        }),
        Err(e) if e.kind() == io::ErrorKind::NotFound => create_secret(&path),
        Err(e) => Err(io_error(format!("reading {}", path.display()))(e)),
    }
}

fn trim_newline(mut bytes: Vec<u8>) -> Vec<u8> {
    while bytes.last().is_some_and(|b| b.is_ascii_whitespace()) {
        bytes.pop();
    }
    bytes
}

/// Writes a fresh secret without overwriting one a concurrent first run made.
fn create_secret(path: &Path) -> Result<MasterSecret, StartError> {
    let secret = sluice::keys::random_id::<32>();
    let bytes = create_private(path, secret.as_bytes())?;
    MasterSecret::new(trim_newline(bytes)).map_err(|e| StartError::Io {
        what: format!("reading {}", path.display()),
        source: io::Error::new(io::ErrorKind::InvalidData, e),
    })
}

/// Writes `bytes` to a new file at `path`, its owner's alone (0600), and
/// gives them; where a concurrent first start made the file already, what
/// it holds instead (theirs is used).
pub(super) fn create_private(path: &Path, bytes: &[u8]) -> Result<Vec<u8>, StartError> {
    use std::io::Write as _;
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    match options.open(path) {
        Ok(mut f) => {
            f.write_all(bytes)
                .and_then(|()| f.sync_all())
                .map_err(io_error(format!("writing {}", path.display())))?;
            Ok(bytes.to_vec())
        }
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
            std::fs::read(path).map_err(io_error(format!("reading {}", path.display())))
        }
        Err(e) => Err(io_error(format!("creating {}", path.display()))(e)),
    }
}

/// The keyring of a local data directory.
pub fn local_keyring(config: &Config) -> Result<Keyring, StartError> {
    Ok(Keyring::new(
        (config.keys.key_id.clone(), local_secret(config)?),
        config.keys.previous.clone(),
    ))
}
