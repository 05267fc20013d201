//! Browser upload page tokens: the last path segment of `/browser/<token>`,
//! a capability for one person to upload one file as the user who asked for
//! the page, until it expires. It carries no bearer token; sealed like
//! handles, so the URL tells nobody who asked or for which file.

use serde::{Deserialize, Serialize};

use super::error::TokenError;
use super::sealed::{self, PAGE};
use crate::file::FileId;
use crate::keys::{Keyring, Purpose};

/// A verified page token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PageToken {
    /// Who the uploaded file will belong to.
    pub owner: String,
    /// The file the page uploads: its id is known before the person picks it.
    pub file_id: FileId,
    /// The name the model suggested, if any.
    pub filename: Option<String>,
    /// The media type the model asked for, if any.
    pub content_type: Option<String>,
    /// The largest file the page accepts.
    pub max_size: u64,
    /// How many files the person may pick (1: one file, as before).
    pub files: u32,
    /// Expiry, seconds since the Unix epoch.
    pub expires_at: i64,
}

impl PageToken {
    /// The id of the page's file `n` (0 to `files - 1`): the page's own id
    /// for the first, and for the others its first 48 bits (when it was
    /// made) followed by 80 bits derived from it and `n`, so each file's
    /// record is found from the page alone.
    pub fn file_id_of(&self, n: u32) -> FileId {
        if n == 0 {
            return self.file_id.clone();
        }
        let mut bytes = self.file_id.to_bytes().unwrap_or_default();
        let mut input = b"sluice/v1/page-file:".to_vec();
        input.extend_from_slice(&bytes);
        input.extend_from_slice(&n.to_be_bytes());
        let derived = crate::sha::Sha256::of(&input).to_bytes();
        bytes[6..].copy_from_slice(&derived[..10]);
        FileId::from_bytes(bytes)
    }
}

#[derive(Serialize, Deserialize)]
struct Claims {
    sub: String,
    fid: String,
    #[serde(rename = "fn", default, skip_serializing_if = "Option::is_none")]
    filename: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    ct: Option<String>,
    mx: u64,
    #[serde(default = "one", skip_serializing_if = "is_one")]
    n: u32,
}

fn one() -> u32 {
    1
}

fn is_one(n: &u32) -> bool {
    *n == 1
}

impl PageToken {
    /// Seals the page token.
    pub fn encode(&self, keys: &Keyring) -> String {
        let claims = Claims {
            sub: self.owner.clone(),
            fid: self.file_id.to_string(),
            filename: self.filename.clone(),
            ct: self.content_type.clone(),
            mx: self.max_size,
            n: self.files,
        };
        sealed::seal(keys, Purpose::Page, PAGE, claims, self.expires_at)
    }

    /// Opens a page token.
    pub fn decode(keys: &Keyring, token: &str) -> Result<Self, TokenError> {
        let (c, exp): (Claims, i64) = sealed::open(keys, Purpose::Page, PAGE, token)?;
        Ok(Self {
            owner: c.sub,
            file_id: FileId::parse(&c.fid).ok_or(TokenError::Malformed)?,
            filename: c.filename,
            content_type: c.ct,
            max_size: c.mx,
            files: c.n.max(1),
            expires_at: exp,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::token::tests::ring;
    use crate::token::{Short, ShortKind};

    #[test]
    fn a_page_token_round_trips_and_is_no_other_kind() {
        let keys = ring("k1", 1);
        let page = PageToken {
            owner: "alice".into(),
            file_id: FileId::random(),
            filename: Some("rapport final;v2 (été).pdf".into()),
            content_type: None,
            max_size: 1 << 30,
            files: 3,
            expires_at: crate::time::now_unix() + 60,
        };
        let t = page.encode(&keys);
        assert_eq!(PageToken::decode(&keys, &t), Ok(page.clone()));
        assert!(!t.contains("alice") && !t.contains("rapport"));
        // Each file of the page has its own id, the same every time.
        let ids: Vec<FileId> = (0..3).map(|n| page.file_id_of(n)).collect();
        assert_eq!(ids[0], page.file_id);
        assert!(ids[1] != ids[0] && ids[2] != ids[1]);
        assert_eq!(page.file_id_of(2), ids[2]);
        assert_eq!(ids[2].sequence(), page.file_id.sequence());
        // A page token is never taken for a handle or a link.
        let now = crate::time::now_unix();
        for kind in [ShortKind::Handle, ShortKind::Upload, ShortKind::Download] {
            assert_eq!(
                Short::decode(&keys, &t, kind, now),
                Err(TokenError::WrongType)
            );
        }
    }
}
