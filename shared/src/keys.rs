//! The master secret and the keys derived from it.
//!
//! One master secret (at least 32 bytes) with a key id. Each purpose gets its
//! own key, derived with HKDF-SHA256 under a distinct `info`, so a key that
//! signs handles can never verify a link or a bearer token. Verification
//! accepts the current and the previous key id, so the secret can be rotated
//! without breaking tokens in flight.

use std::fmt;

use hkdf::Hkdf;

/// The shortest master secret accepted, in bytes.
pub const MIN_SECRET_LEN: usize = 32;

/// What a master secret or key id was refused for.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum KeyError {
    /// The secret is shorter than [`MIN_SECRET_LEN`] bytes.
    #[error("the secret is {len} bytes; at least {MIN_SECRET_LEN} are required")]
    SecretTooShort {
        /// The length that was given.
        len: usize,
    },
    /// A key id must be 1–32 characters of `A-Z a-z 0-9 . _ -`.
    #[error("a key id is 1 to 32 characters of letters, digits, '.', '_' or '-'")]
    BadKeyId,
}

/// A master secret. Its bytes are never printed.
#[derive(Clone, PartialEq, Eq)]
pub struct MasterSecret(Vec<u8>);

impl MasterSecret {
    /// Accepts a secret of at least [`MIN_SECRET_LEN`] bytes.
    pub fn new(bytes: impl Into<Vec<u8>>) -> Result<Self, KeyError> {
        let bytes = bytes.into();
        if bytes.len() < MIN_SECRET_LEN {
            return Err(KeyError::SecretTooShort { len: bytes.len() });
        }
        Ok(Self(bytes))
    }

    /// Whether `presented` is this secret, compared in constant time (a
    /// secret used as a bearer token: `SLUICE_METRICS_TOKEN`).
    pub fn matches(&self, presented: &[u8]) -> bool {
        aws_lc_rs::constant_time::verify_slices_are_equal(&self.0, presented).is_ok()
    }

    /// The secret's bytes, for derivation only.
    fn bytes(&self) -> &[u8] {
        &self.0
    }
}

impl fmt::Debug for MasterSecret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "MasterSecret(<{} bytes>)", self.0.len())
    }
}

/// The id that names a master secret in every token it signs (`kid`).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct KeyId(String);

impl KeyId {
    /// Accepts 1–32 characters of `A-Z a-z 0-9 . _ -`.
    pub fn new(id: &str) -> Result<Self, KeyError> {
        let ok = (1..=32).contains(&id.len())
            && id
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'));
        if ok {
            Ok(Self(id.to_owned()))
        } else {
            Err(KeyError::BadKeyId)
        }
    }

    /// The id as a string.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// What a derived key is for. Each purpose has its own HKDF `info`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Purpose {
    /// Bearer tokens minted for local development.
    DevBearer,
    /// Browser upload pages' capabilities.
    Page,
    /// `list_files` cursors' owner tags.
    Cursor,
    /// Browser uploads' ids (`get_upload_status`).
    UploadId,
    /// Short handles and links ([`crate::token::Short`]).
    Short,
}

impl Purpose {
    const ALL: [Purpose; 5] = [
        Purpose::DevBearer,
        Purpose::Page,
        Purpose::Cursor,
        Purpose::UploadId,
        Purpose::Short,
    ];

    fn info(self) -> &'static [u8] {
        match self {
            // v2: AES-256-GCM-SIV keys for sealed tokens; v1 keys signed
            // JWTs or MACs; v3 MACs short tokens. A key is never used by
            // two algorithms.
            Purpose::DevBearer => b"sluice/v1/dev-bearer",
            Purpose::Page => b"sluice/v2/page",
            Purpose::Cursor => b"sluice/v1/cursor-owner",
            Purpose::UploadId => b"sluice/v1/upload-id",
            Purpose::Short => b"sluice/v3/short",
        }
    }

    fn index(self) -> usize {
        match self {
            Purpose::DevBearer => 0,
            Purpose::Page => 1,
            Purpose::Cursor => 2,
            Purpose::UploadId => 3,
            Purpose::Short => 4,
        }
    }
}

/// The derived keys of one master secret.
#[derive(Clone)]
struct KeySet {
    id: KeyId,
    keys: [[u8; 32]; Purpose::ALL.len()],
}

impl KeySet {
    fn derive(id: KeyId, secret: &MasterSecret) -> Self {
        // The key id is the salt, so two ids over the same bytes still give
        // unrelated keys.
        let hk = Hkdf::<sha2::Sha256>::new(Some(id.as_str().as_bytes()), secret.bytes());
        let mut keys = [[0u8; 32]; Purpose::ALL.len()];
        for purpose in Purpose::ALL {
            hk.expand(purpose.info(), &mut keys[purpose.index()])
                .expect("32 bytes is a valid HKDF-SHA256 output length");
        }
        Self { id, keys }
    }
}

/// The current key set, and the previous one during a rotation.
#[derive(Clone)]
pub struct Keyring {
    current: KeySet,
    previous: Option<KeySet>,
}

impl fmt::Debug for Keyring {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Keyring")
            .field("current", &self.current.id)
            .field("previous", &self.previous.as_ref().map(|k| &k.id))
            .finish()
    }
}

impl Keyring {
    /// A keyring that signs with `current` and also verifies `previous`.
    pub fn new(current: (KeyId, MasterSecret), previous: Option<(KeyId, MasterSecret)>) -> Self {
        Self {
            current: KeySet::derive(current.0, &current.1),
            previous: previous.map(|(id, s)| KeySet::derive(id, &s)),
        }
    }

    /// The key id and key that sign new tokens for `purpose`.
    pub fn signing_key(&self, purpose: Purpose) -> (&KeyId, &[u8; 32]) {
        (&self.current.id, &self.current.keys[purpose.index()])
    }

    /// A keyed tag of `data` for `purpose` (HMAC-SHA-256 under the current
    /// key, 128 bits, base64url): it names `data` without revealing it to
    /// whoever reads the tag, and no one without the key can make one.
    pub fn tag(&self, purpose: Purpose, data: &[u8]) -> String {
        tag_with(&self.current.keys[purpose.index()], data)
    }

    /// Whether `tag` is [`Keyring::tag`] of `data` under the current or the
    /// previous key (so a rotation breaks nothing in flight).
    pub fn tag_matches(&self, purpose: Purpose, data: &[u8], tag: &str) -> bool {
        std::iter::once(&self.current)
            .chain(self.previous.as_ref())
            .any(|set| {
                let expected = tag_with(&set.keys[purpose.index()], data);
                aws_lc_rs::constant_time::verify_slices_are_equal(
                    expected.as_bytes(),
                    tag.as_bytes(),
                )
                .is_ok()
            })
    }

    /// The first `N` bytes of the HMAC-SHA256 of `data` under the current
    /// key for `purpose`: a short token's tag.
    pub fn short_tag<const N: usize>(&self, purpose: Purpose, data: &[u8]) -> [u8; N] {
        mac_with::<N>(&self.current.keys[purpose.index()], data)
    }

    /// Whether `tag` is [`Keyring::short_tag`] of `data` under the current
    /// or the previous key.
    pub fn short_tag_matches<const N: usize>(
        &self,
        purpose: Purpose,
        data: &[u8],
        tag: &[u8; N],
    ) -> bool {
        std::iter::once(&self.current)
            .chain(self.previous.as_ref())
            .any(|set| {
                let expected = mac_with::<N>(&set.keys[purpose.index()], data);
                aws_lc_rs::constant_time::verify_slices_are_equal(&expected, tag).is_ok()
            })
    }

    /// The key for `purpose` under key id `kid`, if that id is current or previous.
    pub fn verifying_key(&self, purpose: Purpose, kid: &str) -> Option<&[u8; 32]> {
        std::iter::once(&self.current)
            .chain(self.previous.as_ref())
            .find(|set| set.id.as_str() == kid)
            .map(|set| &set.keys[purpose.index()])
    }
}

fn mac_with<const N: usize>(key: &[u8; 32], data: &[u8]) -> [u8; N] {
    let key = aws_lc_rs::hmac::Key::new(aws_lc_rs::hmac::HMAC_SHA256, key);
    let mac = aws_lc_rs::hmac::sign(&key, data);
    mac.as_ref()[..N]
        .try_into()
        .expect("a tag is at most the 32 bytes of an HMAC-SHA256")
}

fn tag_with(key: &[u8; 32], data: &[u8]) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(mac_with::<16>(key, data))
}

/// A random, URL-safe identifier of `N` bytes of entropy.
pub fn random_id<const N: usize>() -> String {
    use base64::Engine as _;
    let mut bytes = [0u8; N];
    getrandom::fill(&mut bytes).expect("the operating system's random source is available");
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn secret(byte: u8) -> MasterSecret {
        MasterSecret::new(vec![byte; 32]).unwrap()
    }

    #[test]
    fn short_secrets_are_refused() {
        assert_eq!(
            MasterSecret::new(vec![0; 31]),
            Err(KeyError::SecretTooShort { len: 31 })
        );
        assert!(MasterSecret::new(vec![0; 32]).is_ok());
    }

    #[test]
    fn key_ids_are_short_and_plain() {
        assert!(KeyId::new("k1").is_ok());
        assert!(KeyId::new("2026-11.a_b").is_ok());
        assert_eq!(KeyId::new(""), Err(KeyError::BadKeyId));
        assert_eq!(KeyId::new("a b"), Err(KeyError::BadKeyId));
        assert_eq!(KeyId::new(&"a".repeat(33)), Err(KeyError::BadKeyId));
    }

    #[test]
    fn secrets_are_never_printed() {
        let s = MasterSecret::new(b"correct horse battery staple 123456".to_vec()).unwrap();
        assert!(!format!("{s:?}").contains("horse"));
    }

    #[test]
    fn derivation_matches_a_fixed_vector() {
        // HKDF-SHA256(salt = "k1", ikm = 32 x 0x01, info = "sluice/v2/page"),
        // computed independently from RFC 5869 with Python's hmac module.
        // Pinned so that a change to the derivation, which would invalidate
        // every token in flight, cannot pass unnoticed.
        let ring = Keyring::new((KeyId::new("k1").unwrap(), secret(1)), None);
        let (_, key) = ring.signing_key(Purpose::Page);
        assert_eq!(
            crate::sha::Sha256::from_bytes(*key).to_hex(),
            "73fd6c77dac4a311e9307e494ef79e272be9133ed3fbf9905b50e0d98fc2cd9a"
        );
    }

    #[test]
    fn each_purpose_has_its_own_key() {
        let ring = Keyring::new((KeyId::new("k1").unwrap(), secret(1)), None);
        let h = ring.signing_key(Purpose::Page).1;
        let l = ring.signing_key(Purpose::Short).1;
        let d = ring.signing_key(Purpose::DevBearer).1;
        assert_ne!(h, l);
        assert_ne!(l, d);
        assert_ne!(h, d);
    }

    #[test]
    fn the_previous_key_id_still_verifies() {
        let old = Keyring::new((KeyId::new("k1").unwrap(), secret(1)), None);
        let rotated = Keyring::new(
            (KeyId::new("k2").unwrap(), secret(2)),
            Some((KeyId::new("k1").unwrap(), secret(1))),
        );
        assert_eq!(
            rotated.verifying_key(Purpose::Short, "k1"),
            Some(old.signing_key(Purpose::Short).1)
        );
        assert!(rotated.verifying_key(Purpose::Short, "k3").is_none());
    }

    #[test]
    fn random_ids_are_url_safe_and_distinct() {
        let a = random_id::<16>();
        let b = random_id::<16>();
        assert_eq!(a.len(), 22);
        assert_ne!(a, b);
        assert!(
            a.bytes()
                .all(|c| c.is_ascii_alphanumeric() || c == b'-' || c == b'_')
        );
    }
}
