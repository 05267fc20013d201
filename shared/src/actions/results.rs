//! Files in an upstream's answer: where the large ones are, and what to
//! name one that came without a name. The service stores each as a file of
//! the caller's and puts a download link in its place
//! (`service::actions`), so files coming back never pass through the model
//! either; smaller ones stay inline. Nothing here touches storage.

use serde_json::Value;

use crate::file::SMALL_FILE_MAX;

/// JSON Pointer escaping of one reference token (RFC 6901).
fn escape(token: &str) -> String {
    token.replace('~', "~0").replace('/', "~1")
}

/// Pointers to every string in `value` that looks like a large data URI.
fn large_data_uris(value: &Value, at: String, out: &mut Vec<String>) {
    match value {
        Value::String(s)
            if s.get(..5).is_some_and(|p| p.eq_ignore_ascii_case("data:"))
                // base64 of more than SMALL_FILE_MAX bytes is longer than this.
                && s.len() > SMALL_FILE_MAX * 4 / 3 =>
        {
            out.push(at)
        }
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                large_data_uris(item, format!("{at}/{i}"), out);
            }
        }
        Value::Object(map) => {
            for (k, v) in map {
                large_data_uris(v, format!("{at}/{}", escape(k)), out);
            }
        }
        _ => {}
    }
}

/// Pointers (RFC 6901) to every data URI in `value` that may hold more
/// than [`SMALL_FILE_MAX`] bytes, in document order.
pub(crate) fn large_files(value: &Value) -> Vec<String> {
    let mut out = Vec::new();
    large_data_uris(value, String::new(), &mut out);
    out
}

/// `<action>-result.<ext>` for a file that came without a name.
pub(crate) fn default_name(action: &str, mime: &str) -> String {
    let ext = mime_guess::get_mime_extensions_str(mime)
        .and_then(|exts| exts.first())
        .copied()
        .unwrap_or("bin");
    format!("{action}-result.{ext}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::datauri::DataUri;

    #[test]
    fn only_large_data_uris_are_found_at_escaped_pointers() {
        let big = DataUri::encode("text/plain", Some("a.txt"), &vec![b'x'; SMALL_FILE_MAX + 1]);
        let small = DataUri::encode("text/plain", None, b"hi");
        let value = serde_json::json!({
            "a/b": big,
            "list": [small, {"file": big}],
            "text": "data: is just a word here",
        });
        let mut found = Vec::new();
        large_data_uris(&value, String::new(), &mut found);
        found.sort();
        assert_eq!(found, vec!["/a~1b".to_owned(), "/list/1/file".to_owned()]);
        for p in &found {
            assert!(value.pointer(p).is_some(), "{p}");
        }
    }

    #[test]
    fn nameless_files_are_named_after_the_action() {
        assert_eq!(
            default_name("export_report", "application/pdf"),
            "export_report-result.pdf"
        );
        assert_eq!(default_name("x", "application/x-unknown"), "x-result.bin");
    }
}
