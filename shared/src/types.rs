//! The type a file's bytes show, from their first [`SNIFF_BYTES`] (the
//! `infer` crate's signatures), and whether it contradicts the type its
//! uploader declared: an executable or an archive declared a document is
//! what `SLUICE_TYPE_CHECK=refuse` rejects. Codecs only: the gate reads the
//! bytes ([`crate::service::gate`]).

/// How many of a file's first bytes are read to tell its type: enough for
/// every signature `infer` knows, an office document's first entries
/// included.
pub const SNIFF_BYTES: u64 = 8192;

/// What a file's bytes are, broadly.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A program: ELF, PE, Mach-O, a class file, WebAssembly, …
    Executable,
    /// An archive: zip, tar, gzip, 7z, RAR, …
    Archive,
    /// A document: PDF, an office document, an e-book, RTF.
    Document,
    /// An image.
    Image,
    /// Sound or video.
    Media,
    /// Anything else `infer` knows (a font, a database, …).
    Other,
}

/// The type a file's first bytes show.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Detected {
    /// The media type, `infer`'s name for it.
    pub mime: String,
    /// What it is, broadly.
    pub kind: Kind,
}

impl Kind {
    fn words(self) -> &'static str {
        match self {
            Kind::Executable => "an executable",
            Kind::Archive => "an archive",
            Kind::Document => "a document",
            Kind::Image => "an image",
            Kind::Media => "audio or video",
            Kind::Other => "a file of another kind",
        }
    }
}

/// The type `first` (a file's first bytes) shows; `None` for bytes no
/// signature matches (text, most often).
pub fn detect(first: &[u8]) -> Option<Detected> {
    let found = infer::get(first)?;
    let mime = found.mime_type().to_owned();
    let kind = match (mime.as_str(), found.matcher_type()) {
        // `infer` files these among its archives; they are documents.
        ("application/pdf" | "application/rtf" | "application/postscript", _) => Kind::Document,
        (_, infer::MatcherType::App) => Kind::Executable,
        (_, infer::MatcherType::Archive) => Kind::Archive,
        (_, infer::MatcherType::Doc | infer::MatcherType::Book) => Kind::Document,
        (_, infer::MatcherType::Image) => Kind::Image,
        (_, infer::MatcherType::Audio | infer::MatcherType::Video) => Kind::Media,
        _ => Kind::Other,
    };
    Some(Detected { mime, kind })
}

/// Whether `declared` (a media type) names a document a person opens to
/// read: text, PDF, an image, an office document, an e-book.
fn is_document(declared: &str) -> bool {
    let declared = declared
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    declared.starts_with("text/")
        || declared.starts_with("image/")
        || declared.starts_with("application/vnd.openxmlformats-officedocument.")
        || declared.starts_with("application/vnd.oasis.opendocument.")
        || declared.starts_with("application/vnd.ms-")
        || matches!(
            declared.as_str(),
            "application/pdf"
                | "application/msword"
                | "application/rtf"
                | "application/json"
                | "application/xml"
                | "application/epub+zip"
        )
}

/// Whether `declared` is a document kept in a zip (an office document, an
/// e-book): bytes that show a plain zip do not contradict it.
fn is_zipped_document(declared: &str) -> bool {
    let declared = declared.to_ascii_lowercase();
    declared.starts_with("application/vnd.openxmlformats-officedocument.")
        || declared.starts_with("application/vnd.oasis.opendocument.")
        || declared.starts_with("application/epub+zip")
}

/// Why a file declared `declared` whose bytes are `detected` is refused
/// under `SLUICE_TYPE_CHECK=refuse` (`type: …`), or `None`: only an
/// executable or an archive declared a document contradicts.
pub fn contradiction(declared: &str, detected: &Detected) -> Option<String> {
    if !matches!(detected.kind, Kind::Executable | Kind::Archive) || !is_document(declared) {
        return None;
    }
    if detected.mime == "application/zip" && is_zipped_document(declared) {
        return None;
    }
    Some(format!(
        "type: its bytes are {} ({}), not the {declared} declared",
        detected.kind.words(),
        detected.mime
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An ELF header's first 64 bytes (`infer` reads past 52).
    const ELF: &[u8] = b"\x7fELF\x02\x01\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x02\x00\x3e\x00\
        \x01\x00\x00\x00\x40\x10\x40\x00\x00\x00\x00\x00\x40\x00\x00\x00\x00\x00\x00\x00\
        \x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x40\x00\x38\x00\x01\x00\x40\x00\
        \x00\x00\x00\x00";
    const ZIP: &[u8] =
        b"PK\x03\x04\x14\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00";
    const PDF: &[u8] = b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n1 0 obj\n";
    const PNG: &[u8] = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01";

    #[test]
    fn each_kind_is_told_by_its_first_bytes() {
        let kind = |b: &[u8]| detect(b).map(|d| (d.mime, d.kind));
        assert_eq!(kind(PDF), Some(("application/pdf".into(), Kind::Document)));
        assert_eq!(kind(PNG), Some(("image/png".into(), Kind::Image)));
        assert_eq!(kind(ZIP), Some(("application/zip".into(), Kind::Archive)));
        assert_eq!(kind(ELF).map(|k| k.1), Some(Kind::Executable));
        assert_eq!(kind(b"hello, plain text"), None);
    }

    #[test]
    fn only_an_executable_or_an_archive_declared_a_document_contradicts() {
        let elf = detect(ELF).unwrap();
        let zip = detect(ZIP).unwrap();
        let pdf = detect(PDF).unwrap();
        let why = contradiction("application/pdf", &elf).unwrap();
        assert!(
            why.starts_with("type: its bytes are an executable"),
            "{why}"
        );
        assert!(contradiction("image/png", &zip).is_some());
        assert!(contradiction("text/plain; charset=utf-8", &elf).is_some());
        // Declared what they are, or as bytes of no kind in particular.
        assert_eq!(contradiction("application/zip", &zip), None);
        assert_eq!(contradiction("application/octet-stream", &elf), None);
        assert_eq!(contradiction("application/x-executable", &elf), None);
        // A document declared as another document is only noted.
        assert_eq!(contradiction("image/png", &pdf), None);
        // An office document is a zip.
        let docx = "application/vnd.openxmlformats-officedocument.wordprocessingml.document";
        assert_eq!(contradiction(docx, &zip), None);
    }
}
