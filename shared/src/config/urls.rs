//! Where clients reach sluice, one group: the public URL and each
//! function's base, the MCP URL, and the origins the widget runs on. Each
//! default is decided here, once ([`Urls::resolve`]), from the URL the
//! server is reached at.

use url::Url;

use super::ConfigError;
use super::read::{self, Vars};
use super::settings::Default::Unset;
use super::settings::Group;
use super::settings::{Parse, Setting, s};

/// The URLs as configured (a default is `None` or empty until resolved).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Urls {
    /// The origin clients reach sluice at (`SLUICE_PUBLIC_URL`); by default
    /// the address it listens on.
    pub public: Option<Url>,
    /// The issuer's base (`SLUICE_ISSUER_URL`): upload links and browser
    /// pages; by default the public URL.
    pub issuer: Option<Url>,
    /// The resolver's base (`SLUICE_RESOLVER_URL`): download links; by
    /// default the public URL.
    pub resolver: Option<Url>,
    /// The MCP endpoint's URL, when it is not the public URL + `/mcp`
    /// (`SLUICE_MCP_URL`, ending in `/mcp`): one prefix per function under
    /// `cargo lambda watch`, say. It is the RFC 8707 resource.
    pub mcp: Option<Url>,
    /// The origins the in-chat widget runs on (`SLUICE_WIDGET_ORIGINS`;
    /// empty: claude.ai's for this connector, derived from the MCP URL).
    pub widget_origins: Vec<String>,
}

/// The URLs with every default decided, for a server reached at a public
/// URL: what the service holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Endpoints {
    /// The origin (and path prefix) clients reach sluice at.
    pub public: Url,
    /// Where the issuer's routes are (upload links, browser pages).
    pub issuer: Url,
    /// Where the resolver's routes are (download links).
    pub resolver: Url,
    /// The MCP endpoint's URL (the RFC 8707 resource).
    pub mcp: Url,
    /// The origins the in-chat upload widget runs on, which the upload
    /// routes answer CORS for.
    pub widget_origins: Vec<String>,
}

impl Endpoints {
    /// The base of the issuer's routes (`/uploads`, `/u/…`, `/browser/…`),
    /// without a trailing slash: each link follows the function that serves
    /// it.
    pub fn issuer_base(&self) -> &str {
        self.issuer.as_str().trim_end_matches('/')
    }

    /// The base of the resolver's routes (`/l/…`, `/resolve`), without a
    /// trailing slash.
    pub fn resolver_base(&self) -> &str {
        self.resolver.as_str().trim_end_matches('/')
    }
}

impl Urls {
    pub(super) fn read(vars: &Vars) -> Result<Self, ConfigError> {
        Ok(Self {
            public: vars.url("SLUICE_PUBLIC_URL")?,
            issuer: vars.url("SLUICE_ISSUER_URL")?,
            resolver: vars.url("SLUICE_RESOLVER_URL")?,
            mcp: vars.url("SLUICE_MCP_URL")?,
            widget_origins: widget_origins(vars)?,
        })
    }

    /// The MCP endpoint's URL for a server reached at `public`:
    /// `SLUICE_MCP_URL`, or `public` + `/mcp`.
    pub fn mcp_at(&self, public: &Url) -> Url {
        self.mcp.clone().unwrap_or_else(|| {
            let base = public.as_str().trim_end_matches('/');
            Url::parse(&format!("{base}/mcp")).expect("a URL with /mcp appended is a URL")
        })
    }

    /// Every URL for a server reached at `public`, each default decided.
    pub fn resolve(&self, public: Url) -> Endpoints {
        let mcp = self.mcp_at(&public);
        let widget_origins = if self.widget_origins.is_empty() {
            vec![format!(
                "https://{}",
                crate::web::claude_domain(mcp.as_str())
            )]
        } else {
            self.widget_origins.clone()
        };
        Endpoints {
            issuer: self.issuer.clone().unwrap_or_else(|| public.clone()),
            resolver: self.resolver.clone().unwrap_or_else(|| public.clone()),
            public,
            mcp,
            widget_origins,
        }
    }
}

/// `SLUICE_AUTH_SERVERS`, or the issuer if it is a URL.
/// `SLUICE_WIDGET_ORIGINS`, each an origin: a scheme, a host and a port,
/// nothing after.
fn widget_origins(vars: &Vars) -> Result<Vec<String>, ConfigError> {
    const VAR: &str = "SLUICE_WIDGET_ORIGINS";
    vars.list(VAR)
        .iter()
        .map(|o| {
            let url = read::url(VAR, o)?;
            let origin = url.origin().ascii_serialization();
            if o.trim_end_matches('/') != origin {
                return Err(read::invalid(
                    VAR,
                    format!("{o} is not an origin (scheme://host[:port], no path)"),
                ));
            }
            Ok(origin)
        })
        .collect()
}

/// The URLs sluice hands out carry single-use links that whoever sees them
/// on the way could use first, and the upload line runs the script it
/// fetches from them: TLS, or this machine.
pub(super) fn rules(vars: &Vars) -> Result<(), ConfigError> {
    for var in [
        "SLUICE_PUBLIC_URL",
        "SLUICE_ISSUER_URL",
        "SLUICE_RESOLVER_URL",
        "SLUICE_MCP_URL",
    ] {
        if let Some(url) = vars.url(var)?
            && !crate::actions::upstream_url_allowed(&url)
        {
            return super::refuse(
                var,
                "must be an https:// URL (http:// only on a loopback address: the links sluice hands out would cross the network in the clear)",
            );
        }
    }
    Ok(())
}

/// This group's settings (its variables, parsers, defaults and one line of
/// doc each), beside the code that reads them: the configuration page and
/// the start's checks take them from [`super::table`].
pub(super) const ROWS: &[Setting] = &[
    s(
        "SLUICE_PUBLIC_URL",
        Group::Core,
        Parse::Url,
        Unset("the listening address"),
        "the origin (and path prefix) clients reach sluice at; https:// (http:// only on a loopback address)",
    ),
    s(
        "SLUICE_MCP_URL",
        Group::Core,
        Parse::Url,
        Unset("`SLUICE_PUBLIC_URL` + `/mcp`"),
        "the MCP endpoint's URL, ending in `/mcp`, when it has its own prefix (cargo lambda watch)",
    ),
    s(
        "SLUICE_ISSUER_URL",
        Group::Core,
        Parse::Url,
        Unset("`SLUICE_PUBLIC_URL`"),
        "the issuer's base (upload links, browser pages) when it has its own prefix (cargo lambda watch)",
    ),
    s(
        "SLUICE_RESOLVER_URL",
        Group::Core,
        Parse::Url,
        Unset("`SLUICE_PUBLIC_URL`"),
        "the resolver's base (download links) when it has its own prefix (cargo lambda watch)",
    ),
    s(
        "SLUICE_WIDGET_ORIGINS",
        Group::Core,
        Parse::Urls,
        Unset(
            "claude.ai's for this connector: `https://` + the first 32 hex of SHA-256(MCP URL) + `.claudemcpcontent.com`",
        ),
        "origins the in-chat upload widget runs on (the MCP Apps host's sandbox), which the issuer's upload routes answer CORS for; list every host's you use",
    ),
];
