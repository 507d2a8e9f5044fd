//! Conversions between the analysis' byte offsets and paths and the LSP's
//! positions and URIs (the `to_proto` / `from_proto` layer).
//!
//! Offsets are mapped through [`LineIndex`] of the very text the analysis
//! saw, so a diagnostic's range always matches the version it is published
//! with. Columns are counted in the negotiated [`Encoding`].

use racelens_analysis::{Analysis, SiteRef};
use racelens_syntax::LineIndex;
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};
use tower_lsp_server::ls_types::{Location, Position, PositionEncodingKind, Range, Uri};

/// The position encoding agreed with the client.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Encoding {
    Utf8,
    #[default]
    Utf16,
}

impl Encoding {
    /// Picks UTF-8 when the client offers it in either list, else UTF-16
    /// (the encoding every client must support).
    pub fn negotiate(
        position_encodings: &[PositionEncodingKind],
        offset_encoding: &[String],
    ) -> Encoding {
        let utf8 = position_encodings.iter().any(|k| k.as_str() == "utf-8")
            || offset_encoding.iter().any(|k| k == "utf-8");
        if utf8 {
            Encoding::Utf8
        } else {
            Encoding::Utf16
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Encoding::Utf8 => "utf-8",
            Encoding::Utf16 => "utf-16",
        }
    }

    pub fn is_utf16(self) -> bool {
        self == Encoding::Utf16
    }
}

/// A zero-based line and column in some encoding, free of LSP types so that
/// the benchmark and tests can drive the edit path.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct LineCol {
    pub line: u32,
    pub col: u32,
}

/// A text with its line index, for offset to position conversion.
pub struct Lines<'a> {
    pub text: &'a str,
    pub index: &'a LineIndex,
}

impl Lines<'_> {
    pub fn position(&self, offset: usize, enc: Encoding) -> Position {
        let (line, character) = self.index.position(self.text, offset, enc.is_utf16());
        Position { line, character }
    }

    pub fn range(&self, start: usize, end: usize, enc: Encoding) -> Range {
        Range {
            start: self.position(start, enc),
            end: self.position(end.max(start), enc),
        }
    }

    /// Byte offset of an LSP position, clamped into the text.
    pub fn offset(&self, pos: Position, enc: Encoding) -> usize {
        self.index
            .offset(self.text, pos.line, pos.character, enc.is_utf16())
    }
}

pub fn line_col(pos: Position) -> LineCol {
    LineCol {
        line: pos.line,
        col: pos.character,
    }
}

/// The file path the analysis uses for a URI: the canonical path when the
/// file exists (so that workspace scans and editor URIs agree), the plain
/// path otherwise, and the URI text itself for non-file schemes.
pub fn uri_to_path(uri: &Uri) -> PathBuf {
    let is_file = uri.scheme().as_str().eq_ignore_ascii_case("file");
    match uri.to_file_path().filter(|_| is_file) {
        Some(p) => std::fs::canonicalize(&p).unwrap_or_else(|_| p.into_owned()),
        None => PathBuf::from(uri.as_str()),
    }
}

/// A `file:` URI for a path (used for files the client has not opened).
pub fn path_to_uri(path: &Path) -> Option<Uri> {
    Uri::from_file_path(path)
}

/// An open document as a snapshot saw it.
#[derive(Clone)]
pub struct OpenFile {
    pub uri: Uri,
    pub version: i32,
    pub text: Arc<str>,
    /// Shared with the document, so it is built once per version.
    pub line_index: Arc<OnceLock<LineIndex>>,
}

/// URIs and ranges for any file of a snapshot: open documents through their
/// cached line index, other files through the analysis' text.
pub struct Files<'a> {
    analysis: &'a Analysis,
    open: &'a BTreeMap<PathBuf, OpenFile>,
    enc: Encoding,
    others: HashMap<PathBuf, Option<(Arc<str>, LineIndex)>>,
}

impl<'a> Files<'a> {
    pub fn new(
        analysis: &'a Analysis,
        open: &'a BTreeMap<PathBuf, OpenFile>,
        enc: Encoding,
    ) -> Self {
        Files {
            analysis,
            open,
            enc,
            others: HashMap::new(),
        }
    }

    /// The open file at `path`. Paths with the same bytes are found
    /// without the map's component-wise comparison (nearly every site of a
    /// publish lies in the one edited file).
    fn open_file(&self, path: &Path) -> Option<&'a OpenFile> {
        let open = self.open;
        if let Some((p, f)) = open.iter().next() {
            if open.len() == 1 && p.as_os_str() == path.as_os_str() {
                return Some(f);
            }
        }
        open.get(path)
    }

    /// The client's URI for an open file, a `file:` URI otherwise.
    pub fn uri(&self, path: &Path) -> Option<Uri> {
        match self.open_file(path) {
            Some(f) => Some(f.uri.clone()),
            None => path_to_uri(path),
        }
    }

    pub fn range(&mut self, path: &Path, start: usize, end: usize) -> Option<Range> {
        let enc = self.enc;
        if let Some(f) = self.open_file(path) {
            let index = f.line_index.get_or_init(|| LineIndex::new(&f.text));
            return Some(
                Lines {
                    text: &f.text,
                    index,
                }
                .range(start, end, enc),
            );
        }
        let analysis = self.analysis;
        let entry = self.others.entry(path.to_path_buf()).or_insert_with(|| {
            analysis.file_text(path).map(|t| {
                let index = LineIndex::new(&t);
                (t, index)
            })
        });
        let (text, index) = entry.as_ref()?;
        Some(Lines { text, index }.range(start, end, enc))
    }

    pub fn location(&mut self, site: &SiteRef) -> Option<Location> {
        let range = self.range(&site.file, site.start, site.end)?;
        Some(Location {
            uri: self.uri(&site.file)?,
            range,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn negotiation_prefers_utf8_from_either_list() {
        assert_eq!(
            Encoding::negotiate(
                &[PositionEncodingKind::UTF16, PositionEncodingKind::UTF8],
                &[]
            ),
            Encoding::Utf8
        );
        assert_eq!(Encoding::negotiate(&[], &["utf-8".into()]), Encoding::Utf8);
        assert_eq!(
            Encoding::negotiate(&[PositionEncodingKind::UTF32], &["utf-16".into()]),
            Encoding::Utf16
        );
    }

    #[test]
    fn ranges_in_both_encodings_after_multibyte_text() {
        let text = "/* é😀 */ x = 1;\n";
        let index = LineIndex::new(text);
        let lines = Lines {
            text,
            index: &index,
        };
        let x = text.find('x').unwrap();
        assert_eq!(
            lines.position(x, Encoding::Utf8),
            Position {
                line: 0,
                character: 13
            }
        );
        assert_eq!(
            lines.position(x, Encoding::Utf16),
            Position {
                line: 0,
                character: 10
            }
        );
        assert_eq!(
            lines.offset(
                Position {
                    line: 0,
                    character: 10
                },
                Encoding::Utf16
            ),
            x
        );
    }
}
