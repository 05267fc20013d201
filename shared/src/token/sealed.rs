//! Sealed tokens (a browser page's), encrypted as well as authenticated.
//!
//! A page's URL travels through the model's context, logs and proxies, so
//! its claims (owner, filename, content type) must not be readable by
//! whoever sees them. A sealed token is
//! `<kind>.<kid>.<base64url(nonce ‖ ciphertext ‖ tag)>`: the claims as JSON,
//! encrypted under AES-256-GCM-SIV with the key derived for the token's
//! purpose, with the visible `<kind>.<kid>` as associated data, so neither can
//! be swapped. GCM-SIV keeps its guarantees even if a random 96-bit nonce ever
//! repeated. A sealed token is shorter than the HS256 JWT of the same claims
//! (no header, a 28-byte nonce and tag instead of a 32-byte signature), which
//! a test pins.

use aws_lc_rs::aead::{AES_256_GCM_SIV, Aad, LessSafeKey, NONCE_LEN, Nonce, UnboundKey};
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use super::error::TokenError;
use crate::keys::{Keyring, Purpose};

/// The visible first segment of each kind of sealed token. Version 1.
pub(crate) const KINDS: [&str; 1] = [PAGE];
pub(crate) const PAGE: &str = "p1";

const TAG_LEN: usize = 16;

#[derive(Serialize, Deserialize)]
struct Envelope<C> {
    exp: i64,
    #[serde(flatten)]
    claims: C,
}

fn cipher(key: &[u8; 32]) -> LessSafeKey {
    LessSafeKey::new(
        UnboundKey::new(&AES_256_GCM_SIV, key).expect("a 32-byte key fits AES-256-GCM-SIV"),
    )
}

/// Seals `claims`, valid until `exp`, as a token of `kind` under the current
/// key for `purpose`.
pub(crate) fn seal<C: Serialize>(
    keys: &Keyring,
    purpose: Purpose,
    kind: &str,
    claims: C,
    exp: i64,
) -> String {
    let (kid, key) = keys.signing_key(purpose);
    let mut data = serde_json::to_vec(&Envelope { exp, claims })
        .expect("serializing plain claims to JSON cannot fail");
    let mut nonce = [0u8; NONCE_LEN];
    getrandom::fill(&mut nonce).expect("the operating system's random source is available");
    let aad = format!("{kind}.{}", kid.as_str());
    cipher(key)
        .seal_in_place_append_tag(
            Nonce::assume_unique_for_key(nonce),
            Aad::from(aad.as_bytes()),
            &mut data,
        )
        .expect("sealing a short buffer cannot fail");
    let mut sealed = nonce.to_vec();
    sealed.extend_from_slice(&data);
    format!("{aad}.{}", URL_SAFE_NO_PAD.encode(sealed))
}

/// Opens a sealed token of `kind` for `purpose`: its claims and expiry.
/// Every defect is its own [`TokenError`]; an expired token is refused.
pub(crate) fn open<C: DeserializeOwned>(
    keys: &Keyring,
    purpose: Purpose,
    kind: &str,
    token: &str,
) -> Result<(C, i64), TokenError> {
    if token.is_empty() {
        return Err(TokenError::Empty);
    }
    // The kid may hold dots; the kind and the base64url data never do.
    let (found, rest) = token.split_once('.').ok_or(TokenError::Malformed)?;
    let (kid, data) = rest.rsplit_once('.').ok_or(TokenError::Malformed)?;
    if found != kind {
        return Err(if KINDS.contains(&found) {
            TokenError::WrongType
        } else {
            TokenError::Malformed
        });
    }
    let mut sealed = URL_SAFE_NO_PAD
        .decode(data)
        .map_err(|_| TokenError::Malformed)?;
    if sealed.len() < NONCE_LEN + TAG_LEN {
        return Err(TokenError::Malformed);
    }
    let key = keys
        .verifying_key(purpose, kid)
        .ok_or(TokenError::UnknownKey)?;
    let mut ciphertext = sealed.split_off(NONCE_LEN);
    let nonce = Nonce::try_assume_unique_for_key(&sealed).map_err(|_| TokenError::Malformed)?;
    let aad = &token[..found.len() + 1 + kid.len()];
    let plain = cipher(key)
        .open_in_place(nonce, Aad::from(aad.as_bytes()), &mut ciphertext)
        .map_err(|_| TokenError::BadSignature)?;
    let envelope: Envelope<C> = serde_json::from_slice(plain).map_err(|_| TokenError::Malformed)?;
    if envelope.exp <= crate::time::now_unix() {
        return Err(TokenError::Expired);
    }
    Ok((envelope.claims, envelope.exp))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::token::tests::ring;

    #[derive(Serialize, Deserialize, Debug, PartialEq)]
    struct Claims {
        sub: String,
        x: u32,
    }

    fn claims() -> Claims {
        Claims {
            sub: "alice@example.com".into(),
            x: 7,
        }
    }

    fn later() -> i64 {
        crate::time::now_unix() + 60
    }

    #[test]
    fn a_sealed_token_opens_and_hides_its_claims() {
        let keys = ring("k1", 1);
        let exp = later();
        let t = seal(&keys, Purpose::Page, PAGE, claims(), exp);
        assert_eq!(open(&keys, Purpose::Page, PAGE, &t), Ok((claims(), exp)));
        // Nothing of the claims can be read off the token, in any encoding.
        let data = t.rsplit('.').next().unwrap();
        let bytes = URL_SAFE_NO_PAD.decode(data).unwrap();
        assert!(!t.contains("alice"));
        assert!(!String::from_utf8_lossy(&bytes).contains("alice"));
        // Each sealing is fresh: two tokens of the same claims differ.
        assert_ne!(t, seal(&keys, Purpose::Page, PAGE, claims(), exp));
    }

    #[test]
    fn each_defect_has_its_own_error() {
        let keys = ring("k1", 1);
        let t = seal(&keys, Purpose::Page, PAGE, claims(), later());
        let open_link = |t: &str| open::<Claims>(&keys, Purpose::Page, PAGE, t);

        assert_eq!(open_link(""), Err(TokenError::Empty));
        assert_eq!(open_link("nodots"), Err(TokenError::Malformed));
        assert!(matches!(
            open_link(&t[..t.len() / 2]),
            Err(TokenError::Malformed | TokenError::BadSignature)
        ));
        assert_eq!(open_link("p1.k1.AAAA"), Err(TokenError::Malformed));
        assert_eq!(open_link("p1.k1.!!!"), Err(TokenError::Malformed));
        assert_eq!(
            open::<Claims>(&ring("k9", 1), Purpose::Page, PAGE, &t),
            Err(TokenError::UnknownKey)
        );
        assert_eq!(
            open::<Claims>(&ring("k1", 2), Purpose::Page, PAGE, &t),
            Err(TokenError::BadSignature)
        );
        // The kind and key id are bound: relabelling the key id breaks it
        // even where the key would be the same.
        let relabelled = t.replacen("p1.k1.", "p1.k1x.", 1);
        assert_eq!(
            open::<Claims>(&ring("k1x", 1), Purpose::Page, PAGE, &relabelled),
            Err(TokenError::BadSignature)
        );
        // A JWT is not a sealed token.
        assert_eq!(
            open_link("eyJhbGciOiJIUzI1NiJ9.eyJ4Ijo3fQ.c2ln"),
            Err(TokenError::Malformed)
        );
        let expired = seal(&keys, Purpose::Page, PAGE, claims(), 1);
        assert_eq!(open_link(&expired), Err(TokenError::Expired));
    }

    #[test]
    fn a_flipped_bit_anywhere_is_refused() {
        let keys = ring("k1", 1);
        let t = seal(&keys, Purpose::Page, PAGE, claims(), later());
        let data = t.rsplit('.').next().unwrap();
        let bytes = URL_SAFE_NO_PAD.decode(data).unwrap();
        for i in 0..bytes.len() {
            let mut flipped = bytes.clone();
            flipped[i] ^= 1;
            let forged = format!("p1.k1.{}", URL_SAFE_NO_PAD.encode(&flipped));
            assert_eq!(
                open::<Claims>(&keys, Purpose::Page, PAGE, &forged),
                Err(TokenError::BadSignature),
                "byte {i}"
            );
        }
    }

    #[test]
    fn a_key_id_with_dots_is_kept_whole() {
        let keys = ring("2026.11.a", 1);
        let t = seal(&keys, Purpose::Page, PAGE, claims(), later());
        assert!(t.starts_with("p1.2026.11.a."));
        assert!(open::<Claims>(&keys, Purpose::Page, PAGE, &t).is_ok());
    }

    #[test]
    fn sealed_is_shorter_than_the_jwt_of_the_same_claims() {
        #[derive(Serialize)]
        struct WithExp {
            #[serde(flatten)]
            claims: Claims,
            exp: i64,
        }
        let keys = ring("k1", 1);
        let exp = later();
        let sealed = seal(&keys, Purpose::Page, PAGE, claims(), exp);
        let jwt = super::super::sign(
            &keys,
            Purpose::Page,
            "sluice-page",
            &WithExp {
                claims: claims(),
                exp,
            },
        );
        assert!(
            sealed.len() < jwt.len(),
            "{} vs {}",
            sealed.len(),
            jwt.len()
        );
    }
}
