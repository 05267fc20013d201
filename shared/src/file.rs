//! Files: immutable objects with an id, an owner, a name and a pinned digest.

use std::fmt;

use crate::filename;
use crate::sha::Sha256;

/// The most bytes of a file that ever pass through the model inline (as
/// base64): the fallback tools' limit, and the largest file an action's
/// result keeps inline.
pub const SMALL_FILE_MAX: usize = 16 * 1024;

/// A file's random, URL-safe id (16 bytes of entropy, 22 characters).
#[derive(Debug, Clone, PartialEq, Eq, Hash, serde::Serialize, schemars::JsonSchema)]
#[serde(transparent)]
pub struct FileId(String);

impl FileId {
    /// A fresh random id.
    pub fn random() -> Self {
        Self(crate::keys::random_id::<16>())
    }

    /// Accepts a string shaped like a file id.
    pub fn parse(s: &str) -> Option<Self> {
        let ok = s.len() == 22
            && s.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
        ok.then(|| Self(s.to_owned()))
    }

    /// The id as a string.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The 16 bytes the id encodes, if it encodes exactly 16 (every id this
    /// server made does).
    pub fn to_bytes(&self) -> Option<[u8; 16]> {
        use base64::Engine as _;
        let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(&self.0)
            .ok()?;
        bytes.try_into().ok()
    }

    /// The id of 16 bytes.
    pub fn from_bytes(bytes: [u8; 16]) -> Self {
        use base64::Engine as _;
        Self(base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes))
    }
}

impl fmt::Display for FileId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Where a file's bytes live in the object store:
/// `files/<owner-hash>/<file_id>/<sanitized-name>`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ObjectKey(String);

impl ObjectKey {
    /// The key as a string; it never contains `..`, `\` or a control character.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The key prefix under which all of one owner's objects live.
    pub fn owner_prefix(owner: &str) -> String {
        format!("files/{}/", owner_hash(owner))
    }

    /// The owner part of the key (`files/<owner hash>/…`): whose object
    /// it is, without the owner's name.
    pub fn owner_part(&self) -> &str {
        self.0.split('/').nth(1).unwrap_or_default()
    }

    /// A key as a store listed it. Only for keys the store itself returns.
    pub fn from_stored(key: String) -> Self {
        Self(key)
    }
}

impl fmt::Display for ObjectKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// A short, stable, non-reversible stand-in for an owner in object keys, so
/// that user names never appear in storage paths.
pub fn owner_hash(owner: &str) -> String {
    let mut input = b"sluice/v1/owner:".to_vec();
    input.extend_from_slice(owner.as_bytes());
    Sha256::of(&input).to_hex()[..32].to_owned()
}

/// Everything that is pinned about a file: who owns it, what it is called,
/// and exactly which bytes it holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileMeta {
    /// The file's id.
    pub id: FileId,
    /// The `sub` of the user who created it.
    pub owner: String,
    /// The name as the client gave it: a label, never a path.
    pub filename: String,
    /// The media type.
    pub content_type: String,
    /// Size in bytes.
    pub size: u64,
    /// The digest of its bytes.
    pub sha256: Sha256,
}

impl FileMeta {
    /// The name the bytes are stored and downloaded under.
    pub fn safe_name(&self) -> String {
        filename::safe_name(&self.filename)
    }

    /// The object key, derived from owner, id and safe name.
    pub fn object_key(&self) -> ObjectKey {
        ObjectKey(format!(
            "{}{}/{}",
            ObjectKey::owner_prefix(&self.owner),
            self.id,
            self.safe_name()
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_ids_are_parsed_strictly() {
        let id = FileId::random();
        assert_eq!(FileId::parse(id.as_str()), Some(id));
        assert_eq!(FileId::parse("short"), None);
        assert_eq!(FileId::parse("../../../../etc/passwd.."), None);
    }

    #[test]
    fn object_keys_hide_the_owner_and_sanitize_the_name() {
        let meta = FileMeta {
            id: FileId::parse("AAAAAAAAAAAAAAAAAAAAAA").unwrap(),
            owner: "alice@example.com".into(),
            filename: "../../etc/passwd".into(),
            content_type: "text/plain".into(),
            size: 1,
            sha256: Sha256::of(b"x"),
        };
        let key = meta.object_key();
        assert!(key.as_str().starts_with("files/"));
        assert!(!key.as_str().contains("alice"));
        assert!(!key.as_str().contains(".."));
        assert_eq!(key.as_str().matches('/').count(), 3);
        assert!(
            key.as_str()
                .starts_with(&ObjectKey::owner_prefix("alice@example.com"))
        );
    }
}
