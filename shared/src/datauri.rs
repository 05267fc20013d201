//! Data URIs as browser forms send files: `data:<mime>;name=<pct>;base64,<data>`.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, percent_decode_str, utf8_percent_encode};

/// Characters left as they are in a `name` parameter (RFC 3986 unreserved).
const NAME_KEEP: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');

/// The media type used when none is known.
pub const DEFAULT_MIME: &str = "application/octet-stream";

/// The bare media type of `content_type` (`text/plain` for
/// `text/plain; charset=utf-8`), as a data URI carries it; the default
/// for one that does not parse.
pub fn essence(content_type: &str) -> String {
    content_type
        .parse::<mime::Mime>()
        .map(|m| m.essence_str().to_owned())
        .unwrap_or_else(|_| DEFAULT_MIME.to_owned())
}

/// A parsed data URI. Only `name` and `charset` are read back from its parameters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DataUri {
    /// The media type, e.g. `application/pdf`.
    pub mime: String,
    /// The file name, percent-decoded.
    pub name: Option<String>,
    /// The `charset` parameter, if any.
    pub charset: Option<String>,
    /// The decoded bytes.
    pub data: Vec<u8>,
}

/// Why a string is not a usable data URI.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DataUriError {
    /// It does not start with `data:`.
    #[error("not a data URI: it must start with \"data:\"")]
    NotDataUri,
    /// There is no `,` between the header and the data.
    #[error("malformed data URI: no ',' before the data")]
    NoComma,
    /// The header has no `;base64` segment.
    #[error("malformed data URI: only ';base64' data is accepted")]
    NotBase64,
    /// A parameter's `%` escape is broken.
    #[error("malformed data URI: bad %-escape in parameter '{0}'")]
    BadPercent(String),
    /// The data is not valid base64.
    #[error("malformed data URI: the data is not valid base64")]
    BadBase64,
}

impl DataUri {
    /// Encodes bytes as a data URI. An empty name is omitted, never emitted empty.
    pub fn encode(mime: &str, name: Option<&str>, data: &[u8]) -> String {
        let mut out = Self::header(mime, name);
        STANDARD.encode_string(data, &mut out);
        out
    }

    /// Everything before the data: `data:<mime>;name=<pct>;base64,`, for
    /// callers that stream the base64 after it.
    pub fn header(mime: &str, name: Option<&str>) -> String {
        let mime = if mime.is_empty() { DEFAULT_MIME } else { mime };
        let mut out = format!("data:{mime}");
        if let Some(name) = name.filter(|n| !n.is_empty()) {
            out.push_str(";name=");
            out.extend(utf8_percent_encode(name, NAME_KEEP));
        }
        out.push_str(";base64,");
        out
    }

    /// Parses a data URI; the error says what is wrong with it.
    pub fn parse(s: &str) -> Result<Self, DataUriError> {
        let rest = s
            .get(..5)
            .filter(|p| p.eq_ignore_ascii_case("data:"))
            .map(|_| &s[5..])
            .ok_or(DataUriError::NotDataUri)?;
        let (header, data) = rest.split_once(',').ok_or(DataUriError::NoComma)?;
        let mut parts = header.split(';');
        let mime = parts.next().unwrap_or("").trim();
        let mut name = None;
        let mut charset = None;
        let mut base64 = false;
        for part in parts {
            let part = part.trim();
            if part.eq_ignore_ascii_case("base64") {
                base64 = true;
                continue;
            }
            let Some((key, value)) = part.split_once('=') else {
                continue;
            };
            let decode = || {
                percent_decode_str(value)
                    .decode_utf8()
                    .map(|v| v.into_owned())
                    .map_err(|_| DataUriError::BadPercent(key.to_owned()))
                    .and_then(|v| {
                        check_escapes(value)
                            .map(|()| v)
                            .map_err(|()| DataUriError::BadPercent(key.to_owned()))
                    })
            };
            match key.to_ascii_lowercase().as_str() {
                "name" | "filename" => name = Some(decode()?),
                "charset" => charset = Some(decode()?),
                _ => {}
            }
        }
        if !base64 {
            return Err(DataUriError::NotBase64);
        }
        let data = STANDARD
            .decode(data.trim())
            .map_err(|_| DataUriError::BadBase64)?;
        Ok(Self {
            mime: if mime.is_empty() {
                DEFAULT_MIME.to_owned()
            } else {
                mime.to_owned()
            },
            name: name.filter(|n| !n.is_empty()),
            charset,
            data,
        })
    }
}

/// `percent_decode` passes a lone or short `%` through; a browser never sends
/// one, so it is refused here.
fn check_escapes(value: &str) -> Result<(), ()> {
    let b = value.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            let ok =
                b.len() > i + 2 && b[i + 1].is_ascii_hexdigit() && b[i + 2].is_ascii_hexdigit();
            if !ok {
                return Err(());
            }
            i += 3;
        } else {
            i += 1;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encodes_like_a_browser_form() {
        assert_eq!(
            DataUri::encode("text/plain", Some("a b;é.txt"), b"hi"),
            "data:text/plain;name=a%20b%3B%C3%A9.txt;base64,aGk="
        );
    }

    #[test]
    fn empty_parameters_are_never_emitted() {
        assert_eq!(
            DataUri::encode("", Some(""), b""),
            "data:application/octet-stream;base64,"
        );
        assert_eq!(
            DataUri::encode("image/png", None, b"x"),
            "data:image/png;base64,eA=="
        );
    }

    #[test]
    fn round_trips_name_and_bytes() {
        let data: Vec<u8> = (0..=255).collect();
        let uri = DataUri::encode("application/pdf", Some("rapport final;v2 (été).pdf"), &data);
        let parsed = DataUri::parse(&uri).unwrap();
        assert_eq!(parsed.mime, "application/pdf");
        assert_eq!(parsed.name.as_deref(), Some("rapport final;v2 (été).pdf"));
        assert_eq!(parsed.data, data);
    }

    #[test]
    fn reads_back_only_name_and_charset() {
        let p =
            DataUri::parse("data:text/plain;charset=utf-8;foo=bar;name=x.txt;base64,aGk=").unwrap();
        assert_eq!(p.charset.as_deref(), Some("utf-8"));
        assert_eq!(p.name.as_deref(), Some("x.txt"));
        assert_eq!(p.data, b"hi");
    }

    #[test]
    fn malformed_uris_get_readable_errors() {
        assert_eq!(DataUri::parse("hello"), Err(DataUriError::NotDataUri));
        assert_eq!(
            DataUri::parse("data:text/plain;base64"),
            Err(DataUriError::NoComma)
        );
        assert_eq!(
            DataUri::parse("data:text/plain,hi"),
            Err(DataUriError::NotBase64)
        );
        assert_eq!(
            DataUri::parse("data:text/plain;name=%E;base64,aGk="),
            Err(DataUriError::BadPercent("name".into()))
        );
        assert_eq!(
            DataUri::parse("data:text/plain;name=%FF;base64,aGk="),
            Err(DataUriError::BadPercent("name".into()))
        );
        assert_eq!(
            DataUri::parse("data:text/plain;base64,a$b"),
            Err(DataUriError::BadBase64)
        );
        assert!(DataUri::parse("data:;base64,").unwrap().data.is_empty());
    }
}
