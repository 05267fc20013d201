//! Every link and handle sluice mints, and every one it opens, in one
//! place: upload links (`/u/…`), download links (`/l/…`), a batch's links
//! (`/b/…`, `/g/…`) and its handle, a file's handle, a person's page
//! (`/browser/…`) and its upload id, and a list's cursor. Minting: a token of
//! its kind under the keyring, on the origin of the function that redeems
//! it. Opening: a link of any kind fails as the one [`Error::NotFound`]
//! (its reason logged at debug, never said); a handle that is not one is
//! [`Error::NotAHandle`]; a cursor not given to its caller,
//! [`Error::ForeignCursor`]; a page, the reason in words for the person.
//! Nothing here reads or writes the records: what a token names is looked
//! up by the component that opened it.

use std::sync::Arc;

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde::{Deserialize, Serialize};

use crate::config::Endpoints;
use crate::error::Error;
use crate::file::FileId;
use crate::keys::{Keyring, Purpose};
use crate::records::Cursor;
use crate::time::now_unix;
use crate::token::{BATCH_PREFIX, HANDLE_PREFIX, Method, PageToken, Short, ShortKind, TokenError};

/// The links and handles of one deployment: its keys and the origins of
/// the functions that redeem them.
#[derive(Clone, Debug)]
pub struct Links {
    keys: Arc<Keyring>,
    endpoints: Arc<Endpoints>,
}

/// A link minted: its URL, and its token's id (for logs: never the token).
#[derive(Debug, Clone)]
pub struct Link {
    /// The whole URL.
    pub url: String,
    /// The token's `jti`.
    pub jti: String,
}

impl Links {
    /// Links under `keys`, on the origins of `endpoints`.
    pub fn new(keys: Arc<Keyring>, endpoints: Arc<Endpoints>) -> Self {
        Self { keys, endpoints }
    }

    fn link(&self, base: &str, route: &str, short: &Short) -> Link {
        Link {
            url: format!("{base}/{route}/{}", short.encode(&self.keys)),
            jti: short.jti(),
        }
    }

    /// The upload link of file `id`, until `expires_at`.
    pub fn upload(&self, id: &FileId, expires_at: i64) -> Link {
        let short = Short::upload(id.clone(), expires_at);
        self.link(self.endpoints.issuer_base(), "u", &short)
    }

    /// The single-use download link of file `id`, until `expires_at`.
    pub fn download(&self, id: &FileId, expires_at: i64) -> Link {
        let short = Short::download(id.clone(), expires_at);
        self.link(self.endpoints.resolver_base(), "l", &short)
    }

    /// The line's link of batch `id`, to upload its files.
    pub fn batch_upload(&self, id: &FileId, expires_at: i64) -> Link {
        let short = Short::batch(ShortKind::BatchUpload, id.clone(), expires_at);
        self.link(self.endpoints.issuer_base(), "b", &short)
    }

    /// The line's link of batch `id`, to download its files.
    pub fn batch_download(&self, id: &FileId, expires_at: i64) -> Link {
        let short = Short::batch(ShortKind::BatchDownload, id.clone(), expires_at);
        self.link(self.endpoints.resolver_base(), "g", &short)
    }

    /// A single-use link to batch `id`'s files as one zip (`/z/…`).
    pub fn batch_zip(&self, id: &FileId, expires_at: i64) -> Link {
        let short = Short::batch(ShortKind::BatchZip, id.clone(), expires_at);
        self.link(self.endpoints.resolver_base(), "z", &short)
    }

    /// The handle of file `id` (`$uploadedFile:…`).
    pub fn handle(&self, id: &FileId) -> String {
        format!(
            "{HANDLE_PREFIX}{}",
            Short::handle(id.clone()).encode(&self.keys)
        )
    }

    /// The handle of batch `id` (`$uploadedFiles:…`).
    pub fn batch_handle(&self, id: &FileId) -> String {
        format!(
            "{BATCH_PREFIX}{}",
            Short::batch(ShortKind::BatchHandle, id.clone(), 0).encode(&self.keys)
        )
    }

    /// The URL of a person's page.
    pub fn page(&self, page: &PageToken) -> String {
        format!(
            "{}/browser/{}",
            self.endpoints.issuer_base(),
            page.encode(&self.keys)
        )
    }

    /// The upload id of `owner`'s page whose first file is `file_id`.
    pub fn upload_id(&self, owner: &str, file_id: &FileId, expires_at: i64, files: u32) -> String {
        upload_id(&self.keys, owner, file_id, expires_at, files)
    }

    /// A list's cursor, for `owner` alone.
    pub fn cursor(&self, owner: &str, cursor: &Cursor) -> String {
        encode_cursor(&self.keys, owner, cursor)
    }

    /// Opens a link token for `method` (`GET`: a download link, `PUT`: an
    /// upload link and the tus requests on it). Every failure is the same
    /// [`Error::NotFound`], so a caller learns nothing about why; the
    /// reason is logged at debug.
    pub fn open_link(&self, token: &str, method: Method) -> Result<Short, Error> {
        let kind = match method {
            Method::Get => ShortKind::Download,
            Method::Put => ShortKind::Upload,
        };
        self.open(token, kind)
    }

    /// Opens a batch's link of `kind`: every failure [`Error::NotFound`].
    pub fn open_batch(&self, token: &str, kind: ShortKind) -> Result<Short, Error> {
        self.open(token, kind)
    }

    fn open(&self, token: &str, kind: ShortKind) -> Result<Short, Error> {
        Short::decode(&self.keys, token, kind, now_unix()).map_err(|e: TokenError| {
            tracing::debug!(reason = %e, ?kind, "link refused");
            Error::NotFound
        })
    }

    /// The file a handle names (with or without its prefix); a string
    /// that is not a handle of this deployment is [`Error::NotAHandle`].
    /// Whether the file is still there is its record's to say.
    pub fn open_handle(&self, handle: &str) -> Result<FileId, Error> {
        self.open_handle_of(handle, HANDLE_PREFIX, ShortKind::Handle)
    }

    /// The batch a batch handle names; [`Error::NotAHandle`] otherwise.
    pub fn open_batch_handle(&self, handle: &str) -> Result<FileId, Error> {
        self.open_handle_of(handle, BATCH_PREFIX, ShortKind::BatchHandle)
    }

    fn open_handle_of(&self, handle: &str, prefix: &str, kind: ShortKind) -> Result<FileId, Error> {
        let handle = handle.trim();
        let token = handle.strip_prefix(prefix).unwrap_or(handle);
        Short::decode(&self.keys, token, kind, now_unix())
            .map(|short| short.file_id)
            .map_err(|_| Error::NotAHandle)
    }

    /// Opens a page's token: the page, or why it cannot be used.
    pub fn open_page(&self, token: &str) -> Result<PageToken, TokenError> {
        PageToken::decode(&self.keys, token)
    }

    /// What `owner`'s upload id names: its page's first file id, expiry
    /// and number of files; `None` for one not made for `owner`.
    pub fn open_upload_id(&self, owner: &str, upload_id: &str) -> Option<(FileId, i64, u32)> {
        parse_upload_id(&self.keys, owner, upload_id)
    }

    /// The cursor `s`, if this deployment gave it to `owner`.
    pub fn open_cursor(&self, owner: &str, s: &str) -> Result<Cursor, Error> {
        decode_cursor(&self.keys, owner, s).ok_or(Error::ForeignCursor)
    }
}

/// An upload id: the page's first file id, its expiry and (for a page of
/// several) how many files it takes, so that the status can say `expired`
/// and find every file without any state of its own, and a keyed tag of
/// these and the owner, so that only a page's upload has one (a caller
/// cannot make one up for another of their files to get its handle).
pub fn upload_id(
    keys: &Keyring,
    owner: &str,
    file_id: &FileId,
    expires_at: i64,
    files: u32,
) -> String {
    let what = described(file_id, expires_at, files);
    let tag = keys.tag(Purpose::UploadId, format!("{what}.{owner}").as_bytes());
    format!("{what}.{tag}")
}

/// What an upload id names: `file_id.expiry`, and `.files` for a page of
/// several.
fn described(file_id: &FileId, expires_at: i64, files: u32) -> String {
    if files > 1 {
        format!("{file_id}.{expires_at}.{files}")
    } else {
        format!("{file_id}.{expires_at}")
    }
}

/// The page an upload id names, for `owner`: its first file id, expiry and
/// number of files.
fn parse_upload_id(keys: &Keyring, owner: &str, s: &str) -> Option<(FileId, i64, u32)> {
    let parts: Vec<&str> = s.trim().split('.').collect();
    let (id, exp, files, tag) = match parts.as_slice() {
        [id, exp, tag] => (*id, *exp, 1, *tag),
        [id, exp, files, tag] => (*id, *exp, files.parse().ok().filter(|n| *n > 1)?, *tag),
        _ => return None,
    };
    let (id, exp) = (FileId::parse(id)?, exp.parse().ok()?);
    let what = described(&id, exp, files);
    keys.tag_matches(Purpose::UploadId, format!("{what}.{owner}").as_bytes(), tag)
        .then_some((id, exp, files))
}

/// A cursor as a client holds it: where the page starts, and whose pages
/// these are as a keyed tag of the owner (never the owner, nor a plain hash
/// of it that a dictionary could reverse). Opaque to clients (base64url).
#[derive(Serialize, Deserialize)]
struct WireCursor {
    #[serde(rename = "o")]
    owner_tag: String,
    #[serde(rename = "c")]
    created_ms: i64,
    #[serde(rename = "f")]
    file_id: String,
}

/// The longest cursor a client may pass back; ours are about 100 characters.
const MAX_CURSOR_CHARS: usize = 256;

fn encode_cursor(keys: &Keyring, owner: &str, c: &Cursor) -> String {
    let wire = WireCursor {
        owner_tag: keys.tag(Purpose::Cursor, owner.as_bytes()),
        created_ms: c.created_ms,
        file_id: c.file_id.clone(),
    };
    URL_SAFE_NO_PAD.encode(serde_json::to_vec(&wire).expect("a cursor serializes"))
}

/// The cursor `s`, if it is one this deployment gave `owner`: every field
/// checked here, so nothing a client made up reaches a store's query.
fn decode_cursor(keys: &Keyring, owner: &str, s: &str) -> Option<Cursor> {
    if s.len() > MAX_CURSOR_CHARS {
        return None;
    }
    let wire: WireCursor = serde_json::from_slice(&URL_SAFE_NO_PAD.decode(s.trim()).ok()?).ok()?;
    let ours = keys.tag_matches(Purpose::Cursor, owner.as_bytes(), &wire.owner_tag);
    let id = FileId::parse(&wire.file_id)?;
    (ours && wire.created_ms >= 0).then(|| Cursor {
        created_ms: wire.created_ms,
        file_id: id.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::token::tests::ring;

    fn sample() -> Cursor {
        Cursor {
            created_ms: 1_700_000_000_000,
            file_id: FileId::random().to_string(),
        }
    }

    #[test]
    fn a_cursor_round_trips_for_its_owner_only() {
        let keys = ring("k1", 1);
        let c = sample();
        let s = encode_cursor(&keys, "alice", &c);
        assert_eq!(decode_cursor(&keys, "alice", &s), Some(c));
        assert_eq!(decode_cursor(&keys, "bob", &s), None);
        assert_eq!(
            decode_cursor(&ring("k1", 2), "alice", &s),
            None,
            "another deployment's"
        );
        assert_eq!(decode_cursor(&keys, "alice", "not a cursor"), None);
    }

    #[test]
    fn a_cursor_does_not_carry_a_plain_hash_of_its_owner() {
        let keys = ring("k1", 1);
        let s = encode_cursor(&keys, "alice@example.com", &sample());
        let text = String::from_utf8(URL_SAFE_NO_PAD.decode(&s).unwrap()).unwrap();
        assert!(
            !text.contains(&crate::file::owner_hash("alice@example.com")),
            "{text}"
        );
        assert!(
            !text.contains(&crate::sha::Sha256::of(b"alice@example.com").to_hex()),
            "{text}"
        );
    }

    #[test]
    fn a_tampered_or_overlong_cursor_is_refused_before_any_query() {
        let keys = ring("k1", 1);
        let tag = keys.tag(Purpose::Cursor, b"alice");
        let forge = |created_ms: i64, file_id: &str| {
            let wire = WireCursor {
                owner_tag: tag.clone(),
                created_ms,
                file_id: file_id.to_owned(),
            };
            URL_SAFE_NO_PAD.encode(serde_json::to_vec(&wire).unwrap())
        };
        let good = FileId::random().to_string();
        assert!(decode_cursor(&keys, "alice", &forge(5, &good)).is_some());
        // A DynamoDB start key of any length or shape was a 500 there.
        for (created, id) in [
            (5, "x".repeat(2000)),
            (5, "not#an#id".to_owned()),
            (-1, good.clone()),
        ] {
            assert_eq!(
                decode_cursor(&keys, "alice", &forge(created, &id)),
                None,
                "{id}"
            );
        }
        assert_eq!(decode_cursor(&keys, "alice", &"A".repeat(5000)), None);
    }

    #[test]
    fn an_upload_id_round_trips_for_its_owner_and_cannot_be_made_up() {
        let keys = crate::token::tests::ring("k1", 1);
        let id = FileId::random();
        let made = upload_id(&keys, "alice", &id, 1_700_000_000, 1);
        assert_eq!(
            parse_upload_id(&keys, "alice", &made),
            Some((id.clone(), 1_700_000_000, 1))
        );
        let several = upload_id(&keys, "alice", &id, 1_700_000_000, 3);
        assert_eq!(
            parse_upload_id(&keys, "alice", &several),
            Some((id.clone(), 1_700_000_000, 3))
        );
        // The number of files is under the tag: it cannot be raised.
        let raised = several.replacen(".3.", ".9.", 1);
        assert_eq!(parse_upload_id(&keys, "alice", &raised), None);
        assert_eq!(parse_upload_id(&keys, "bob", &made), None);
        // The id of a file that no page made: its owner knows the file id.
        assert_eq!(
            parse_upload_id(&keys, "alice", &format!("{id}.9999999999")),
            None
        );
        assert_eq!(
            parse_upload_id(
                &keys,
                "alice",
                &format!("{id}.9999999999.AAAAAAAAAAAAAAAAAAAAAA")
            ),
            None
        );
        assert_eq!(parse_upload_id(&keys, "alice", "nope"), None);
    }
}
