//! The upload page: one HTML document per page token, and its static
//! assets served beside it (the form it shares with the in-chat widget,
//! `sluice::web`, the hasher, its own script). No inline script or style,
//! no external request: the Content-Security-Policy allows only these and
//! the store's origin for the PUT.

use http::{HeaderMap, HeaderValue, StatusCode, header};

use sluice::service::pages::page_refusal;
use sluice::token::{PageToken, TokenError};
use sluice::web::{self, escape, human_size};

/// A static asset of the page.
#[derive(Debug, Clone, Copy)]
pub struct Asset {
    /// Its name under `/browser/assets/`.
    pub name: &'static str,
    /// Its media type.
    pub content_type: &'static str,
    /// Its bytes.
    pub body: &'static str,
}

const JS: &str = "text/javascript; charset=utf-8";

/// The page's scripts (the hasher, the tus client, the shared form, the
/// page's own) and
/// style, in the order the page loads them.
pub const ASSETS: [Asset; 6] = [
    Asset {
        name: "noble-sha256.js",
        content_type: JS,
        body: web::NOBLE_SHA256_JS,
    },
    Asset {
        name: "hash-wasm-sha256.js",
        content_type: JS,
        body: web::HASH_WASM_SHA256_JS,
    },
    Asset {
        name: "tus.js",
        content_type: JS,
        body: web::TUS_JS,
    },
    Asset {
        name: "upload.js",
        content_type: JS,
        body: web::UPLOAD_JS,
    },
    Asset {
        name: "page.js",
        content_type: JS,
        body: include_str!("assets/page.js"),
    },
    Asset {
        name: "upload.css",
        content_type: "text/css; charset=utf-8",
        body: web::UPLOAD_CSS,
    },
];

/// The headers of every page answer: never stored, never framed, no
/// referrer, and a policy that allows only the page's own assets, its own
/// origin, and `store_origin` (the presigned PUT's, on S3); and the
/// compiling of its own WebAssembly (`'wasm-unsafe-eval'`: hash-wasm's
/// SHA-256, which no `eval` of a string can reach).
pub fn headers(store_origin: Option<&str>) -> HeaderMap {
    let connect = match store_origin {
        Some(origin) => format!("'self' {origin}"),
        None => "'self'".to_owned(),
    };
    let csp = format!(
        "default-src 'none'; script-src 'self' 'wasm-unsafe-eval'; style-src 'self'; img-src 'self' data:; \
         connect-src {connect}; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
    );
    let mut h = HeaderMap::new();
    let mut set = |name: header::HeaderName, value: &str| {
        if let Ok(v) = HeaderValue::from_str(value) {
            h.insert(name, v);
        }
    };
    set(header::CONTENT_TYPE, "text/html; charset=utf-8");
    set(header::CACHE_CONTROL, "no-store");
    set(header::CONTENT_SECURITY_POLICY, &csp);
    set(header::REFERRER_POLICY, "no-referrer");
    set(header::X_CONTENT_TYPE_OPTIONS, "nosniff");
    set(header::X_FRAME_OPTIONS, "DENY");
    h
}

/// The page for `page` (or the reason it cannot be used), and its status.
pub fn render(page: &Result<PageToken, TokenError>) -> (StatusCode, String) {
    let (status, body) = match page {
        Ok(p) => {
            let wanted = match (&p.filename, p.files) {
                (Some(f), 1) => format!(
                    "<p id=\"wanted\">Choose <strong>{}</strong> from your computer.</p>",
                    escape(f)
                ),
                (None, 1) => "<p id=\"wanted\">Choose the file from your computer.</p>".to_owned(),
                (_, n) => {
                    format!("<p id=\"wanted\">Choose up to {n} files from your computer.</p>")
                }
            };
            let intro = format!(
                "<h1>Upload {what}</h1>\n{wanted}\n<p class=\"hint\">It goes straight to secure storage for this conversation; files up to {max_h}. The link works once and expires at <time datetime=\"{exp_iso}\">{exp_iso}</time>.</p>",
                what = if p.files > 1 { "files" } else { "a file" },
                max_h = human_size(p.max_size),
                exp_iso = sluice::time::rfc3339(p.expires_at),
            );
            let body = web::form(
                &format!(
                    " data-max-size=\"{}\" data-expires-at=\"{}\" data-files=\"{}\"",
                    p.max_size, p.expires_at, p.files
                ),
                &intro,
            );
            (StatusCode::OK, body)
        }
        Err(e) => {
            let status = match e {
                TokenError::Expired => StatusCode::GONE,
                _ => StatusCode::NOT_FOUND,
            };
            let body = format!(
                "<main id=\"page\" class=\"refused\">\n<h1>This link cannot be used</h1>\n<div id=\"error\" class=\"error\" role=\"alert\">{}</div>\n</main>",
                escape(page_refusal(e))
            );
            (status, body)
        }
    };
    let html = format!(
        "<!doctype html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <meta name=\"referrer\" content=\"no-referrer\">\n<title>Upload a file</title>\n\
         <link rel=\"stylesheet\" href=\"assets/upload.css\">\n\
         <script src=\"assets/noble-sha256.js\" defer></script>\n\
         <script src=\"assets/hash-wasm-sha256.js\" defer></script>\n\
         <script src=\"assets/tus.js\" defer></script>\n\
         <script src=\"assets/upload.js\" defer></script>\n\
         <script src=\"assets/page.js\" defer></script>\n</head>\n<body>\n{body}\n</body>\n</html>\n"
    );
    (status, html)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_suggested_name_is_escaped() {
        let page = Ok(PageToken {
            owner: "alice".into(),
            file_id: sluice::FileId::random(),
            filename: Some("<img src=x onerror=alert(1)>.pdf".into()),
            content_type: None,
            max_size: 10,
            files: 1,
            expires_at: sluice::time::now_unix() + 60,
        });
        let (status, html) = render(&page);
        assert_eq!(status, StatusCode::OK);
        assert!(!html.contains("<img"));
        assert!(html.contains("&lt;img src=x"));
        assert!(!html.contains("<script>"), "no inline script");
    }

    #[test]
    fn an_expired_page_says_so_with_410() {
        let (status, html) = render(&Err(TokenError::Expired));
        assert_eq!(status, StatusCode::GONE);
        assert!(html.contains("expired"));
    }
}
