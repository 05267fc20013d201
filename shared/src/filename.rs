//! File names: the name a client gives is kept as a label; the name bytes are
//! stored and downloaded under is derived from it and is always safe.

use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, utf8_percent_encode};

/// The longest safe name, in bytes (the common file-system limit).
pub const MAX_NAME_BYTES: usize = 255;

/// Characters that are never kept in a safe name: path separators, quotes,
/// `;` and the characters Windows forbids.
const REPLACED: &[char] = &[
    '/', '\\', '"', '\'', ';', ':', '*', '?', '<', '>', '|', '`', '$',
];

/// Unicode format characters (general category Cf: bidi controls, zero-width
/// spaces and joiners, the soft hyphen, tags…) and the line and paragraph
/// separators (Zl, Zp). Invisible, and able to make one name read as another
/// (`invoice\u{202E}fdp.exe` shows as `invoiceexe.pdf`).
pub(crate) fn is_invisible(c: char) -> bool {
    matches!(c as u32,
        0xAD | 0x600..=0x605 | 0x61C | 0x6DD | 0x70F | 0x890..=0x891 | 0x8E2 | 0x180E
        | 0x200B..=0x200F | 0x2028..=0x202E | 0x2060..=0x2064 | 0x2066..=0x206F | 0xFEFF
        | 0xFFF9..=0xFFFB | 0x110BD | 0x110CD | 0x13430..=0x1343F | 0x1BCA0..=0x1BCA3
        | 0x1D173..=0x1D17A | 0xE0001 | 0xE0020..=0xE007F)
}

/// Collapses runs of dots, so `..` cannot survive anywhere.
fn collapse_dots(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    for c in name.chars() {
        if c == '.' && out.ends_with('.') {
            continue;
        }
        out.push(c);
    }
    out
}

fn trim(name: &str) -> &str {
    name.trim_start_matches(['.', '-', ' '])
        .trim_end_matches(['.', ' '])
}

/// A name safe to use as a single path component and in a shell line:
/// NFC-normalized, no `/`, `\`, `..`, quotes, `;`, control or invisible
/// characters, no leading dot or dash, at most [`MAX_NAME_BYTES`] bytes;
/// `file` when nothing is left.
pub fn safe_name(label: &str) -> String {
    use unicode_normalization::UnicodeNormalization as _;
    let kept: String = label
        .nfc()
        .filter(|c| !c.is_control() && !is_invisible(*c))
        .map(|c| if REPLACED.contains(&c) { '_' } else { c })
        .collect();
    let collapsed = collapse_dots(&kept);
    let cut = truncate_keeping_extension(trim(&collapsed), MAX_NAME_BYTES);
    // Truncation can join two dots again (`a.` + `.pdf`): collapse once more.
    let name = trim(&collapse_dots(&cut)).to_owned();
    if name.is_empty() {
        "file".to_owned()
    } else {
        name
    }
}

/// Cuts `name` to at most `max` bytes on a character boundary, keeping a
/// short extension when there is one.
fn truncate_keeping_extension(name: &str, max: usize) -> String {
    if name.len() <= max {
        return name.to_owned();
    }
    let ext = name
        .rfind('.')
        .map(|i| &name[i..])
        .filter(|e| e.len() <= 16)
        .unwrap_or("");
    let mut end = max - ext.len();
    while !name.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}{}", &name[..end], ext)
}

/// RFC 5987 `attr-char`: everything else is percent-encoded in `filename*`.
const ATTR_CHAR: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'!')
    .remove(b'#')
    .remove(b'$')
    .remove(b'&')
    .remove(b'+')
    .remove(b'-')
    .remove(b'.')
    .remove(b'^')
    .remove(b'_')
    .remove(b'`')
    .remove(b'|')
    .remove(b'~');

/// `Content-Disposition: attachment` for a download of `label` (RFC 6266):
/// an ASCII `filename` fallback and the exact safe name in `filename*`.
pub fn content_disposition(label: &str) -> String {
    let safe = safe_name(label);
    let ascii: String = safe
        .chars()
        .map(|c| {
            if c.is_ascii() && !c.is_ascii_control() {
                c
            } else {
                '_'
            }
        })
        .collect();
    format!(
        "attachment; filename=\"{ascii}\"; filename*=UTF-8''{}",
        utf8_percent_encode(&safe, ATTR_CHAR)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ordinary_names_are_kept() {
        assert_eq!(safe_name("report.pdf"), "report.pdf");
        assert_eq!(
            safe_name("rapport final (été).pdf"),
            "rapport final (été).pdf"
        );
    }

    #[test]
    fn dangerous_characters_are_replaced() {
        assert_eq!(safe_name("../../etc/passwd"), "_._etc_passwd");
        assert_eq!(safe_name("a\\b"), "a_b");
        assert_eq!(safe_name("it's \"x\";rm.txt"), "it_s _x__rm.txt");
        assert_eq!(safe_name("line\nbreak\u{7}.txt"), "linebreak.txt");
        assert_eq!(safe_name("a..b"), "a.b");
    }

    #[test]
    fn hidden_and_option_like_names_lose_their_prefix() {
        assert_eq!(safe_name(".bashrc"), "bashrc");
        assert_eq!(safe_name("-rf"), "rf");
        assert_eq!(safe_name("name. "), "name");
    }

    #[test]
    fn empty_results_become_file() {
        assert_eq!(safe_name(""), "file");
        assert_eq!(safe_name(".."), "file");
        assert_eq!(safe_name("\n\t"), "file");
    }

    #[test]
    fn long_names_are_cut_on_a_char_boundary_keeping_the_extension() {
        let long = format!("{}.pdf", "é".repeat(300));
        let safe = safe_name(&long);
        assert!(safe.len() <= MAX_NAME_BYTES);
        assert!(safe.ends_with(".pdf"));
        assert!(safe.starts_with('é'));
    }

    #[test]
    fn invisible_characters_are_dropped_and_names_normalized() {
        // A right-to-left override would show this as "invoiceexe.pdf".
        assert_eq!(safe_name("invoice\u{202E}fdp.exe"), "invoicefdp.exe");
        assert_eq!(safe_name("a\u{200B}b\u{FEFF}c\u{2028}.txt"), "abc.txt");
        assert_eq!(safe_name("tag\u{E0041}s.txt"), "tags.txt");
        // "é" as e + combining acute becomes the one precomposed character.
        assert_eq!(safe_name("e\u{301}te\u{301}.txt"), "\u{E9}t\u{E9}.txt");
    }

    #[test]
    fn truncation_cannot_join_two_dots() {
        // Cut just after a dot, then the extension is put back.
        let name = format!("{}.{}.pdf", "a".repeat(MAX_NAME_BYTES - 6), "b".repeat(300));
        let safe = safe_name(&name);
        assert!(!safe.contains(".."), "{safe}");
        assert!(safe.len() <= MAX_NAME_BYTES);
    }

    #[test]
    fn content_disposition_has_an_ascii_fallback_and_an_exact_utf8_name() {
        assert_eq!(
            content_disposition("rapport final;v2 (été).pdf"),
            "attachment; filename=\"rapport final_v2 (_t_).pdf\"; \
             filename*=UTF-8''rapport%20final_v2%20%28%C3%A9t%C3%A9%29.pdf"
        );
    }
}
