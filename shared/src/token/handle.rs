//! `$uploadedFile:<token>` handles: what the model passes around instead of bytes.

use serde::{Deserialize, Serialize};

use super::error::TokenError;
use super::sealed::{self, HANDLE};
use crate::file::{FileId, FileMeta};
use crate::keys::{Keyring, Purpose};
use crate::sha::Sha256;

/// The prefix that marks a handle in tool arguments.
pub const PREFIX: &str = "$uploadedFile:";

/// A verified handle: the file it names and when it stops being redeemable.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Handle {
    /// The file, as pinned at issue time.
    pub file: FileMeta,
    /// Expiry, seconds since the Unix epoch.
    pub expires_at: i64,
}

/// What handles and links pin of a file. Claim names are one or two letters:
/// a handle travels through the model's context, so every byte of it costs
/// tokens. Sealed: nobody who reads a handle or link learns its owner,
/// filename or content type.
#[derive(Serialize, Deserialize)]
pub(super) struct FileClaims {
    sub: String,
    fid: String,
    #[serde(rename = "fn")]
    filename: String,
    ct: String,
    sz: u64,
    sh: String,
}

impl FileClaims {
    /// The claims that pin `file`.
    pub(super) fn of(file: &FileMeta) -> Self {
        Self {
            sub: file.owner.clone(),
            fid: file.id.to_string(),
            filename: file.filename.clone(),
            ct: file.content_type.clone(),
            sz: file.size,
            sh: file.sha256.to_base64url(),
        }
    }

    /// The file the claims pin.
    pub(super) fn file(self) -> Result<FileMeta, TokenError> {
        Ok(FileMeta {
            id: FileId::parse(&self.fid).ok_or(TokenError::Malformed)?,
            owner: self.sub,
            filename: self.filename,
            content_type: self.ct,
            size: self.sz,
            sha256: Sha256::from_base64(&self.sh).map_err(|_| TokenError::Malformed)?,
        })
    }
}

impl Handle {
    /// Signs this handle and returns its `$uploadedFile:<jwt>` form.
    pub fn encode(&self, keys: &Keyring) -> String {
        let claims = FileClaims::of(&self.file);
        let sealed = sealed::seal(keys, Purpose::Handle, HANDLE, claims, self.expires_at);
        format!("{PREFIX}{sealed}")
    }

    /// Verifies a handle, with or without its `$uploadedFile:` prefix.
    pub fn decode(keys: &Keyring, s: &str) -> Result<Self, TokenError> {
        let token = s.trim().strip_prefix(PREFIX).unwrap_or(s.trim());
        let (c, exp): (FileClaims, i64) = sealed::open(keys, Purpose::Handle, HANDLE, token)?;
        Ok(Self {
            file: c.file()?,
            expires_at: exp,
        })
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::keys::Purpose;
    use crate::token::tests::ring;

    pub(crate) fn sample_file() -> FileMeta {
        FileMeta {
            id: FileId::random(),
            owner: "alice".into(),
            filename: "rapport final;v2 (été).pdf".into(),
            content_type: "application/pdf".into(),
            size: 5 * 1024 * 1024,
            sha256: Sha256::of(b"pdf"),
        }
    }

    #[test]
    fn a_handle_round_trips_with_and_without_its_prefix() {
        let keys = ring("k1", 1);
        let h = Handle {
            file: sample_file(),
            expires_at: crate::time::now_unix() + 60,
        };
        let s = h.encode(&keys);
        assert!(s.starts_with(PREFIX));
        assert_eq!(Handle::decode(&keys, &s), Ok(h.clone()));
        assert_eq!(Handle::decode(&keys, &s[PREFIX.len()..]), Ok(h));
    }

    #[test]
    fn a_handle_stays_short() {
        let keys = ring("k1", 1);
        let h = Handle {
            file: sample_file(),
            expires_at: crate::time::now_unix() + 60,
        };
        // For "rapport final;v2 (été).pdf": 320 characters sealed, against
        // 371 for the HS256 JWT of the same claims that it replaced.
        let len = h.encode(&keys).len();
        #[derive(serde::Serialize)]
        struct Jwt {
            #[serde(flatten)]
            claims: FileClaims,
            exp: i64,
        }
        let jwt = crate::token::sign(
            &keys,
            Purpose::Handle,
            "sluice-handle",
            &Jwt {
                claims: FileClaims::of(&h.file),
                exp: h.expires_at,
            },
        );
        assert!(len < jwt.len(), "sealed {len}, JWT {}", jwt.len());
        assert!(len < 400, "{len}");
    }

    #[test]
    fn an_expired_handle_is_refused() {
        let keys = ring("k1", 1);
        let h = Handle {
            file: sample_file(),
            expires_at: 1,
        };
        assert_eq!(
            Handle::decode(&keys, &h.encode(&keys)),
            Err(TokenError::Expired)
        );
    }
}
