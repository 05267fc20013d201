//! Files: immutable objects with an id, an owner, a name and a pinned digest.

use std::fmt;

use crate::filename;
use crate::sha::Sha256;

/// The most bytes of a file that ever pass through the model inline (as
/// base64): the fallback tools' limit, and the largest file an action's
/// result keeps inline.
pub const SMALL_FILE_MAX: usize = 16 * 1024;

/// A file's URL-safe id: 16 bytes, 22 characters of base64url. A new id is
/// the millisecond it was made (48 bits, big-endian) and 80 random bits:
/// [`FileId::sequence`] orders ids by when they were made, so the records'
/// key takes each new one at its end (one page written per commit, where a
/// random key wrote one anywhere in the table), and two ids made in one
/// millisecond still differ but by chance of 2^-80. An id is no secret
/// (listings show it); what lets anyone act on a file is a tagged token
/// ([`crate::token::Short`]) or its owner's bearer token.
#[derive(Debug, Clone, PartialEq, Eq, Hash, serde::Serialize, schemars::JsonSchema)]
#[serde(transparent)]
#[schemars(description = "A file's id: 22 characters of base64url.")]
pub struct FileId(String);

impl FileId {
    /// A fresh id: now, then 80 random bits.
    pub fn random() -> Self {
        let mut bytes = [0u8; 16];
        let ms = u64::try_from(crate::time::now_millis()).unwrap_or(0);
        bytes[..6].copy_from_slice(&ms.to_be_bytes()[2..]);
        getrandom::fill(&mut bytes[6..])
            .expect("the operating system's random source is available");
        Self::from_bytes(bytes)
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
        base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(&self.0)
            .ok()?
            .try_into()
            .ok()
    }

    /// The id of 16 bytes.
    pub fn from_bytes(bytes: [u8; 16]) -> Self {
        use base64::Engine as _;
        Self(base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes))
    }

    /// The id's first 48 bits as a number: for an id made by this version,
    /// the millisecond it was made, so ids in this order are ids in the
    /// order they were made (ids of earlier versions, random, have a number
    /// all the same).
    pub fn sequence(&self) -> i64 {
        let bytes = self.to_bytes().unwrap_or_default();
        let mut be = [0u8; 8];
        be[2..].copy_from_slice(&bytes[..6]);
        i64::from_be_bytes(be)
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

    /// The key of object `id` of `owner`, saved as `safe_name` (made safe
    /// by [`filename::safe_name`]): `files/<owner hash>/<id>/<safe_name>`.
    pub fn of(owner: &str, id: &FileId, safe_name: &str) -> Self {
        Self(format!("{}{id}/{safe_name}", Self::owner_prefix(owner)))
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

    /// Where part `n` of an upload in parts to this key is kept until the
    /// parts are joined (stores that keep parts as objects):
    /// `parts/<owner hash>/<file_id>/<n>`, under the same owner.
    pub fn part(&self, n: u32) -> ObjectKey {
        let mut segments = self.0.split('/').skip(1);
        let (owner, id) = (
            segments.next().unwrap_or_default(),
            segments.next().unwrap_or_default(),
        );
        ObjectKey(format!("parts/{owner}/{id}/{n:05}"))
    }

    /// The directory of this key's parts ([`ObjectKey::part`]).
    pub fn parts_prefix(&self) -> String {
        let part = self.part(0).0;
        part[..part.len() - 5].to_owned()
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
    /// The digest the file pins; `None` while it is to come: a person's
    /// page started sending before it had hashed the file, and declares
    /// the digest with the last bytes ([`Sha256::TO_COME`]).
    pub fn digest(&self) -> Option<Sha256> {
        self.sha256.declared()
    }

    /// The name the bytes are stored and downloaded under.
    pub fn safe_name(&self) -> String {
        filename::safe_name(&self.filename)
    }

    /// The object key, derived from owner, id and safe name.
    pub fn object_key(&self) -> ObjectKey {
        ObjectKey::of(&self.owner, &self.id, &self.safe_name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Ids are in the order they were made by their sequence, and go to
    /// bytes and back unchanged (ids of earlier versions, random, too).
    #[test]
    fn file_ids_sort_by_time_and_round_trip() {
        let mut ids = Vec::new();
        for _ in 0..5 {
            ids.push(FileId::random());
            std::thread::sleep(std::time::Duration::from_millis(2));
        }
        let mut sorted = ids.clone();
        sorted.sort_by_key(FileId::sequence);
        assert_eq!(sorted, ids);
        let now = crate::time::now_millis();
        assert!((now - 1000..=now).contains(&ids[4].sequence()));
        let older = FileId::parse(&crate::keys::random_id::<16>()).unwrap();
        for id in ids.iter().chain([&older]) {
            assert_eq!(FileId::from_bytes(id.to_bytes().unwrap()), *id);
        }
    }

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
