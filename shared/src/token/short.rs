//! Short tokens: what the model reads of handles and links, at most ~60
//! characters. A short token names a file by its id and proves that sluice
//! issued it, and nothing more: what the file pins (owner, name, size,
//! digest) is read from its record, written once when the file was issued
//! (the claim check). It is `base64url(kind ‖ file id ‖ [expiry] ‖ [nonce]
//! ‖ tag)`:
//!
//! | kind | bytes | characters |
//! |---|---|---|
//! | handle `h` | 1 + 16 + 12 | 39 (+ 14 of `$uploadedFile:`) |
//! | upload `u` | 1 + 16 + 4 + 12 | 44 |
//! | download `d` | 1 + 16 + 4 + 6 + 12 | 52 |
//!
//! The tag is the first 12 bytes of an HMAC-SHA256 of everything before it,
//! under the key derived for [`Purpose::Short`] (current or previous): 96
//! bits, so a forgery takes ~2^95 tries, each one a request. A handle has
//! no expiry of its own (its record's is the file's); a link's is in it, and
//! a download's nonce makes each link single-use on its own (the ledger
//! records its id). The sealed tokens these replaced carried the file's
//! description themselves, encrypted: 300 characters and more, paid for by
//! the model on every mention.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;

use super::error::TokenError;
use crate::file::FileId;
use crate::keys::{Keyring, Purpose};

const TAG: usize = 12;
const NONCE: usize = 6;

/// What a short token lets its bearer do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ShortKind {
    /// Name the file (`$uploadedFile:`), until its record expires.
    Handle,
    /// PUT the file's bytes, until the token expires.
    Upload,
    /// GET the file's bytes once, until the token expires.
    Download,
    /// Name a batch of files (`$uploadedFiles:`), until its record expires.
    BatchHandle,
    /// Upload a batch's files (its line), until the token expires.
    BatchUpload,
    /// Fetch a batch's download links once, until the token expires.
    BatchDownload,
    /// GET a batch's files as one zip, once, until the token expires.
    BatchZip,
}

impl ShortKind {
    fn byte(self) -> u8 {
        match self {
            ShortKind::Handle => b'h',
            ShortKind::Upload => b'u',
            ShortKind::Download => b'd',
            ShortKind::BatchHandle => b'b',
            ShortKind::BatchUpload => b'B',
            ShortKind::BatchDownload => b'D',
            ShortKind::BatchZip => b'z',
        }
    }

    /// Whether the token names without expiring (its record's expiry is its own).
    fn is_handle(self) -> bool {
        matches!(self, ShortKind::Handle | ShortKind::BatchHandle)
    }

    /// Whether the token carries a nonce, spent in the ledger when used.
    fn single_use(self) -> bool {
        matches!(
            self,
            ShortKind::Download | ShortKind::BatchDownload | ShortKind::BatchZip
        )
    }

    /// The token's length in bytes, tag included.
    fn len(self) -> usize {
        1 + 16
            + TAG
            + match self {
                ShortKind::Handle | ShortKind::BatchHandle => 0,
                ShortKind::Upload | ShortKind::BatchUpload => 4,
                ShortKind::Download | ShortKind::BatchDownload | ShortKind::BatchZip => 4 + NONCE,
            }
    }
}

/// A verified short token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Short {
    /// What it allows.
    pub kind: ShortKind,
    /// The file it names.
    pub file_id: FileId,
    /// When it stops working (seconds since the Unix epoch); none for a
    /// handle.
    pub expires_at: Option<i64>,
    /// A download's unique part.
    nonce: [u8; NONCE],
}

impl Short {
    /// A handle of file `id`.
    pub fn handle(file_id: FileId) -> Self {
        Self {
            kind: ShortKind::Handle,
            file_id,
            expires_at: None,
            nonce: [0; NONCE],
        }
    }

    /// An upload link for file `id`, until `expires_at`.
    pub fn upload(file_id: FileId, expires_at: i64) -> Self {
        Self {
            kind: ShortKind::Upload,
            file_id,
            expires_at: Some(expires_at),
            nonce: [0; NONCE],
        }
    }

    /// A new single-use download link for file `id`, until `expires_at`.
    pub fn download(file_id: FileId, expires_at: i64) -> Self {
        let mut nonce = [0u8; NONCE];
        getrandom::fill(&mut nonce).expect("the operating system's random source is available");
        Self {
            kind: ShortKind::Download,
            file_id,
            expires_at: Some(expires_at),
            nonce,
        }
    }

    /// A token of `kind` naming batch `id`: a handle, until `expires_at`
    /// for a link (a download link of a batch gets its own nonce: it is
    /// single-use like a file's).
    pub fn batch(kind: ShortKind, id: FileId, expires_at: i64) -> Self {
        let mut nonce = [0u8; NONCE];
        if kind.single_use() {
            getrandom::fill(&mut nonce).expect("the operating system's random source is available");
        }
        Self {
            kind,
            file_id: id,
            expires_at: (!kind.is_handle()).then_some(expires_at),
            nonce,
        }
    }

    /// What the ledger records when a download link is spent, and what the
    /// logs show of any short token: the file id and the nonce, no tag.
    pub fn jti(&self) -> String {
        format!("{}.{}", self.file_id, URL_SAFE_NO_PAD.encode(self.nonce))
    }

    fn body(&self) -> Vec<u8> {
        let mut body = Vec::with_capacity(self.kind.len());
        body.push(self.kind.byte());
        body.extend_from_slice(
            &self
                .file_id
                .to_bytes()
                .expect("short tokens name ids of 16 bytes"),
        );
        if let Some(exp) = self.expires_at {
            body.extend_from_slice(&u32::try_from(exp).unwrap_or(u32::MAX).to_be_bytes());
        }
        if self.kind.single_use() {
            body.extend_from_slice(&self.nonce);
        }
        body
    }

    /// The token, tagged under the current key.
    pub fn encode(&self, keys: &Keyring) -> String {
        let mut bytes = self.body();
        let tag: [u8; TAG] = keys.short_tag(Purpose::Short, &bytes);
        bytes.extend_from_slice(&tag);
        URL_SAFE_NO_PAD.encode(bytes)
    }

    /// Verifies `token` as a short token of `kind`, unexpired at `now`.
    pub fn decode(
        keys: &Keyring,
        token: &str,
        kind: ShortKind,
        now: i64,
    ) -> Result<Self, TokenError> {
        if token.is_empty() {
            return Err(TokenError::Empty);
        }
        // A longer string is another kind of token: never decoded here.
        if token.len() > 60 {
            return Err(TokenError::WrongType);
        }
        let bytes = URL_SAFE_NO_PAD
            .decode(token)
            .map_err(|_| TokenError::Malformed)?;
        if bytes.len() != kind.len() {
            return Err(TokenError::Malformed);
        }
        if bytes[0] != kind.byte() {
            return Err(TokenError::WrongType);
        }
        let (body, tag) = bytes.split_at(bytes.len() - TAG);
        let tag: &[u8; TAG] = tag.try_into().map_err(|_| TokenError::Malformed)?;
        if !keys.short_tag_matches(Purpose::Short, body, tag) {
            return Err(TokenError::BadSignature);
        }
        let id: [u8; 16] = body[1..17].try_into().map_err(|_| TokenError::Malformed)?;
        let expires_at = (!kind.is_handle()).then(|| {
            i64::from(u32::from_be_bytes(
                body[17..21].try_into().expect("4 bytes"),
            ))
        });
        if expires_at.is_some_and(|exp| exp <= now) {
            return Err(TokenError::Expired);
        }
        let mut nonce = [0u8; NONCE];
        if kind.single_use() {
            nonce.copy_from_slice(&body[21..21 + NONCE]);
        }
        Ok(Self {
            kind,
            file_id: FileId::from_bytes(id),
            expires_at,
            nonce,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::token::tests::ring;

    fn keyring(id: &str) -> Keyring {
        ring(id, id.len() as u8)
    }

    fn now() -> i64 {
        crate::time::now_unix()
    }

    #[test]
    fn each_kind_round_trips_and_is_short() {
        let keys = keyring("k1");
        let id = FileId::random();
        for (short, chars) in [
            (Short::handle(id.clone()), 39),
            (Short::upload(id.clone(), now() + 60), 44),
            (Short::download(id.clone(), now() + 60), 52),
            (Short::batch(ShortKind::BatchHandle, id.clone(), 0), 39),
            (
                Short::batch(ShortKind::BatchUpload, id.clone(), now() + 60),
                44,
            ),
            (
                Short::batch(ShortKind::BatchDownload, id.clone(), now() + 60),
                52,
            ),
            (
                Short::batch(ShortKind::BatchZip, id.clone(), now() + 60),
                52,
            ),
        ] {
            let t = short.encode(&keys);
            assert_eq!(t.len(), chars, "{t}");
            assert_eq!(Short::decode(&keys, &t, short.kind, now()), Ok(short));
        }
    }

    #[test]
    fn a_token_of_one_kind_is_never_another() {
        let keys = keyring("k1");
        let t = Short::upload(FileId::random(), now() + 60).encode(&keys);
        assert!(Short::decode(&keys, &t, ShortKind::Download, now()).is_err());
        assert!(Short::decode(&keys, &t, ShortKind::Handle, now()).is_err());
    }

    #[test]
    fn altered_expired_or_foreign_tokens_are_refused() {
        let keys = keyring("k1");
        let id = FileId::random();
        let t = Short::download(id.clone(), now() + 60).encode(&keys);
        // Every single-character change is refused.
        for i in 0..t.len() {
            let mut chars: Vec<char> = t.chars().collect();
            chars[i] = if chars[i] == 'A' { 'B' } else { 'A' };
            let altered: String = chars.into_iter().collect();
            assert!(
                Short::decode(&keys, &altered, ShortKind::Download, now()).is_err(),
                "{altered}"
            );
        }
        let old = Short::download(id.clone(), now() - 1).encode(&keys);
        assert_eq!(
            Short::decode(&keys, &old, ShortKind::Download, now()),
            Err(TokenError::Expired)
        );
        let elsewhere = Short::download(id, now() + 60).encode(&keyring("other"));
        assert_eq!(
            Short::decode(&keys, &elsewhere, ShortKind::Download, now()),
            Err(TokenError::BadSignature)
        );
    }

    #[test]
    fn two_download_links_of_one_file_have_their_own_ids() {
        let id = FileId::random();
        let (a, b) = (
            Short::download(id.clone(), now() + 60),
            Short::download(id, now() + 60),
        );
        assert_ne!(a.jti(), b.jti());
    }
}
