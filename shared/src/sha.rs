//! SHA-256 digests as a value type, and the streaming verifier that checks a
//! byte stream against a pinned size and digest.

use std::fmt;
use std::str::FromStr;

use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use bytes::Bytes;

/// A SHA-256 digest. Parsed from 64 hex digits (any case) or base64; always
/// written as lowercase hex.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Sha256([u8; 32]);

/// Why a string is not a SHA-256 digest.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DigestError {
    /// Neither 64 hex digits nor the base64 of 32 bytes.
    #[error("sha256 must be 64 hex digits (or the base64 of 32 bytes), got {len} characters")]
    Length {
        /// Length of the string that was given.
        len: usize,
    },
    /// The right length, but a character outside the alphabet.
    #[error("sha256 has a character that is not a hex digit")]
    NotHex,
    /// The right length for base64, but not valid base64.
    #[error("sha256 is not valid base64")]
    NotBase64,
}

impl Sha256 {
    /// What a file issued with its digest to come holds in its place until
    /// the digest is declared with its last bytes (a person's page that
    /// hashes while it sends: [`crate::file::FileMeta::digest`]): the
    /// SHA-256 of [`Sha256::TO_COME_OF`], a mark no one sends by chance (a
    /// placeholder such as 64 zeros stays a digest like any other). A
    /// client declaring it is refused wherever a digest is declared, so the
    /// one file it cannot take is those 58 bytes themselves.
    pub const TO_COME: Self = Self([
        0x35, 0xcd, 0x4d, 0x47, 0xef, 0xa7, 0x3b, 0x19, 0x95, 0x19, 0xe0, 0x33, 0xaa, 0x89, 0xb1,
        0xff, 0x9e, 0x06, 0x6c, 0x0b, 0xff, 0x50, 0x38, 0x72, 0xa9, 0xb6, 0x8c, 0x7a, 0x53, 0x09,
        0x92, 0xc6,
    ]);

    /// The bytes whose digest is [`Sha256::TO_COME`].
    pub const TO_COME_OF: &'static [u8] =
        b"sluice: this file's digest is declared with its last bytes";

    /// Whether this is [`Sha256::TO_COME`], not a digest.
    pub fn is_to_come(&self) -> bool {
        *self == Self::TO_COME
    }

    /// This digest; `None` for [`Sha256::TO_COME`].
    pub fn declared(self) -> Option<Self> {
        (!self.is_to_come()).then_some(self)
    }

    /// The digest of `data`.
    pub fn of(data: &[u8]) -> Self {
        let mut h = Hasher::new();
        h.update(data);
        h.finish()
    }

    /// Wraps raw digest bytes.
    pub fn from_bytes(bytes: [u8; 32]) -> Self {
        Self(bytes)
    }

    /// The raw digest bytes.
    pub fn to_bytes(&self) -> [u8; 32] {
        self.0
    }

    /// Parses 64 hex digits, upper or lower case.
    pub fn from_hex(s: &str) -> Result<Self, DigestError> {
        if s.len() != 64 {
            return Err(DigestError::Length { len: s.len() });
        }
        let mut out = [0u8; 32];
        for (i, pair) in s.as_bytes().chunks_exact(2).enumerate() {
            let hi = hex_value(pair[0]).ok_or(DigestError::NotHex)?;
            let lo = hex_value(pair[1]).ok_or(DigestError::NotHex)?;
            out[i] = hi << 4 | lo;
        }
        Ok(Self(out))
    }

    /// Parses the base64 (standard, or URL-safe without padding) of 32 bytes.
    pub fn from_base64(s: &str) -> Result<Self, DigestError> {
        let bytes = STANDARD
            .decode(s)
            .or_else(|_| URL_SAFE_NO_PAD.decode(s))
            .map_err(|_| DigestError::NotBase64)?;
        let bytes: [u8; 32] = bytes
            .try_into()
            .map_err(|_| DigestError::Length { len: s.len() })?;
        Ok(Self(bytes))
    }

    /// Parses either form: 64 characters are hex, anything else is tried as base64.
    pub fn parse(s: &str) -> Result<Self, DigestError> {
        let s = s.trim();
        match s.len() {
            64 => Self::from_hex(s),
            43 | 44 => Self::from_base64(s),
            len => Err(DigestError::Length { len }),
        }
    }

    /// Lowercase hex, as every output shows it.
    pub fn to_hex(&self) -> String {
        const DIGITS: &[u8; 16] = b"0123456789abcdef";
        let mut s = String::with_capacity(64);
        for b in self.0 {
            s.push(DIGITS[usize::from(b >> 4)] as char);
            s.push(DIGITS[usize::from(b & 0xf)] as char);
        }
        s
    }

    /// Standard base64 with padding, the form of `x-amz-checksum-sha256`.
    pub fn to_base64(&self) -> String {
        STANDARD.encode(self.0)
    }

    /// URL-safe base64 without padding: the shortest form, used inside tokens.
    pub fn to_base64url(&self) -> String {
        URL_SAFE_NO_PAD.encode(self.0)
    }
}

fn hex_value(c: u8) -> Option<u8> {
    match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        b'A'..=b'F' => Some(c - b'A' + 10),
        _ => None,
    }
}

impl fmt::Display for Sha256 {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_hex())
    }
}

impl fmt::Debug for Sha256 {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Sha256({})", self.to_hex())
    }
}

impl FromStr for Sha256 {
    type Err = DigestError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::parse(s)
    }
}

impl serde::Serialize for Sha256 {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.to_hex())
    }
}

impl<'de> serde::Deserialize<'de> for Sha256 {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = <std::borrow::Cow<'de, str>>::deserialize(d)?;
        Self::parse(&s).map_err(serde::de::Error::custom)
    }
}

impl schemars::JsonSchema for Sha256 {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Sha256".into()
    }

    fn inline_schema() -> bool {
        true
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "type": "string",
            "pattern": "^[0-9a-fA-F]{64}$",
            "description": "SHA-256 of the exact bytes, 64 hex digits (e.g. from `sha256sum`)"
        })
    }
}

/// How a byte stream failed to match the size and digest it was pinned to.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Mismatch {
    /// More bytes arrived than were declared.
    #[error("the body is longer than the declared {expected} bytes")]
    TooLong {
        /// The declared size.
        expected: u64,
    },
    /// The stream ended early.
    #[error("the body is {actual} bytes, {expected} were declared")]
    TooShort {
        /// The declared size.
        expected: u64,
        /// What arrived.
        actual: u64,
    },
    /// The size was right, the digest was not.
    #[error("the body's sha256 is {actual}, {expected} was declared")]
    Digest {
        /// The declared digest.
        expected: Sha256,
        /// The digest of what arrived.
        actual: Sha256,
    },
}

/// An incremental SHA-256: `aws-lc-rs`'s, assembly with the CPU's SHA
/// extensions where it has them, at the same speed whatever the build's
/// optimization level (the `sha2` crate's, at the release profile's
/// `opt-level = "s"`, ran at a third of it: BENCHMARKS.md, "Hashing").
#[derive(Clone)]
pub struct Hasher(aws_lc_rs::digest::Context);

impl fmt::Debug for Hasher {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Hasher(SHA-256)")
    }
}

impl Default for Hasher {
    fn default() -> Self {
        Self::new()
    }
}

impl Hasher {
    /// A hasher that has seen nothing.
    pub fn new() -> Self {
        Self(aws_lc_rs::digest::Context::new(&aws_lc_rs::digest::SHA256))
    }

    /// Takes in the next bytes.
    pub fn update(&mut self, data: &[u8]) {
        self.0.update(data);
    }

    /// The digest of everything taken in.
    pub fn finish(self) -> Sha256 {
        let digest = self.0.finish();
        Sha256(
            digest
                .as_ref()
                .try_into()
                .expect("a SHA-256 digest is 32 bytes"),
        )
    }
}

/// A SHA-256 whose progress can be kept and taken up again later, by
/// another process: the proof of a file too large to read in one request
/// is read a slice at a time ([`Midstate::save`] after each). Slower than
/// [`Hasher`] (it drives the `sha2` crate's compression function block by
/// block), so only used where a hash must outlive a process.
#[derive(Debug, Clone)]
pub struct Midstate {
    state: [u32; 8],
    /// Bytes compressed so far (whole blocks).
    len: u64,
    /// Bytes taken in but not yet a whole block.
    pending: Vec<u8>,
}

impl Default for Midstate {
    fn default() -> Self {
        Self::new()
    }
}

impl Midstate {
    /// SHA-256's initial state.
    pub fn new() -> Self {
        Self {
            state: [
                0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab,
                0x5be0cd19,
            ],
            len: 0,
            pending: Vec::with_capacity(64),
        }
    }

    /// How many bytes it has taken in.
    pub fn offset(&self) -> u64 {
        self.len + self.pending.len() as u64
    }

    /// Takes in the next bytes.
    // sha2 0.10's compression function takes generic-array 0.14 blocks,
    // which that crate now marks deprecated in favour of its 1.x.
    #[allow(deprecated)]
    pub fn update(&mut self, mut data: &[u8]) {
        use sha2::digest::generic_array::GenericArray;
        if !self.pending.is_empty() {
            let take = (64 - self.pending.len()).min(data.len());
            self.pending.extend_from_slice(&data[..take]);
            data = &data[take..];
            if self.pending.len() < 64 {
                return;
            }
            sha2::compress256(&mut self.state, &[*GenericArray::from_slice(&self.pending)]);
            self.len += 64;
            self.pending.clear();
        }
        let whole = data.len() / 64 * 64;
        for block in data[..whole].chunks_exact(64) {
            sha2::compress256(&mut self.state, &[*GenericArray::from_slice(block)]);
        }
        self.len += whole as u64;
        self.pending.extend_from_slice(&data[whole..]);
    }

    /// The progress, as text to keep (`<offset> <state in hex>`), or `None`
    /// where it is not at a block boundary (keep it at whole MiB).
    pub fn save(&self) -> Option<String> {
        if !self.pending.is_empty() {
            return None;
        }
        let words: String = self.state.iter().map(|w| format!("{w:08x}")).collect();
        Some(format!("{} {words}", self.len))
    }

    /// Progress kept by [`Midstate::save`].
    pub fn load(saved: &str) -> Option<Self> {
        let (len, words) = saved.trim().split_once(' ')?;
        if words.len() != 64 || !words.is_ascii() {
            return None;
        }
        let mut state = [0u32; 8];
        for (i, w) in state.iter_mut().enumerate() {
            *w = u32::from_str_radix(&words[i * 8..i * 8 + 8], 16).ok()?;
        }
        let len: u64 = len.parse().ok()?;
        len.is_multiple_of(64).then(|| Self {
            state,
            len,
            pending: Vec::with_capacity(64),
        })
    }

    /// The whole progress, wherever it stands, as text to keep with a
    /// format tag: `sha256/1 <offset> <state in hex> [<bytes past the last
    /// block, in hex>]`. What a resumable stream records at each checkpoint
    /// beside the offset it stands for ([`Midstate::resume`] takes it up).
    pub fn checkpoint(&self) -> String {
        let words: String = self.state.iter().map(|w| format!("{w:08x}")).collect();
        let pending: String = self.pending.iter().map(|b| format!("{b:02x}")).collect();
        format!("{CHECKPOINT_TAG} {} {words} {pending}", self.len)
            .trim_end()
            .to_owned()
    }

    /// Progress kept by [`Midstate::checkpoint`]; `None` for anything else.
    pub fn resume(saved: &str) -> Option<Self> {
        let mut fields = saved.split_ascii_whitespace();
        if fields.next()? != CHECKPOINT_TAG {
            return None;
        }
        let mut state = Self::load(&format!("{} {}", fields.next()?, fields.next()?))?;
        let pending = fields.next().unwrap_or("");
        if fields.next().is_some() || pending.len() >= 128 || pending.len() % 2 == 1 {
            return None;
        }
        for pair in pending.as_bytes().chunks_exact(2) {
            state
                .pending
                .push(hex_value(pair[0])? << 4 | hex_value(pair[1])?);
        }
        Some(state)
    }

    /// The digest of everything taken in.
    pub fn finish(mut self) -> Sha256 {
        let bits = self.offset().wrapping_mul(8);
        let mut tail = std::mem::take(&mut self.pending);
        tail.push(0x80);
        while tail.len() % 64 != 56 {
            tail.push(0);
        }
        tail.extend_from_slice(&bits.to_be_bytes());
        self.update(&tail);
        let mut out = [0u8; 32];
        for (chunk, w) in out.chunks_exact_mut(4).zip(self.state) {
            chunk.copy_from_slice(&w.to_be_bytes());
        }
        Sha256(out)
    }
}

/// The format tag of [`Midstate::checkpoint`].
const CHECKPOINT_TAG: &str = "sha256/1";

/// Hashes and counts a stream, checking it against a pinned size and digest.
#[derive(Clone)]
pub struct Verifier {
    size: u64,
    sha256: Sha256,
    seen: u64,
    hasher: Hasher,
}

impl fmt::Debug for Verifier {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Verifier")
            .field("size", &self.size)
            .field("sha256", &self.sha256)
            .field("seen", &self.seen)
            .finish()
    }
}

impl Verifier {
    /// A verifier for a stream of exactly `size` bytes whose digest is `sha256`.
    pub fn new(size: u64, sha256: Sha256) -> Self {
        Self {
            size,
            sha256,
            seen: 0,
            hasher: Hasher::new(),
        }
    }

    /// Takes in the next piece of the stream. Fails as soon as the stream is
    /// longer than declared, so a caller can stop reading.
    pub fn update(&mut self, data: &[u8]) -> Result<(), Mismatch> {
        self.seen += data.len() as u64;
        if self.seen > self.size {
            return Err(Mismatch::TooLong {
                expected: self.size,
            });
        }
        self.hasher.update(data);
        Ok(())
    }

    /// Checks the size and digest once the stream has ended.
    pub fn finish(self) -> Result<(), Mismatch> {
        if self.seen != self.size {
            return Err(Mismatch::TooShort {
                expected: self.size,
                actual: self.seen,
            });
        }
        let actual = self.hasher.finish();
        if actual != self.sha256 {
            return Err(Mismatch::Digest {
                expected: self.sha256,
                actual,
            });
        }
        Ok(())
    }
}

/// A [`Verifier`] that holds back the latest chunk, so that a reader who is
/// handed chunks as they are released never receives the whole stream unless
/// its size and digest verified.
#[derive(Debug)]
pub struct HoldBack {
    verifier: Verifier,
    held: Option<Bytes>,
}

impl HoldBack {
    /// Holds back against the given size and digest.
    pub fn new(size: u64, sha256: Sha256) -> Self {
        Self {
            verifier: Verifier::new(size, sha256),
            held: None,
        }
    }

    /// Takes the next chunk and releases the one before it, if any.
    pub fn push(&mut self, chunk: Bytes) -> Result<Option<Bytes>, Mismatch> {
        if chunk.is_empty() {
            return Ok(None);
        }
        self.verifier.update(&chunk)?;
        Ok(self.held.replace(chunk))
    }

    /// Ends the stream: releases the final chunk only if everything verified.
    pub fn finish(self) -> Result<Option<Bytes>, Mismatch> {
        self.verifier.finish()?;
        Ok(self.held)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_mark_of_a_digest_to_come_is_the_digest_of_its_words() {
        assert_eq!(Sha256::of(Sha256::TO_COME_OF), Sha256::TO_COME);
        assert!(Sha256::TO_COME.is_to_come());
        assert!(!Sha256::from_bytes([0; 32]).is_to_come());
    }

    #[test]
    fn a_midstate_kept_and_taken_up_again_hashes_as_sha256() {
        let data: Vec<u8> = (0..300_000u32).map(|i| (i * 7 + i / 13) as u8).collect();
        for cut in [0usize, 64, 4096, 131_072, 299_968] {
            for len in [0usize, 1, 55, 56, 63, 64, 65, 1000, 300_000] {
                let (data, cut) = (&data[..len], cut.min(len) / 64 * 64);
                let mut first = Midstate::new();
                first.update(&data[..cut / 2]);
                first.update(&data[cut / 2..cut]);
                let saved = first.save().expect("at a block boundary");
                let mut second = Midstate::load(&saved).unwrap();
                assert_eq!(second.offset(), cut as u64);
                for piece in data[cut..].chunks(777) {
                    second.update(piece);
                }
                assert_eq!(second.finish(), Sha256::of(data), "len {len} cut {cut}");
            }
        }
        let mut odd = Midstate::new();
        odd.update(b"abc");
        assert_eq!(odd.save(), None, "not at a block boundary");
        assert!(Midstate::load("12 zz").is_none());
    }

    #[test]
    fn a_checkpoint_anywhere_resumes_to_the_same_digest() {
        let data: Vec<u8> = (0..5000u32).map(|i| (i * 31 + i / 7) as u8).collect();
        for cut in [0usize, 1, 63, 64, 65, 127, 128, 4999, 5000] {
            let mut first = Midstate::new();
            first.update(&data[..cut]);
            let saved = first.checkpoint();
            let mut second = Midstate::resume(&saved).expect(&saved);
            assert_eq!(second.offset(), cut as u64);
            second.update(&data[cut..]);
            assert_eq!(second.finish(), Sha256::of(&data), "cut {cut}");
        }
        for bad in [
            "",
            "sha256/2 0 00",
            "0 6a09e667",
            "sha256/1 64",
            "sha256/1 3 x",
            "sha256/1 0 00 0",
        ] {
            assert!(Midstate::resume(bad).is_none(), "{bad:?}");
        }
        let mut ten = Midstate::new();
        ten.update(&[1; 10]);
        assert!(Midstate::resume(&(ten.checkpoint() + " 00")).is_none());
    }

    // FIPS 180-2 test vector.
    const ABC_HEX: &str = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad";
    const EMPTY_HEX: &str = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

    #[test]
    fn digests_match_published_vectors() {
        assert_eq!(Sha256::of(b"abc").to_hex(), ABC_HEX);
        assert_eq!(Sha256::of(b"").to_hex(), EMPTY_HEX);
    }

    /// In pieces or whole, the same digest (a million `a`s: FIPS 180-2).
    #[test]
    fn incremental_hashing_matches_the_published_vector() {
        let mut h = Hasher::new();
        for _ in 0..1000 {
            h.update(&[b'a'; 1000]);
        }
        assert_eq!(
            h.finish().to_hex(),
            "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0"
        );
    }

    #[test]
    fn hex_parses_in_any_case_and_prints_lowercase() {
        let upper = Sha256::parse(&ABC_HEX.to_uppercase()).unwrap();
        assert_eq!(upper, Sha256::of(b"abc"));
        assert_eq!(upper.to_string(), ABC_HEX);
    }

    #[test]
    fn base64_forms_parse_to_the_same_digest() {
        let d = Sha256::of(b"abc");
        assert_eq!(
            d.to_base64(),
            "ungWv48Bz+pBQUDeXa4iI7ADYaOWF3qctBD/YfIAFa0="
        );
        assert_eq!(Sha256::parse(&d.to_base64()).unwrap(), d);
        assert_eq!(Sha256::parse(&d.to_base64url()).unwrap(), d);
    }

    #[test]
    fn malformed_digests_are_refused_with_a_reason() {
        assert_eq!(Sha256::parse("abc"), Err(DigestError::Length { len: 3 }));
        assert_eq!(Sha256::parse(&"g".repeat(64)), Err(DigestError::NotHex));
        assert_eq!(Sha256::parse(&"!".repeat(44)), Err(DigestError::NotBase64));
    }

    #[test]
    fn verifier_accepts_the_exact_stream() {
        let mut v = Verifier::new(3, Sha256::of(b"abc"));
        v.update(b"a").unwrap();
        v.update(b"bc").unwrap();
        assert_eq!(v.finish(), Ok(()));
    }

    #[test]
    fn verifier_refuses_long_short_and_wrong_streams() {
        let mut v = Verifier::new(3, Sha256::of(b"abc"));
        assert_eq!(v.update(b"abcd"), Err(Mismatch::TooLong { expected: 3 }));

        let mut v = Verifier::new(3, Sha256::of(b"abc"));
        v.update(b"ab").unwrap();
        assert_eq!(
            v.finish(),
            Err(Mismatch::TooShort {
                expected: 3,
                actual: 2
            })
        );

        let mut v = Verifier::new(3, Sha256::of(b"abc"));
        v.update(b"abd").unwrap();
        assert!(matches!(v.finish(), Err(Mismatch::Digest { .. })));
    }

    #[test]
    fn hold_back_releases_the_last_chunk_only_when_verified() {
        let mut h = HoldBack::new(6, Sha256::of(b"abcdef"));
        assert_eq!(h.push(Bytes::from_static(b"abc")).unwrap(), None);
        assert_eq!(
            h.push(Bytes::from_static(b"def")).unwrap(),
            Some(Bytes::from_static(b"abc"))
        );
        assert_eq!(h.finish().unwrap(), Some(Bytes::from_static(b"def")));

        let mut h = HoldBack::new(6, Sha256::of(b"abcdef"));
        h.push(Bytes::from_static(b"abc")).unwrap();
        h.push(Bytes::from_static(b"deX")).unwrap();
        assert!(matches!(h.finish(), Err(Mismatch::Digest { .. })));
    }

    #[test]
    fn hold_back_of_an_empty_stream_verifies_the_empty_digest() {
        let h = HoldBack::new(0, Sha256::of(b""));
        assert_eq!(h.finish().unwrap(), None);
    }
}
