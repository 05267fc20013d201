//! What a request on a download link asks for ([`Wanted`]), and the bytes
//! of the file that makes ([`Span`]): the whole file, one `Range`
//! (RFC 9110 §14), its headers only, or the person's page. Pure: the
//! resolver reads the request, [`super::Downloads::redeem_link`] decides.

/// How many times a file's size one download link may deliver in all:
/// enough for a preview's ranges, a resume or two and the whole file once;
/// not a mirror for whoever finds the link.
pub const BUDGET_TIMES_SIZE: u64 = 2;

/// What a request on a download link asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wanted {
    /// Bytes of the file (a `GET`, ranged or whole).
    Bytes(Ranged),
    /// The headers a `GET` would have (`HEAD`): spends nothing.
    Head,
    /// The person's page (a browser or a link preview asking for HTML):
    /// name, size, SHA-256 and a button that saves. Spends nothing.
    Page,
}

/// The one range a `Range` header asks for (`bytes=` only).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Ranged {
    /// No range, several, another unit or one that does not parse: the
    /// whole file (a server may ignore `Range`, RFC 9110 §14.2).
    #[default]
    Whole,
    /// `bytes=<first>-`: from `first` to the end (what `curl -C -` and a
    /// browser's resumed download send).
    From(u64),
    /// `bytes=<first>-<last>`, both inclusive.
    Span(u64, u64),
    /// `bytes=-<n>`: the last `n` bytes.
    Suffix(u64),
}

impl Ranged {
    /// The range a `Range` header's value asks for. Several ranges are
    /// answered with the whole file (`200`), as RFC 9110 allows: a
    /// multipart answer is more than any client of a file link needs.
    pub fn parse(value: Option<&str>) -> Ranged {
        let Some(spec) = value.and_then(|v| v.trim().strip_prefix("bytes=")) else {
            return Ranged::Whole;
        };
        let spec = spec.trim();
        if spec.contains(',') {
            return Ranged::Whole;
        }
        let Some((first, last)) = spec.split_once('-') else {
            return Ranged::Whole;
        };
        let number = |s: &str| {
            let s = s.trim();
            (!s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()))
                .then(|| s.parse::<u64>().ok())
                .flatten()
        };
        match (first.trim().is_empty(), number(first), number(last)) {
            (true, _, Some(n)) => Ranged::Suffix(n),
            (false, Some(a), None) if last.trim().is_empty() => Ranged::From(a),
            (false, Some(a), Some(b)) if b >= a => Ranged::Span(a, b),
            _ => Ranged::Whole,
        }
    }

    /// The bytes of a file of `size` this asks for, or `None` when none of
    /// them exist (`416`, `Content-Range: bytes */size`).
    pub fn span(self, size: u64) -> Option<Span> {
        let (start, end) = match self {
            Ranged::Whole => {
                return Some(Span {
                    start: 0,
                    end: size,
                    size,
                });
            }
            Ranged::From(a) => (a, size),
            Ranged::Span(a, b) => (a, b.saturating_add(1).min(size)),
            Ranged::Suffix(n) => (size.saturating_sub(n), size),
        };
        (start < end).then_some(Span { start, end, size })
    }

    /// Whether a range was asked for (the answer is `206`).
    pub fn is_partial(self) -> bool {
        self != Ranged::Whole
    }
}

/// The bytes `[start, end)` of a file of `size`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Span {
    /// The first byte sent.
    pub start: u64,
    /// One past the last byte sent.
    pub end: u64,
    /// The file's size.
    pub size: u64,
}

impl Span {
    /// How many bytes this sends.
    pub fn len(&self) -> u64 {
        self.end - self.start
    }

    /// Whether this sends nothing (an empty file, whole).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether this sends the file's last byte: delivered once, it spends
    /// the link.
    pub fn reaches_end(&self) -> bool {
        self.end == self.size
    }

    /// The `Content-Range` of a `206` answer.
    pub fn content_range(&self) -> String {
        format!("bytes {}-{}/{}", self.start, self.end - 1, self.size)
    }
}

/// A link's byte budget for a file of `size`.
pub fn budget(size: u64) -> u64 {
    size.saturating_mul(BUDGET_TIMES_SIZE)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_range_is_read_and_anything_else_is_the_whole_file() {
        let cases = [
            (None, Ranged::Whole),
            (Some("bytes=10-"), Ranged::From(10)),
            (Some("bytes=0-1023"), Ranged::Span(0, 1023)),
            (Some(" bytes= 5 - 9 "), Ranged::Span(5, 9)),
            (Some("bytes=-500"), Ranged::Suffix(500)),
            (Some("bytes=0-1,5-9"), Ranged::Whole),
            (Some("bytes=9-5"), Ranged::Whole),
            (Some("items=0-5"), Ranged::Whole),
            (Some("bytes=a-"), Ranged::Whole),
            (Some("bytes=+1-"), Ranged::Whole),
            (Some("bytes=-"), Ranged::Whole),
            (Some("bytes=99999999999999999999-"), Ranged::Whole),
        ];
        for (header, want) in cases {
            assert_eq!(Ranged::parse(header), want, "{header:?}");
        }
    }

    #[test]
    fn a_range_is_clamped_to_the_file_and_none_past_its_end() {
        let span = |r: Ranged| r.span(100).map(|s| (s.start, s.end));
        assert_eq!(span(Ranged::Whole), Some((0, 100)));
        assert_eq!(span(Ranged::From(40)), Some((40, 100)));
        assert_eq!(span(Ranged::Span(90, 500)), Some((90, 100)));
        assert_eq!(span(Ranged::Suffix(30)), Some((70, 100)));
        assert_eq!(span(Ranged::Suffix(300)), Some((0, 100)));
        assert_eq!(span(Ranged::From(100)), None);
        assert_eq!(span(Ranged::Span(100, 200)), None);
        assert_eq!(span(Ranged::Suffix(0)), None);
        // An empty file: whole is nothing; any range is past its end.
        assert_eq!(Ranged::Whole.span(0).map(|s| s.len()), Some(0));
        assert_eq!(Ranged::From(0).span(0), None);
        let s = Ranged::Span(0, 9).span(100).unwrap();
        assert_eq!((s.len(), s.reaches_end()), (10, false));
        assert_eq!(s.content_range(), "bytes 0-9/100");
        assert!(Ranged::From(99).span(100).unwrap().reaches_end());
    }
}
