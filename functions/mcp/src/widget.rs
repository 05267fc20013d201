//! The upload and the download inside the conversation: MCP Apps (SEP-1865,
//! stable 2026-01-26) for hosts that render them. `request_browser_upload`
//! names [`URI`] in its `_meta`, `get_download_url` [`DOWNLOAD_URI`];
//! `resources/read` answers each view's HTML (the upload: [`html`], the
//! same form as the browser page; the download: [`download_html`], one
//! button that asks the host to save the file), inline, nothing fetched
//! from elsewhere, with [`MIME`] and, in the content's `_meta.ui`
//! ([`meta`], [`download_meta`]), the only origins it may reach and the
//! sandbox `domain` claude.ai requires. Hosts without MCP Apps ignore all
//! of it and show the tool's text: the page's URL, the download line.

use std::sync::OnceLock;

use rmcp::model::MetaObject;
use serde_json::json;
use sluice::Sluice;
use sluice::web;

/// The upload widget's resource.
pub const URI: &str = "ui://sluice/upload.html";

/// The download view's resource.
pub const DOWNLOAD_URI: &str = "ui://sluice/download.html";

/// What an MCP App's HTML is served as.
pub const MIME: &str = "text/html;profile=mcp-app";

/// The extension hosts announce in `initialize` when they render MCP Apps.
pub const EXTENSION: &str = "io.modelcontextprotocol/ui";

/// A tool's `_meta` naming the view `uri`, under the stable key and the
/// flat key claude.ai read for a while (the official `registerAppTool`
/// still writes both).
pub fn tool_meta(uri: &str) -> MetaObject {
    let mut meta = MetaObject::new();
    meta.insert("ui".into(), json!({"resourceUri": uri}));
    meta.insert("ui/resourceUri".into(), json!(uri));
    meta
}

/// One view's document: `body`, its style and scripts inline (an MCP App
/// is one document; the host's policy allows inline script and style, and
/// nothing from any origin not declared), after the shared messages
/// (`assets/apps.js`).
fn document(title: &str, css: &[&str], body: &str, scripts: &[&str]) -> String {
    let scripts: String = std::iter::once(include_str!("assets/apps.js"))
        .chain(scripts.iter().copied())
        .map(|js| format!("<script>\n{js}</script>\n"))
        .collect();
    format!(
        "<!doctype html>\n<html lang=\"en\" data-version=\"{version}\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <meta name=\"referrer\" content=\"no-referrer\">\n<title>{title}</title>\n\
         <style>\n{css}</style>\n</head>\n<body>\n{body}\n{scripts}</body>\n</html>\n",
        version = env!("CARGO_PKG_VERSION"),
        css = css.concat(),
    )
}

/// The upload widget's document: the shared form and its scripts.
pub fn html() -> &'static str {
    static HTML: OnceLock<String> = OnceLock::new();
    HTML.get_or_init(|| {
        let intro = "<h1>Upload a file</h1>\n<p id=\"wanted\">Getting the upload ready…</p>\n\
                     <p class=\"hint\">It goes straight to secure storage, not through the chat.</p>";
        document(
            "Upload a file",
            &[web::UPLOAD_CSS, include_str!("assets/widget.css")],
            &web::form("", intro),
            &[
                web::NOBLE_SHA256_JS,
                web::TUS_JS,
                web::UPLOAD_JS,
                include_str!("assets/widget.js"),
            ],
        )
    })
}

/// The download view's document: what the file is, and one button that
/// saves it: files up to `SLUICE_VIEW_EMBED_MAX_BYTES` (`data-embed-max`)
/// fetched from sluice, checked against their SHA-256 and handed to the
/// host as embedded content; larger ones opened as the person's link.
pub fn download_html(sluice: &Sluice) -> String {
    let body = format!(
        "<main data-embed-max=\"{max}\">\n<h1>Download a file</h1>\n\
         <p id=\"what\" aria-live=\"polite\">Getting the download ready…</p>\n\
         <button id=\"save\" class=\"button\" type=\"button\" hidden>Save the file</button>\n\
         <p id=\"said\" role=\"status\" aria-live=\"polite\"></p>\n\
         <p class=\"hint\">It comes straight from secure storage, not through the chat.</p>\n</main>",
        max = sluice.transfers().view_embed_max,
    );
    document(
        "Download a file",
        &[web::UPLOAD_CSS, include_str!("assets/widget.css")],
        &body,
        &[include_str!("assets/download.js")],
    )
}

/// The upload widget's `_meta.ui`: the origins it connects to (the
/// issuer's, for the start and the parts' routes; the store's, where it
/// is not the issuer: S3's, for the presigned PUTs), nothing else; the
/// sandbox `domain` claude.ai runs it on; a border.
pub async fn meta(sluice: &Sluice) -> MetaObject {
    let mut connect = vec![sluice.issuer_url().origin().ascii_serialization()];
    if let Some(store) = sluice.uploads().store_origin().await
        && !connect.contains(&store)
    {
        connect.push(store);
    }
    ui_meta(sluice, connect)
}

/// The download view's `_meta.ui`: it connects to the resolver (and the
/// store it redirects to, where that is another origin) for the files it
/// embeds, and opens the person's links there without the host's prompt
/// (`linkTrustedDomains`, the ext-apps draft's list of link origins a view
/// may open as trusted); the `domain`, a border.
pub async fn download_meta(sluice: &Sluice) -> MetaObject {
    let resolver = url::Url::parse(sluice.resolver_base())
        .map(|u| u.origin().ascii_serialization())
        .unwrap_or_default();
    let mut connect = vec![resolver.clone()];
    if let Some(store) = sluice.uploads().store_origin().await
        && !connect.contains(&store)
    {
        connect.push(store);
    }
    let mut meta = ui_meta(sluice, connect);
    if let Some(ui) = meta.get_mut("ui").and_then(|v| v.as_object_mut()) {
        ui.insert("linkTrustedDomains".into(), json!([resolver]));
    }
    meta
}

fn ui_meta(sluice: &Sluice, connect: Vec<String>) -> MetaObject {
    let mut meta = MetaObject::new();
    meta.insert(
        "ui".into(),
        json!({
            "csp": {"connectDomains": connect, "resourceDomains": []},
            "domain": web::claude_domain(sluice.mcp_url()),
            "prefersBorder": true,
        }),
    );
    meta
}
