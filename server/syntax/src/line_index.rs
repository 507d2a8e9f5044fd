//! Byte offset <-> line/column conversion in UTF-8 or UTF-16 columns.
//!
//! tree-sitter points count bytes and only `\n`; LSP and SARIF want lines and
//! columns in a negotiated encoding. Everything maps through byte offsets.

/// Line starts of a text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LineIndex {
    starts: Vec<u32>,
}

impl LineIndex {
    pub fn new(text: &str) -> Self {
        let mut starts = vec![0u32];
        for (i, b) in text.bytes().enumerate() {
            if b == b'\n' {
                starts.push(i as u32 + 1);
            }
        }
        LineIndex { starts }
    }

    /// Zero-based line of a byte offset.
    pub fn line_of(&self, offset: usize) -> usize {
        match self.starts.binary_search(&(offset as u32)) {
            Ok(l) => l,
            Err(l) => l - 1,
        }
    }

    pub fn line_start(&self, line: usize) -> usize {
        self.starts
            .get(line)
            .copied()
            .unwrap_or(*self.starts.last().unwrap()) as usize
    }

    pub fn line_count(&self) -> usize {
        self.starts.len()
    }

    /// Zero-based (line, column) with the column counted in UTF-8 bytes or
    /// UTF-16 code units.
    pub fn position(&self, text: &str, offset: usize, utf16: bool) -> (u32, u32) {
        let offset = floor_char_boundary(text, offset.min(text.len()));
        let line = self.line_of(offset);
        let start = self.line_start(line);
        let col = if utf16 {
            text[start..offset].encode_utf16().count()
        } else {
            offset - start
        };
        (line as u32, col as u32)
    }

    /// Byte offset of a (line, column) position, clamped into the text.
    pub fn offset(&self, text: &str, line: u32, col: u32, utf16: bool) -> usize {
        let line = line as usize;
        if line >= self.starts.len() {
            return text.len();
        }
        let start = self.line_start(line);
        let end = if line + 1 < self.starts.len() {
            self.line_start(line + 1)
        } else {
            text.len()
        };
        let line_text = &text[start..end];
        let line_text = line_text.strip_suffix('\n').unwrap_or(line_text);
        let line_text = line_text.strip_suffix('\r').unwrap_or(line_text);
        if utf16 {
            let mut units = 0u32;
            for (i, ch) in line_text.char_indices() {
                if units >= col {
                    return start + i;
                }
                units += ch.len_utf16() as u32;
            }
            start + line_text.len()
        } else {
            floor_char_boundary(text, start + (col as usize).min(line_text.len()))
        }
    }
}

/// The largest char boundary at or below `i`.
pub fn floor_char_boundary(s: &str, mut i: usize) -> usize {
    i = i.min(s.len());
    while !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utf16_round_trip_after_multibyte() {
        let text = "int ä = 1;\n/* 😀 */ x = 2;\n";
        let li = LineIndex::new(text);
        let off = text.find("x =").unwrap();
        assert_eq!(li.position(text, off, true), (1, 9));
        assert_eq!(li.position(text, off, false), (1, 11));
        assert_eq!(li.offset(text, 1, 9, true), off);
        assert_eq!(li.offset(text, 1, 11, false), off);
        assert_eq!(li.offset(text, 99, 0, true), text.len());
        assert_eq!(li.offset(text, 0, 999, true), text.find('\n').unwrap());
    }
}
