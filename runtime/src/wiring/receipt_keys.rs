//! The receipt keys of a data directory ([`sluice::receipts::keys_dir`]):
//! `key.p8`, the current signing key (PKCS#8, 0600, made at the first
//! start), and `retired.json`, the public keys retired since (a JWKS),
//! which `sluice receipt rotate` appends to before it makes a new key.

use std::io;
use std::path::Path;

use jsonwebtoken::jwk::JwkSet;
use sluice::receipts::{LocalKeys, ReceiptKey, keys_dir};

use super::{StartError, io_error};

const KEY: &str = "key.p8";
const RETIRED: &str = "retired.json";

fn bad(what: String, e: impl std::fmt::Display) -> StartError {
    StartError::Io {
        what,
        source: io::Error::new(io::ErrorKind::InvalidData, e.to_string()),
    }
}

/// The receipt keys of `data_dir`, the signing key made if there is none.
pub fn open_receipt_keys(data_dir: &Path) -> Result<LocalKeys, StartError> {
    let dir = keys_dir(data_dir);
    sluice::store::private_dir(&dir).map_err(io_error(format!("creating {}", dir.display())))?;
    let path = dir.join(KEY);
    let der = match std::fs::read(&path) {
        Ok(der) => der,
        Err(e) if e.kind() == io::ErrorKind::NotFound => create_key(&path)?,
        Err(e) => return Err(io_error(format!("reading {}", path.display()))(e)),
    };
    let current =
        ReceiptKey::from_pkcs8(&der).map_err(|e| bad(format!("reading {}", path.display()), e))?;
    Ok(LocalKeys {
        current,
        retired: retired(&dir)?.keys,
    })
}

/// Retires the current key of `data_dir` (its public key kept in the
/// JWKS, so what it signed still verifies) and makes a new one: (the
/// retired key's id, the new one's).
pub fn rotate_receipt_key(data_dir: &Path) -> Result<(String, String), StartError> {
    let old = open_receipt_keys(data_dir)?;
    let dir = keys_dir(data_dir);
    let mut set = retired(&dir)?;
    set.keys.push(old.current.public());
    let path = dir.join(RETIRED);
    let json = serde_json::to_vec_pretty(&set).map_err(|e| bad("the JWKS".to_owned(), e))?;
    let temp = dir.join(format!("{RETIRED}.new"));
    std::fs::write(&temp, json)
        .and_then(|()| std::fs::rename(&temp, &path))
        .map_err(io_error(format!("writing {}", path.display())))?;
    let key = dir.join(KEY);
    std::fs::remove_file(&key).map_err(io_error(format!("removing {}", key.display())))?;
    let new = open_receipt_keys(data_dir)?;
    Ok((old.current.kid().to_owned(), new.current.kid().to_owned()))
}

/// The retired public keys in `dir` (none yet: an empty set).
fn retired(dir: &Path) -> Result<JwkSet, StartError> {
    let path = dir.join(RETIRED);
    match std::fs::read(&path) {
        Ok(bytes) => serde_json::from_slice(&bytes)
            .map_err(|e| bad(format!("reading {}", path.display()), e)),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(JwkSet { keys: Vec::new() }),
        Err(e) => Err(io_error(format!("reading {}", path.display()))(e)),
    }
}

/// Writes a new key at `path` (0600), without overwriting one a concurrent
/// first start made: theirs is used.
fn create_key(path: &Path) -> Result<Vec<u8>, StartError> {
    let der = ReceiptKey::generate().map_err(|e| bad("making the receipt key".to_owned(), e))?;
    super::secrets::create_private(path, &der)
}
