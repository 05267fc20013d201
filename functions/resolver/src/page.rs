//! The person's page for a download link: what a browser (or a chat's
//! link preview) gets when it asks for HTML. Name, size, SHA-256 and one
//! button that saves; showing it spends nothing, so a preview never burns
//! the link the person then opens. The button asks for the bytes
//! (`?save`) on the same link.

use axum::response::{IntoResponse, Response};
use http::{HeaderMap, HeaderValue, StatusCode, header};
use sluice::FileMeta;
use sluice::web::{escape, human_size};

/// User agents of link previews (chat unfurlers, mail and social
/// scanners) that fetch a pasted link before the person does, whatever
/// they accept: they get the page, never the bytes.
const PREVIEWS: &[&str] = &[
    "slackbot",
    "slack-imgproxy",
    "discordbot",
    "telegrambot",
    "whatsapp",
    "skypeuripreview",
    "teams",
    "microsoftpreview",
    "linkedinbot",
    "twitterbot",
    "facebookexternalhit",
    "facebot",
    "mattermost",
    "rocket.chat",
    "zulip",
    "embedly",
    "iframely",
    "redditbot",
    "applebot",
    "googlebot",
    "bingbot",
    "pinterestbot",
    "vkshare",
    "bitlybot",
];

/// Whether an `Accept` header asks for a page (a browser's navigation
/// does; curl's `*/*`, a script's `fetch` and a download manager do not).
pub fn asks_for_html(accept: Option<&str>) -> bool {
    accept.is_some_and(|a| {
        a.split(',').any(|t| {
            t.split(';')
                .next()
                .is_some_and(|t| t.trim().eq_ignore_ascii_case("text/html"))
        })
    })
}

/// Whether a `User-Agent` is a link preview's ([`PREVIEWS`]).
pub fn is_preview(agent: Option<&str>) -> bool {
    agent.is_some_and(|a| {
        let a = a.to_ascii_lowercase();
        PREVIEWS.iter().any(|p| a.contains(p))
    })
}

/// The page for `file`.
pub fn of(file: &FileMeta) -> Response {
    render(
        &file.filename,
        file.size,
        &format!("<p>SHA-256: <code id=\"sha256\">{}</code></p>", file.sha256),
        "Check the saved file with <code>sha256sum</code>: it must print the SHA-256 above.",
    )
}

/// The page for a zip of `files` files, `bytes` in all.
pub fn of_zip(file_name: &str, files: usize, bytes: u64) -> Response {
    render(
        file_name,
        bytes,
        &format!("<p id=\"files\">{files} files, in one zip.</p>"),
        "Each file was checked against its SHA-256 as the zip was built; <code>SHA256SUMS</code> in it lists them.",
    )
}

/// A page titled `name` for `size` bytes, with `detail` (HTML) and a
/// `hint` (HTML), and the button that saves.
fn render(name: &str, size: u64, detail: &str, hint: &str) -> Response {
    let name = escape(name);
    let body = format!(
        r#"<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="robots" content="noindex, nofollow"><title>{name}</title>
<style>body{{font:16px/1.5 system-ui,sans-serif;max-width:40rem;margin:2rem auto;padding:0 1rem;color-scheme:light dark}}
code{{word-break:break-all}}a.save{{display:inline-block;padding:.6rem 1.2rem;border-radius:.4rem;background:#2563eb;color:#fff;text-decoration:none}}
.hint{{opacity:.75;font-size:.9rem}}</style></head>
<body><main>
<h1 id="name">{name}</h1>
<p id="size">{human} ({size} bytes)</p>
{detail}
<p><a class="save" id="save" href="?save" download rel="nofollow noopener">Save the file</a></p>
<p class="hint">This link saves once, until it expires; opening this page does not use it up. {hint}</p>
</main></body></html>
"#,
        human = human_size(size),
    );
    let mut h = HeaderMap::new();
    let mut set = |name: header::HeaderName, value: &'static str| {
        h.insert(name, HeaderValue::from_static(value));
    };
    set(header::CONTENT_TYPE, "text/html; charset=utf-8");
    set(header::CACHE_CONTROL, "no-store");
    set(
        header::CONTENT_SECURITY_POLICY,
        "default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
    );
    set(header::REFERRER_POLICY, "no-referrer");
    set(header::X_CONTENT_TYPE_OPTIONS, "nosniff");
    set(header::X_FRAME_OPTIONS, "DENY");
    set(
        header::HeaderName::from_static("x-robots-tag"),
        "noindex, nofollow",
    );
    (StatusCode::OK, h, body).into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_browser_asks_for_html_and_curl_does_not() {
        let chrome = "text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,*/*;q=0.8";
        assert!(asks_for_html(Some(chrome)));
        assert!(asks_for_html(Some("TEXT/HTML")));
        assert!(!asks_for_html(Some("*/*")));
        assert!(!asks_for_html(Some("application/octet-stream")));
        assert!(!asks_for_html(Some("text/htmlx")));
        assert!(!asks_for_html(None));
    }

    #[test]
    fn previews_are_known_by_their_agents() {
        assert!(is_preview(Some(
            "Slackbot-LinkExpanding 1.0 (+https://api.slack.com/robots)"
        )));
        assert!(is_preview(Some(
            "Mozilla/5.0 (compatible; Discordbot/2.0; +https://discordapp.com)"
        )));
        assert!(is_preview(Some("facebookexternalhit/1.1")));
        assert!(!is_preview(Some("curl/8.5.0")));
        assert!(!is_preview(Some(
            "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 Chrome/126.0 Safari/537.36"
        )));
        assert!(!is_preview(None));
    }
}
