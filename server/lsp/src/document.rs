//! An open document: its text as a rope, its tree-sitter tree and the
//! incremental edit path.
//!
//! Each content change is applied on its own, in order: its byte range is
//! taken from the text as it is before the change, then the rope and the
//! tree are edited. After the last change the file is reparsed once from the
//! edited tree, over the rope's text with its line directives and
//! attributes blanked (the text is built anyway: the analysis keeps it).
//! Before it, the reach of any attribute near the edits is marked edited
//! too, since completing or breaking one changes how earlier bytes read.

use crate::convert::{Encoding, LineCol};
use racelens_syntax::{LineIndex, Parsed};
use ropey::{Rope, RopeSlice};
use std::sync::{Arc, OnceLock};
use tree_sitter::{InputEdit, Parser, Point, Tree};

/// One content change in the client's terms: replace `range` (the whole
/// text when `None`) with `text`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TextChange {
    pub range: Option<(LineCol, LineCol)>,
    pub text: String,
}

pub struct Document {
    version: i32,
    rope: Rope,
    /// `None` after a whole-text replacement: the next parse starts afresh.
    tree: Option<Tree>,
    parsed: Parsed,
    line_index: Arc<OnceLock<LineIndex>>,
    /// The bytes the edits since the last parse touched (in today's text),
    /// as one span: attributes parse as blanks, and an edit there may
    /// change how bytes beyond it are read (`attribute_windows`).
    edited: Option<(usize, usize)>,
}

impl Document {
    pub fn new(text: &str, version: i32, parser: &mut Parser) -> Document {
        let rope = Rope::from_str(text);
        let (tree, parsed) = parse_text(Arc::from(text), None, parser);
        Document {
            version,
            rope,
            tree,
            parsed,
            line_index: Arc::default(),
            edited: None,
        }
    }

    /// A document whose text was already parsed (read from disk at the
    /// workspace load): it starts from that tree instead of parsing again.
    pub fn from_parsed(parsed: Parsed, version: i32) -> Document {
        Document {
            version,
            rope: Rope::from_str(&parsed.text),
            tree: Some((*parsed.tree).clone()),
            parsed,
            line_index: Arc::default(),
            edited: None,
        }
    }

    pub fn version(&self) -> i32 {
        self.version
    }

    /// The current text and tree, as the analysis takes them.
    pub fn parsed(&self) -> Parsed {
        self.parsed.clone()
    }

    pub fn text(&self) -> &Arc<str> {
        &self.parsed.text
    }

    /// The line index of the current text, built on first use.
    pub fn line_index(&self) -> Arc<OnceLock<LineIndex>> {
        self.line_index.clone()
    }

    /// Applies the changes of one `didChange` and reparses once.
    pub fn apply_changes(
        &mut self,
        changes: &[TextChange],
        version: i32,
        enc: Encoding,
        parser: &mut Parser,
    ) {
        for change in changes {
            match change.range {
                None => {
                    self.rope = Rope::from_str(&change.text);
                    self.tree = None;
                }
                Some((start, end)) => self.apply_range_change(start, end, &change.text, enc),
            }
        }
        self.version = version;
        self.reparse(parser);
    }

    fn apply_range_change(&mut self, start: LineCol, end: LineCol, text: &str, enc: Encoding) {
        let start = self.offset(start, enc);
        let end = self.offset(end, enc).max(start);
        let edit = InputEdit {
            start_byte: start,
            old_end_byte: end,
            new_end_byte: start + text.len(),
            start_position: point(&self.rope, start),
            old_end_position: point(&self.rope, end),
            new_end_position: Point::default(),
        };
        let (start_char, end_char) = (self.rope.byte_to_char(start), self.rope.byte_to_char(end));
        self.rope.remove(start_char..end_char);
        self.rope.insert(start_char, text);
        let edit = InputEdit {
            new_end_position: point(&self.rope, edit.new_end_byte),
            ..edit
        };
        if let Some(tree) = &mut self.tree {
            tree.edit(&edit);
        }
        // The span of every edit so far, moved through this one.
        let (s, old_end, new_end) = (edit.start_byte, edit.old_end_byte, edit.new_end_byte);
        let moved = |x: usize| {
            if x >= old_end {
                x + new_end - old_end
            } else {
                x.min(new_end.max(s))
            }
        };
        self.edited = Some(match self.edited {
            None => (s, new_end),
            Some((lo, hi)) => (lo.min(s), moved(hi).max(new_end)),
        });
    }

    fn reparse(&mut self, parser: &mut Parser) {
        let text: Arc<str> = Arc::from(String::from(&self.rope));
        if let (Some((lo, hi)), Some(tree)) = (self.edited.take(), &mut self.tree) {
            // Completing or breaking an attribute changes what its earlier
            // bytes parse as: mark its whole reach edited, in place.
            let rope = &self.rope;
            racelens_syntax::parse::mark_attribute_edits(tree, &text, lo, hi, |at| point(rope, at));
        }
        (self.tree, self.parsed) = parse_text(text, self.tree.as_ref(), parser);
        self.line_index = Arc::default();
    }

    /// Byte offset of a position in the current text, clamped: lines past
    /// the end map to the end, columns past a line's end to its end, and a
    /// column inside a character to that character's start.
    pub fn offset(&self, pos: LineCol, enc: Encoding) -> usize {
        let line_no = pos.line as usize;
        if line_no >= self.rope.len_lines() {
            return self.rope.len_bytes();
        }
        let line = self.rope.line(line_no);
        let content_chars = content_len_chars(line);
        let char_in_line = match enc {
            Encoding::Utf16 => {
                line.utf16_cu_to_char((pos.col as usize).min(line.char_to_utf16_cu(content_chars)))
            }
            Encoding::Utf8 => {
                line.byte_to_char((pos.col as usize).min(line.char_to_byte(content_chars)))
            }
        };
        self.rope.line_to_byte(line_no) + line.char_to_byte(char_in_line)
    }
}

/// Parses the rope's text, reusing `old_tree` (already edited) when given.
fn parse_text(
    text: Arc<str>,
    old_tree: Option<&Tree>,
    parser: &mut Parser,
) -> (Option<Tree>, Parsed) {
    // Line directives and attributes read as blanks, as in
    // every other parse (`racelens_syntax::parse::mask_for_parse`).
    let masked = racelens_syntax::parse::mask_for_parse(&text);
    let parsed = parser.parse(masked.as_deref().unwrap_or(&text), old_tree);
    match parsed {
        Some(tree) => (
            Some(tree.clone()),
            Parsed {
                text,
                tree: Arc::new(tree),
            },
        ),
        None => {
            // Parsing only fails after a cancellation or a timeout, neither of
            // which is set; degrade to a fresh parse rather than crash.
            tracing::error!("incremental parse failed; parsing the document from scratch");
            parser.reset();
            (None, racelens_syntax::parse::parse(text))
        }
    }
}

/// Characters of a line without its line break.
fn content_len_chars(line: RopeSlice) -> usize {
    let mut n = line.len_chars();
    if n > 0 && line.char(n - 1) == '\n' {
        n -= 1;
    }
    if n > 0 && line.char(n - 1) == '\r' {
        n -= 1;
    }
    n
}

/// tree-sitter's point of a byte offset: a row and a byte column.
fn point(rope: &Rope, byte: usize) -> Point {
    let row = rope.byte_to_line(byte);
    Point {
        row,
        column: byte - rope.line_to_byte(row),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn change(l0: u32, c0: u32, l1: u32, c1: u32, text: &str) -> TextChange {
        TextChange {
            range: Some((LineCol { line: l0, col: c0 }, LineCol { line: l1, col: c1 })),
            text: text.into(),
        }
    }

    #[test]
    fn incremental_edits_match_a_fresh_parse() {
        let mut parser = racelens_syntax::parse::new_parser();
        let mut doc = Document::new("int a;\nint f(void) { return a; }\n", 1, &mut parser);
        doc.apply_changes(
            &[change(1, 21, 1, 22, "b"), change(0, 4, 0, 5, "b")],
            2,
            Encoding::Utf16,
            &mut parser,
        );
        assert_eq!(&**doc.text(), "int b;\nint f(void) { return b; }\n");
        let fresh = racelens_syntax::parse_text(doc.text());
        assert_eq!(
            doc.parsed().tree.root_node().to_sexp(),
            fresh.root_node().to_sexp()
        );
    }

    #[test]
    fn line_directives_parse_as_blanks_incrementally_too() {
        let mut parser = racelens_syntax::parse::new_parser();
        let src = "int t[2] =\n#line 9 \"p.y\"\n  {1, 2};\nint f(void) { return t[0]; }\n";
        let mut doc = Document::new(src, 1, &mut parser);
        assert!(!doc.parsed().tree.root_node().has_error());
        // Edit inside the body, then turn the directive into code and back.
        doc.apply_changes(&[change(3, 23, 3, 24, "1")], 2, Encoding::Utf8, &mut parser);
        doc.apply_changes(&[change(1, 0, 1, 1, "")], 3, Encoding::Utf8, &mut parser);
        doc.apply_changes(&[change(1, 0, 1, 0, "#")], 4, Encoding::Utf8, &mut parser);
        let fresh = racelens_syntax::parse_text(doc.text());
        assert!(doc.text().contains("#line 9") && doc.text().contains("t[1]"));
        assert_eq!(
            doc.parsed().tree.root_node().to_sexp(),
            fresh.root_node().to_sexp()
        );
        assert!(!fresh.root_node().has_error());
    }

    #[test]
    fn typing_and_deleting_an_attribute_matches_a_fresh_parse() {
        // Attributes parse as blanks (`mask_attributes`): completing or
        // breaking one changes how bytes before the edit are read.
        let mut parser = racelens_syntax::parse::new_parser();
        let src = "extern int ( open_it)(char const *p);\nint f(void) { return 0; }\n";
        let mut doc = Document::new(src, 1, &mut parser);
        let attr = "__attribute__((__nonnull__(1))) ";
        let mut version = 1;
        let check = |doc: &Document| {
            let fresh = racelens_syntax::parse_text(doc.text());
            assert_eq!(
                doc.parsed().tree.root_node().to_sexp(),
                fresh.root_node().to_sexp(),
                "{}",
                doc.text()
            );
        };
        for (i, ch) in attr.char_indices() {
            version += 1;
            let col = 13 + i as u32;
            doc.apply_changes(
                &[change(0, col, 0, col, &ch.to_string())],
                version,
                Encoding::Utf8,
                &mut parser,
            );
            check(&doc);
        }
        assert!(!doc.parsed().tree.root_node().has_error());
        // Delete it again from its end, a character at a time: the
        // closing parentheses first, which unmask it.
        for k in (0..attr.len() as u32 - 1).rev() {
            version += 1;
            doc.apply_changes(
                &[change(0, 13 + k, 0, 14 + k, "")],
                version,
                Encoding::Utf8,
                &mut parser,
            );
            check(&doc);
        }
        assert!(
            doc.text().starts_with("extern int (  open_it)"),
            "{}",
            doc.text()
        );
    }

    #[test]
    fn positions_are_clamped_and_encoded() {
        let mut parser = racelens_syntax::parse::new_parser();
        let doc = Document::new("/* é😀 */ x;\r\ny;", 1, &mut parser);
        let x = doc.text().find('x').unwrap();
        assert_eq!(doc.offset(LineCol { line: 0, col: 10 }, Encoding::Utf16), x);
        assert_eq!(doc.offset(LineCol { line: 0, col: 13 }, Encoding::Utf8), x);
        // Inside the emoji: back to its start.
        assert_eq!(doc.offset(LineCol { line: 0, col: 5 }, Encoding::Utf16), 5);
        assert_eq!(doc.offset(LineCol { line: 0, col: 7 }, Encoding::Utf8), 5);
        // Past the end of the line: before the CRLF.
        assert_eq!(
            doc.offset(LineCol { line: 0, col: 99 }, Encoding::Utf16),
            x + 2
        );
        assert_eq!(
            doc.offset(LineCol { line: 9, col: 0 }, Encoding::Utf16),
            doc.text().len()
        );
    }
}
