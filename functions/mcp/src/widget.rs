//! The upload inside the conversation: an MCP App (SEP-1865, stable
//! 2026-01-26) for hosts that render one. `request_browser_upload` names
//! [`URI`] in its `_meta`; `resources/read` answers the widget's HTML
//! ([`html`], the same form as the browser page, inline, nothing fetched
//! from elsewhere) with [`MIME`] and, in the content's `_meta.ui`
//! ([`meta`]), the only origins it may reach and the sandbox `domain`
//! claude.ai requires. Hosts without MCP Apps ignore all of it and show
//! the tool's text: the page's URL.

use std::sync::OnceLock;

use rmcp::model::MetaObject;
use serde_json::json;
use sluice::Sluice;
use sluice::web;

/// The widget's resource.
pub const URI: &str = "ui://sluice/upload.html";

/// What an MCP App's HTML is served as.
pub const MIME: &str = "text/html;profile=mcp-app";

/// The extension hosts announce in `initialize` when they render MCP Apps.
pub const EXTENSION: &str = "io.modelcontextprotocol/ui";

/// The tool's `_meta`: the widget's resource, under the stable key and the
/// flat key claude.ai read for a while (the official `registerAppTool`
/// still writes both).
pub fn tool_meta() -> MetaObject {
    let mut meta = MetaObject::new();
    meta.insert("ui".into(), json!({"resourceUri": URI}));
    meta.insert("ui/resourceUri".into(), json!(URI));
    meta
}

/// The widget's document: the shared form, its style and scripts inline
/// (an MCP App is one document; the host's policy allows inline script and
/// style, and nothing from any origin not declared).
pub fn html() -> &'static str {
    static HTML: OnceLock<String> = OnceLock::new();
    HTML.get_or_init(|| {
        let intro = "<h1>Upload a file</h1>\n<p id=\"wanted\">Getting the upload ready…</p>\n\
                     <p class=\"hint\">It goes straight to secure storage, not through the chat.</p>";
        format!(
            "<!doctype html>\n<html lang=\"en\" data-version=\"{version}\">\n<head>\n<meta charset=\"utf-8\">\n\
             <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
             <meta name=\"referrer\" content=\"no-referrer\">\n<title>Upload a file</title>\n\
             <style>\n{css}{widget_css}</style>\n</head>\n<body>\n{form}\n\
             <script>\n{noble}</script>\n<script>\n{upload}</script>\n<script>\n{widget}</script>\n\
             </body>\n</html>\n",
            version = env!("CARGO_PKG_VERSION"),
            css = web::UPLOAD_CSS,
            widget_css = include_str!("assets/widget.css"),
            form = web::form("", intro),
            noble = web::NOBLE_SHA256_JS,
            upload = web::UPLOAD_JS,
            widget = include_str!("assets/widget.js"),
        )
    })
}

/// The content's `_meta.ui`: the origins the widget connects to (the
/// issuer's, for the start and the parts' routes; the store's, where it
/// is not the issuer: S3's, for the presigned PUTs), nothing else; the
/// sandbox `domain` claude.ai runs it on; a border.
pub async fn meta(sluice: &Sluice) -> MetaObject {
    let mut connect = vec![sluice.issuer_url().origin().ascii_serialization()];
    if let Some(store) = sluice.store_origin().await
        && !connect.contains(&store)
    {
        connect.push(store);
    }
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
