//! What the person's browser runs: the upload form shared by the browser
//! page (served by the issuer) and the in-chat widget (an MCP App, served
//! by the `mcp` function as a `ui://` resource). Text only, no I/O.
//!
//! The form's script ([`UPLOAD_JS`]) hashes the picked file, asks the
//! page's start route for a PUT signed for exactly that size and digest,
//! and sends the bytes straight to the store with progress (locally as one
//! resumable tus upload, [`TUS_JS`]; on S3 in parts above the single-PUT
//! size). Files over 512 MiB are hashed incrementally, by hash-wasm on the
//! page ([`HASH_WASM_SHA256_JS`]) and by `@noble/hashes` in the widget
//! ([`NOBLE_SHA256_JS`], vendored: see [`NOBLE_VERSION`]); smaller ones by
//! the browser's WebCrypto.

use crate::sha::Sha256;

/// The upload form's script: `sluiceForm(how)`.
pub const UPLOAD_JS: &str = include_str!("upload.js");

/// The upload form's style (light and dark, 320 px and up).
pub const UPLOAD_CSS: &str = include_str!("upload.css");

/// `@noble/hashes`' SHA-256 as one script defining `nobleSha256`, bundled
/// from the pinned release by `tests/clients/vendor.mjs` (MIT: its licence
/// is `noble-hashes.LICENSE` beside it).
pub const NOBLE_SHA256_JS: &str = include_str!("noble-sha256.js");

/// tus-js-client's browser build as one script defining `tus`, bundled by
/// `tests/clients/vendor.mjs` (its MIT licence is `tus-js-client.LICENSE`
/// beside it): how the page and the widget send a file where sluice
/// receives the bytes, resuming from where the upload stands.
pub const TUS_JS: &str = include_str!("tus.js");

/// hash-wasm's SHA-256 (WebAssembly) as one script defining
/// `hashWasmSha256`, bundled by `tests/clients/vendor.mjs` (MIT,
/// `hash-wasm.LICENSE` beside it): how the page hashes a file too large
/// for WebCrypto, at several times @noble/hashes' speed. The page's policy
/// allows it (`'wasm-unsafe-eval'`); the widget's host gives no such
/// permission, so the widget does without it.
pub const HASH_WASM_SHA256_JS: &str = include_str!("hash-wasm-sha256.js");

/// The hash-wasm release [`HASH_WASM_SHA256_JS`] is built from.
pub const HASH_WASM_VERSION: &str = "4.13.0";

/// The tus-js-client release [`TUS_JS`] is built from.
pub const TUS_VERSION: &str = "4.3.1";

/// The `@noble/hashes` release [`NOBLE_SHA256_JS`] is built from.
pub const NOBLE_VERSION: &str = "2.0.1";

/// `s` safe inside HTML text and attribute values.
pub fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
        .replace('\'', "&#39;")
}

/// Bytes as a person reads them: `3.2 MB`.
pub fn human_size(n: u64) -> String {
    const UNITS: [&str; 5] = ["bytes", "KB", "MB", "GB", "TB"];
    let mut v = n as f64;
    let mut unit = 0;
    while v >= 1000.0 && unit < UNITS.len() - 1 {
        v /= 1000.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{n} bytes")
    } else {
        format!("{v:.1} {}", UNITS[unit])
    }
}

/// The form's markup, the ids [`UPLOAD_JS`] works with: `attrs` on its
/// `<main>` (e.g. `data-max-size="…"`), `intro` (HTML, already escaped)
/// above the drop zone.
pub fn form(attrs: &str, intro: &str) -> String {
    format!(
        r#"<main id="page"{attrs}>
{intro}
<label id="zone" class="zone" for="file">
<span class="zone-title">Drop the file here</span>
<span class="zone-or">or</span>
<span class="button">Choose a file…</span>
<input id="file" name="file" type="file">
</label>
<section id="progress-box" class="progress-box" hidden aria-labelledby="phase">
<p id="phase" class="phase"></p>
<progress id="bar" max="100" value="0" aria-labelledby="phase"></progress>
<p id="figures" class="figures"></p>
</section>
<div id="done" class="done" role="status" hidden></div>
<div id="error" class="error" role="alert" hidden></div>
<button id="retry" class="button" type="button" hidden>Try again</button>
<p id="live" class="visually-hidden" aria-live="polite"></p>
</main>"#
    )
}

/// The origin claude.ai runs an MCP App of the connector at `mcp_url` on
/// (its `domain`): `https://` + the first 32 hex characters of the SHA-256
/// of the URL the person added, + `.claudemcpcontent.com`. Any other shape
/// of `domain` is refused there.
pub fn claude_domain(mcp_url: &str) -> String {
    let hex = Sha256::of(mcp_url.as_bytes()).to_hex();
    format!("{}.claudemcpcontent.com", &hex[..32])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_read_as_people_read_them() {
        assert_eq!(human_size(0), "0 bytes");
        assert_eq!(human_size(999), "999 bytes");
        assert_eq!(human_size(52_428_800), "52.4 MB");
        assert_eq!(human_size(5 << 30), "5.4 GB");
    }

    #[test]
    fn claude_s_domain_is_the_url_s_digest() {
        // Computed apart: `printf %s https://files.example.com/mcp | sha256sum`.
        let domain = claude_domain("https://files.example.com/mcp");
        let (hash, rest) = domain.split_once('.').unwrap();
        assert_eq!(rest, "claudemcpcontent.com");
        assert_eq!(hash.len(), 32);
        assert!(
            hash.chars()
                .all(|c| c.is_ascii_hexdigit() && !c.is_ascii_uppercase())
        );
        assert_eq!(hash, "aeffd0e4d5d295105bfdb90dfdec6b08");
        assert_ne!(domain, claude_domain("https://files.example.com/mcp/"));
    }

    #[test]
    fn the_form_escapes_nothing_it_is_given_and_has_every_id_the_script_uses() {
        let html = form(" data-x=\"1\"", "<p>hi</p>");
        assert!(html.contains("id=\"page\""));
        for id in [
            "file",
            "zone",
            "progress-box",
            "phase",
            "bar",
            "figures",
            "done",
            "error",
            "retry",
            "live",
        ] {
            assert!(html.contains(&format!("id=\"{id}\"")), "{id}");
            assert!(
                UPLOAD_JS.contains(&format!("\"{id}\"")),
                "the script uses {id}"
            );
        }
        assert!(html.starts_with("<main id=\"page\" data-x=\"1\">\n<p>hi</p>"));
    }
}
