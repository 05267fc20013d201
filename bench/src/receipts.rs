//! Receipts of custody (issue 69): signing and verifying one (ES256) beside
//! sealing and opening a download link's token (AES-256-GCM-SIV), the work
//! every request already does, in the same process, interleaved rounds.

use std::time::Instant;

use sluice::receipts::{Claims, FileClaims, ReceiptKey, jwks, verify};

use crate::harness::median;

fn claims() -> Claims {
    Claims {
        iss: "https://files.example.com".to_owned(),
        sub: "alice".to_owned(),
        iat: 1_800_000_000,
        event: "ready".to_owned(),
        file: FileClaims {
            id: "AaJPHzCDFejQi1aJ8OMCkg".to_owned(),
            sha256: sluice::Sha256::of(b"x"),
            size: 1 << 30,
            declared_type: "application/pdf".to_owned(),
            detected_type: Some("application/pdf".to_owned()),
            created_at: Some("2026-12-07T06:00:00Z".to_owned()),
            expires_at: Some("2026-12-07T07:00:00Z".to_owned()),
        },
        scan: None,
        source: Some(sluice::receipts::SourceClaims::Upload),
    }
}

/// Per second: `f` run `n` times.
fn rate(n: usize, mut f: impl FnMut()) -> f64 {
    let start = Instant::now();
    for _ in 0..n {
        f();
    }
    n as f64 / start.elapsed().as_secs_f64()
}

pub fn run(runs: usize) -> anyhow::Result<String> {
    let key = ReceiptKey::from_pkcs8(&ReceiptKey::generate()?)?;
    let set = jwks(&key, &[]);
    let receipt = key.sign(&claims())?;
    let keys = sluice::keys::Keyring::new(
        (
            sluice::keys::KeyId::new("k1")?,
            sluice::keys::MasterSecret::new(vec![7u8; 32]).expect("32 bytes"),
        ),
        None,
    );
    let id = sluice::FileId::random();
    let n = 2000;
    let (mut signs, mut verifies, mut seals, mut opens) = (vec![], vec![], vec![], vec![]);
    for _ in 0..runs {
        signs.push(rate(n, || {
            std::hint::black_box(key.sign(&claims()).unwrap());
        }));
        verifies.push(rate(n, || {
            std::hint::black_box(verify(&receipt, &set).unwrap());
        }));
        seals.push(rate(n, || {
            std::hint::black_box(
                sluice::token::Short::download(id.clone(), 1_800_000_000).encode(&keys),
            );
        }));
        let token = sluice::token::Short::download(id.clone(), 4_000_000_000).encode(&keys);
        opens.push(rate(n, || {
            std::hint::black_box(
                sluice::token::Short::decode(&keys, &token, sluice::token::ShortKind::Download, 0)
                    .unwrap(),
            );
        }));
    }
    let (sign, check, seal, open) = (
        median(signs),
        median(verifies),
        median(seals),
        median(opens),
    );
    Ok(format!(
        "## Receipts of custody: signing and verifying (issue 69)\n\n\
         `target/fast/sluice-bench --only receipts` ({runs} rounds of {n}, medians, one core): a receipt \
         signed (ES256, aws-lc-rs through jsonwebtoken) and verified from the JWKS, beside a download \
         link's token sealed and opened (AES-256-GCM-SIV), the work every link already costs.\n\n\
         | operation | per second | beside a link token's |\n|---|---|---|\n\
         | sign a receipt | {sign:.0} | {:.2}× sealing one ({seal:.0}/s) |\n\
         | verify a receipt | {check:.0} | {:.2}× opening one ({open:.0}/s) |\n\n",
        sign / seal,
        check / open,
    ))
}
