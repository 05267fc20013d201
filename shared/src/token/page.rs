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
    /// Expiry, seconds since the Unix epoch.
    pub expires_at: i64,
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
            expires_at: crate::time::now_unix() + 60,
        };
        let t = page.encode(&keys);
        assert_eq!(PageToken::decode(&keys, &t), Ok(page));
        assert!(!t.contains("alice") && !t.contains("rapport"));
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
