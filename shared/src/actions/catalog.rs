//! The actions catalog: which backend operations the model may run, with
//! their forms. Read from TOML once, at start, and validated whole: a bad
//! catalog stops the process with a message naming the action and the field.
//!
//! ```toml
//! [[actions]]
//! name = "attach_document"
//! description = "Attach a document to a review."
//! url = "https://api.example.com/actions/attach_document"
//! timeout_secs = 25            # default 25 (at most 28 on Lambda)
//! file_delivery = "data-uri"   # or "link"; default "data-uri"
//! auth = { header = "Authorization", value = "Bearer …" }   # or secret_id = "…"
//!
//! [[actions.fields]]
//! name = "document"
//! type = "File"                # String Number Boolean Enum Date Json File FileList
//! required = true
//! accept = ["application/pdf", "image/*"]
//! max_size = 10485760
//! ```

use std::fmt;
use std::time::Duration;

use http::{HeaderName, HeaderValue};
use serde::Deserialize;
use url::Url;

/// The longest action timeout accepted.
pub const MAX_TIMEOUT_SECS: u64 = 900;

/// Why a catalog was refused: which action, which field, and what is wrong.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct CatalogError {
    /// The action at fault, when one is (by name, or by position).
    pub action: Option<String>,
    /// The field at fault, when one is.
    pub field: Option<String>,
    /// What is wrong.
    pub reason: String,
}

impl fmt::Display for CatalogError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (&self.action, &self.field) {
            (Some(a), Some(field)) => write!(f, "action {a:?}, field {field:?}: {}", self.reason),
            (Some(a), None) => write!(f, "action {a:?}: {}", self.reason),
            _ => f.write_str(&self.reason),
        }
    }
}

/// How files reach the upstream.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum FileDelivery {
    /// Inline, as browser forms send them:
    /// `data:<mime>;name=<percent-encoded name>;base64,<data>`.
    #[default]
    DataUri,
    /// As `{url, size, sha256, name, content_type}` with a single-use GET link,
    /// so large files never pass through sluice.
    Link,
}

/// A field's type, as action forms declare them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FieldKind {
    /// Text.
    String,
    /// A JSON number.
    Number,
    /// `true` or `false`.
    Boolean,
    /// One of the listed strings.
    Enum(Vec<String>),
    /// A date (`YYYY-MM-DD`) or date-time (RFC 3339).
    Date,
    /// Any JSON value.
    Json,
    /// One file: a `$uploadedFile:` handle or a `data:` URI.
    File,
    /// Several files: an array of what a File field takes.
    FileList,
}

impl FieldKind {
    /// Whether the field carries files.
    pub fn is_file(&self) -> bool {
        matches!(self, FieldKind::File | FieldKind::FileList)
    }
}

/// One field of an action's form.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Field {
    /// The name the upstream receives it under.
    pub name: String,
    /// Its type.
    pub kind: FieldKind,
    /// Whether a value must be given.
    pub required: bool,
    /// What it is for, shown to the model.
    pub description: Option<String>,
    /// File fields: the media types accepted (`image/*` allowed); empty
    /// accepts any.
    pub accept: Vec<String>,
    /// File fields: the largest file accepted, in bytes.
    pub max_size: Option<u64>,
}

impl Field {
    /// Whether a file of media type `content_type` is accepted here.
    pub fn accepts(&self, content_type: &str) -> bool {
        if self.accept.is_empty() {
            return true;
        }
        let essence = content_type
            .split(';')
            .next()
            .unwrap_or("")
            .trim()
            .to_ascii_lowercase();
        self.accept.iter().any(|pattern| {
            let pattern = pattern.to_ascii_lowercase();
            match pattern.strip_suffix("/*") {
                Some(top) => essence.split('/').next() == Some(top),
                None => pattern == "*/*" || pattern == essence,
            }
        })
    }
}

/// Where the upstream auth header's value comes from.
#[derive(Clone, PartialEq, Eq)]
pub enum AuthValue {
    /// Given in the catalog itself.
    Value(HeaderValue),
    /// An AWS Secrets Manager secret id, read at start.
    SecretId(String),
}

impl fmt::Debug for AuthValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AuthValue::Value(_) => f.write_str("Value(<redacted>)"),
            AuthValue::SecretId(id) => f.debug_tuple("SecretId").field(id).finish(),
        }
    }
}

/// The header that authenticates sluice to an upstream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UpstreamAuth {
    /// The header's name, e.g. `Authorization`.
    pub header: HeaderName,
    /// Its value, or where to read it.
    pub value: AuthValue,
}

/// One action: a backend operation with a form.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Action {
    /// `[a-z0-9_]{1,64}`; the per-action tool is `action_<name>`.
    pub name: String,
    /// What it does, shown to the model.
    pub description: String,
    /// Where it is POSTed: https, or http on loopback.
    pub url: Url,
    /// The header that authenticates sluice to the upstream.
    pub auth: Option<UpstreamAuth>,
    /// How long the upstream may take, request and answer.
    pub timeout: Duration,
    /// How files reach the upstream.
    pub file_delivery: FileDelivery,
    /// The form.
    pub fields: Vec<Field>,
}

impl Action {
    /// The field called `name`.
    pub fn field(&self, name: &str) -> Option<&Field> {
        self.fields.iter().find(|f| f.name == name)
    }
}

/// Every configured action, validated.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Catalog {
    actions: Vec<Action>,
}

/// The catalog is read in steps (the list, each action, each field) so that
/// any error, a type error included, names the action and field it is in.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawCatalog {
    #[serde(default)]
    actions: Vec<toml::Table>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawAction {
    name: String,
    description: String,
    url: String,
    #[serde(default)]
    auth: Option<RawAuth>,
    #[serde(default)]
    timeout_secs: Option<u64>,
    #[serde(default)]
    file_delivery: FileDelivery,
    #[serde(default)]
    fields: Vec<toml::Table>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawAuth {
    header: String,
    #[serde(default)]
    value: Option<String>,
    #[serde(default)]
    secret_id: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawField {
    name: String,
    #[serde(rename = "type")]
    kind: String,
    #[serde(default)]
    required: bool,
    #[serde(default)]
    description: Option<String>,
    #[serde(default)]
    values: Option<Vec<String>>,
    #[serde(default)]
    accept: Option<Vec<String>>,
    #[serde(default)]
    max_size: Option<u64>,
}

/// The default action timeout.
/// An action's timeout when the catalog gives none: under API Gateway's.
const DEFAULT_TIMEOUT_SECS: u64 = 25;

/// The longest action timeout behind API Gateway, which ends a request
/// after 30 s: the function needs the rest to answer.
pub const API_GATEWAY_MAX_TIMEOUT_SECS: u64 = 28;

impl Catalog {
    /// A catalog of already-built actions (the example upstream's), checked
    /// as a file would be.
    pub fn new(actions: Vec<Action>) -> Result<Self, CatalogError> {
        let catalog = Self { actions };
        catalog.check_unique()?;
        Ok(catalog)
    }

    /// Refuses an action whose timeout API Gateway would cut short (over
    /// `API_GATEWAY_MAX_TIMEOUT_SECS`): on Lambda the person would get
    /// API Gateway's 503 while the action goes on running.
    pub fn fit_for_api_gateway(&self) -> Result<(), CatalogError> {
        match self
            .actions
            .iter()
            .find(|a| a.timeout > Duration::from_secs(API_GATEWAY_MAX_TIMEOUT_SECS))
        {
            None => Ok(()),
            Some(a) => Err(CatalogError {
                action: Some(a.name.clone()),
                field: None,
                reason: format!(
                    "timeout_secs {} is over {API_GATEWAY_MAX_TIMEOUT_SECS}: API Gateway ends a \
                     request after 30 s; lower it, or use file_delivery = \"link\" for large files",
                    a.timeout.as_secs()
                ),
            }),
        }
    }

    /// Parses and validates a TOML catalog.
    pub fn from_toml(text: &str) -> Result<Self, CatalogError> {
        let raw: RawCatalog = toml::from_str(text).map_err(|e| CatalogError {
            action: None,
            field: None,
            reason: format!("not a valid actions catalog: {}", e.message()),
        })?;
        let actions = raw
            .actions
            .into_iter()
            .enumerate()
            .map(|(i, table)| {
                let label = match table.get("name").and_then(toml::Value::as_str) {
                    Some(name) if !name.is_empty() => name.to_owned(),
                    _ => format!("#{}", i + 1),
                };
                let raw: RawAction =
                    table
                        .try_into()
                        .map_err(|e: toml::de::Error| CatalogError {
                            action: Some(label.clone()),
                            field: None,
                            reason: e.message().to_owned(),
                        })?;
                raw.validate(label)
            })
            .collect::<Result<Vec<_>, _>>()?;
        Self::new(actions)
    }

    /// Adds the actions of `other`; a name in both is refused.
    pub fn merge(mut self, other: Catalog) -> Result<Self, CatalogError> {
        self.actions.extend(other.actions);
        self.check_unique()?;
        Ok(self)
    }

    fn check_unique(&self) -> Result<(), CatalogError> {
        let mut seen = std::collections::BTreeSet::new();
        for a in &self.actions {
            if !seen.insert(a.name.as_str()) {
                return Err(CatalogError {
                    action: Some(a.name.clone()),
                    field: None,
                    reason: "is declared twice".into(),
                });
            }
        }
        Ok(())
    }

    /// Every action, in catalog order.
    pub fn actions(&self) -> &[Action] {
        &self.actions
    }

    /// Every action, to resolve secrets in place at start.
    pub fn actions_mut(&mut self) -> &mut [Action] {
        &mut self.actions
    }

    /// The action called `name`.
    pub fn get(&self, name: &str) -> Option<&Action> {
        self.actions.iter().find(|a| a.name == name)
    }

    /// Whether no action is configured (the action tools are then not listed).
    pub fn is_empty(&self) -> bool {
        self.actions.is_empty()
    }
}

/// The longest action name. A client names a server's tool
/// `mcp__<server>__<tool>` (Claude Code, Codex) and model APIs take tool
/// names of at most 64 characters: `mcp__sluice__action_` is 20 of them.
pub const MAX_ACTION_NAME: usize = 44;

/// Whether `name` is a valid action name.
pub fn valid_action_name(name: &str) -> bool {
    (1..=MAX_ACTION_NAME).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
}

/// Whether `url` may be an upstream (or a webhook receiver, or a public
/// URL sluice hands out): https, or http on a loopback host.
pub fn upstream_url_allowed(url: &Url) -> bool {
    match url.scheme() {
        "https" => url.host().is_some(),
        "http" => loopback_host(url),
        _ => false,
    }
}

/// Whether `url`'s host is this machine: `localhost` or a loopback address.
pub fn loopback_host(url: &Url) -> bool {
    match url.host() {
        Some(url::Host::Domain(d)) => d.eq_ignore_ascii_case("localhost"),
        Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
        Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
        None => false,
    }
}

impl RawAction {
    fn validate(self, label: String) -> Result<Action, CatalogError> {
        let err = |field: Option<&str>, reason: String| CatalogError {
            action: Some(label.clone()),
            field: field.map(str::to_owned),
            reason,
        };
        if self.name.len() > MAX_ACTION_NAME {
            return Err(err(
                None,
                format!(
                    "name is {} characters, more than {MAX_ACTION_NAME}: its tool action_{} \
                     would pass the 64 characters clients and model APIs allow a tool name \
                     (mcp__<server>__action_<name>); give it a shorter name",
                    self.name.len(),
                    self.name
                ),
            ));
        }
        if !valid_action_name(&self.name) {
            return Err(err(
                None,
                format!("name must be 1 to {MAX_ACTION_NAME} of a-z, 0-9 and _"),
            ));
        }
        if self.description.trim().is_empty() {
            return Err(err(None, "description must not be empty".into()));
        }
        let url = Url::parse(&self.url)
            .map_err(|e| err(None, format!("url {:?} is not a URL ({e})", self.url)))?;
        if !upstream_url_allowed(&url) {
            return Err(err(
                None,
                format!(
                    "url {:?} must be https (http only on a loopback address)",
                    self.url
                ),
            ));
        }
        if !url.username().is_empty() || url.password().is_some() {
            return Err(err(None, "url must not carry credentials: use auth".into()));
        }
        let timeout_secs = self.timeout_secs.unwrap_or(DEFAULT_TIMEOUT_SECS);
        if !(1..=MAX_TIMEOUT_SECS).contains(&timeout_secs) {
            return Err(err(
                None,
                format!("timeout_secs must be from 1 to {MAX_TIMEOUT_SECS}"),
            ));
        }
        let auth = self
            .auth
            .map(|a| a.validate())
            .transpose()
            .map_err(|reason| err(None, reason))?;
        let mut fields: Vec<Field> = Vec::with_capacity(self.fields.len());
        for (i, table) in self.fields.into_iter().enumerate() {
            let name = match table.get("name").and_then(toml::Value::as_str) {
                Some(name) if !name.is_empty() => name.to_owned(),
                _ => format!("#{}", i + 1),
            };
            let raw: RawField = table
                .try_into()
                .map_err(|e: toml::de::Error| err(Some(&name), e.message().to_owned()))?;
            let field = raw.validate().map_err(|reason| err(Some(&name), reason))?;
            if fields.iter().any(|f| f.name == field.name) {
                return Err(err(Some(&name), "is declared twice".into()));
            }
            fields.push(field);
        }
        Ok(Action {
            name: self.name,
            description: self.description.trim().to_owned(),
            url,
            auth,
            timeout: Duration::from_secs(timeout_secs),
            file_delivery: self.file_delivery,
            fields,
        })
    }
}

impl RawAuth {
    fn validate(self) -> Result<UpstreamAuth, String> {
        let header = HeaderName::try_from(self.header.as_str())
            .map_err(|_| format!("auth.header {:?} is not a header name", self.header))?;
        let value = match (self.value, self.secret_id) {
            (Some(v), None) => AuthValue::Value(
                HeaderValue::try_from(v)
                    .map_err(|_| "auth.value is not a valid header value".to_owned())?,
            ),
            (None, Some(id)) if !id.trim().is_empty() => AuthValue::SecretId(id.trim().to_owned()),
            _ => return Err("auth needs exactly one of value and secret_id".into()),
        };
        Ok(UpstreamAuth { header, value })
    }
}

impl RawField {
    fn validate(self) -> Result<Field, String> {
        if self.name.is_empty() || self.name.len() > 128 || self.name.chars().any(char::is_control)
        {
            return Err("name must be 1 to 128 characters, none of them control characters".into());
        }
        let kind = match self.kind.as_str() {
            "String" => FieldKind::String,
            "Number" => FieldKind::Number,
            "Boolean" => FieldKind::Boolean,
            "Enum" => FieldKind::Enum(Vec::new()),
            "Date" => FieldKind::Date,
            "Json" => FieldKind::Json,
            "File" => FieldKind::File,
            "FileList" => FieldKind::FileList,
            other => {
                return Err(format!(
                    "type {other:?} is not one of String, Number, Boolean, Enum, Date, Json, File, FileList"
                ));
            }
        };
        let kind = match (kind, self.values) {
            (FieldKind::Enum(_), Some(values)) if !values.is_empty() => FieldKind::Enum(values),
            (FieldKind::Enum(_), _) => return Err("an Enum needs a non-empty values list".into()),
            (_, Some(_)) => return Err("values is only for Enum fields".into()),
            (kind, None) => kind,
        };
        if !kind.is_file() && (self.accept.is_some() || self.max_size.is_some()) {
            return Err("accept and max_size are only for File and FileList fields".into());
        }
        let accept = self.accept.unwrap_or_default();
        for pattern in &accept {
            if pattern.parse::<mime::Mime>().is_err() {
                return Err(format!(
                    "accept entry {pattern:?} is not a media type such as application/pdf or image/*"
                ));
            }
        }
        if self.max_size == Some(0) {
            return Err("max_size must be positive".into());
        }
        Ok(Field {
            name: self.name,
            kind,
            required: self.required,
            description: self.description.filter(|d| !d.trim().is_empty()),
            accept,
            max_size: self.max_size,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = r#"
        [[actions]]
        name = "attach_document"
        description = "Attach a document to a review."
        url = "https://api.example.com/attach"
        file_delivery = "link"
        timeout_secs = 12
        auth = { header = "Authorization", value = "Bearer x" }

        [[actions.fields]]
        name = "review_id"
        type = "Number"
        required = true

        [[actions.fields]]
        name = "document"
        type = "File"
        accept = ["application/pdf", "image/*"]
        max_size = 1000

        [[actions.fields]]
        name = "status"
        type = "Enum"
        values = ["open", "closed"]
    "#;

    #[test]
    fn a_good_catalog_is_read_whole() {
        let c = Catalog::from_toml(GOOD).unwrap();
        let a = c.get("attach_document").unwrap();
        assert_eq!(a.timeout, Duration::from_secs(12));
        assert_eq!(a.file_delivery, FileDelivery::Link);
        assert_eq!(a.fields.len(), 3);
        let doc = a.field("document").unwrap();
        assert!(doc.accepts("application/pdf"));
        assert!(doc.accepts("image/png"));
        assert!(doc.accepts("IMAGE/PNG; q=1"));
        assert!(!doc.accepts("text/plain"));
        assert_eq!(doc.max_size, Some(1000));
        assert!(matches!(&a.field("status").unwrap().kind, FieldKind::Enum(v) if v.len() == 2));
        assert!(
            !format!("{a:?}").contains("Bearer x"),
            "secrets stay out of Debug"
        );
    }

    #[test]
    fn an_empty_catalog_has_no_actions() {
        assert!(Catalog::from_toml("").unwrap().is_empty());
    }

    /// Each bad entry names the action and, where one is at fault, the field.
    #[test]
    fn each_bad_entry_is_refused_naming_action_and_field() {
        let base = |extra_action: &str, field: &str| {
            format!(
                "[[actions]]\nname = \"a1\"\ndescription = \"d\"\nurl = \"https://x.example/a\"\n{extra_action}\n{field}"
            )
        };
        let field = |body: &str| format!("[[actions.fields]]\nname = \"f1\"\n{body}");
        let cases: Vec<(String, Option<&str>, &str)> = vec![
            (base("", &field("type = \"Text\"")), Some("f1"), "type"),
            (base("", &field("type = \"Enum\"")), Some("f1"), "values"),
            (
                base("", &field("type = \"String\"\nvalues = [\"a\"]")),
                Some("f1"),
                "values",
            ),
            (
                base("", &field("type = \"String\"\nmax_size = 3")),
                Some("f1"),
                "File",
            ),
            (
                base("", &field("type = \"File\"\naccept = [\"pdf\"]")),
                Some("f1"),
                "accept",
            ),
            (
                base("", &field("type = \"File\"\nmax_size = 0")),
                Some("f1"),
                "max_size",
            ),
            (
                base(
                    "",
                    &format!("{}\n{}", field("type = \"File\""), field("type = \"File\"")),
                ),
                Some("f1"),
                "twice",
            ),
            (base("timeout_secs = 0", ""), None, "timeout_secs"),
            (base("auth = { header = \"X\" }", ""), None, "exactly one"),
            (
                base("auth = { header = \"bad header\", value = \"v\" }", ""),
                None,
                "header",
            ),
            (base("file_delivery = \"email\"", ""), None, "data-uri"),
        ];
        for (text, field, needle) in cases {
            let err = Catalog::from_toml(&text).unwrap_err();
            assert!(err.to_string().contains(needle), "{needle}: {err}");
            if let Some(f) = field {
                assert_eq!(err.action.as_deref(), Some("a1"), "{err}");
                assert_eq!(err.field.as_deref(), Some(f), "{err}");
            }
        }
    }

    #[test]
    fn on_lambda_a_timeout_api_gateway_would_cut_short_is_refused() {
        let with = |timeout: &str| {
            Catalog::from_toml(&format!(
                "[[actions]]\nname = \"slow\"\ndescription = \"d\"\n\
                 url = \"https://api.example.com/a\"\n{timeout}"
            ))
            .unwrap()
        };
        assert!(with("").fit_for_api_gateway().is_ok(), "the default fits");
        assert!(with("timeout_secs = 28").fit_for_api_gateway().is_ok());
        let err = with("timeout_secs = 60").fit_for_api_gateway().unwrap_err();
        assert_eq!(err.action.as_deref(), Some("slow"));
        assert!(err.reason.contains("timeout_secs 60 is over 28"), "{err}");
    }

    #[test]
    fn names_and_urls_are_checked() {
        let action = |name: &str, url: &str| {
            format!("[[actions]]\nname = \"{name}\"\ndescription = \"d\"\nurl = \"{url}\"\n")
        };
        for (name, url, needle) in [
            ("Bad-Name", "https://x.example", "name must"),
            ("ok", "http://api.example.com/a", "https"),
            ("ok", "ftp://127.0.0.1/a", "https"),
            ("ok", "https://user:pw@x.example/a", "credentials"),
            ("ok", "not a url", "not a URL"),
        ] {
            let err = Catalog::from_toml(&action(name, url)).unwrap_err();
            assert!(err.to_string().contains(needle), "{needle}: {err}");
        }
        // The longest name that keeps `mcp__sluice__action_<name>` within
        // 64 characters is taken; one more is refused, naming both.
        let longest = "a".repeat(MAX_ACTION_NAME);
        assert!(Catalog::from_toml(&action(&longest, "https://x.example")).is_ok());
        let long = "b".repeat(MAX_ACTION_NAME + 1);
        let err = Catalog::from_toml(&action(&long, "https://x.example")).unwrap_err();
        assert_eq!(err.action.as_deref(), Some(long.as_str()));
        assert!(err.reason.contains("45 characters, more than 44"), "{err}");
        assert!(err.reason.contains("64 characters"), "{err}");
        assert!("mcp__sluice__action_".len() + MAX_ACTION_NAME == 64);
        for url in [
            "http://127.0.0.1:9/a",
            "http://localhost/a",
            "http://[::1]:80/",
        ] {
            assert!(Catalog::from_toml(&action("ok", url)).is_ok(), "{url}");
        }
        let twice = format!(
            "{}{}",
            action("ok", "https://x.example"),
            action("ok", "https://y.example")
        );
        assert!(
            Catalog::from_toml(&twice)
                .unwrap_err()
                .to_string()
                .contains("twice")
        );
    }
}
