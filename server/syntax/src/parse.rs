//! Thin wrappers over tree-sitter-c: one place creates parsers, so the rest
//! of the code never touches tree-sitter set-up.

use std::sync::Arc;
use tree_sitter::{Language, Parser, Tree};

/// The tree-sitter-c language.
pub fn language() -> Language {
    tree_sitter_c::LANGUAGE.into()
}

/// A fresh parser for C.
pub fn new_parser() -> Parser {
    let mut p = Parser::new();
    p.set_language(&language())
        .expect("tree-sitter-c ABI matches tree-sitter");
    p
}

/// A parsed file: the text together with its tree.
#[derive(Clone)]
pub struct Parsed {
    pub text: Arc<str>,
    pub tree: Arc<Tree>,
}

impl std::fmt::Debug for Parsed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Parsed({} bytes)", self.text.len())
    }
}

/// Two parses are equal when they are the very same parse: a tree has no
/// structural equality, and the text decides the memo anyway.
impl PartialEq for Parsed {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.tree, &other.tree) && Arc::ptr_eq(&self.text, &other.text)
    }
}
impl Eq for Parsed {}
impl std::hash::Hash for Parsed {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        (Arc::as_ptr(&self.tree) as usize).hash(state)
    }
}

thread_local! {
    static PARSER: std::cell::RefCell<Parser> = std::cell::RefCell::new(new_parser());
}

/// Parses `text` from scratch. Never fails: tree-sitter recovers from errors.
/// Line directives are read as blanks ([`mask_line_directives`]).
pub fn parse_text(text: &str) -> Tree {
    let masked = mask_for_parse(text);
    let input = masked.as_deref().unwrap_or(text);
    PARSER.with(|p| {
        let mut p = p.borrow_mut();
        p.reset();
        p.parse(input, None)
            .unwrap_or_else(|| new_parser().parse("", None).expect("empty parse"))
    })
}

/// Trees of macro expansions parsed on this thread, by text.
const EXPANSION_CACHE: usize = 4096;
/// Longest text kept there.
const EXPANSION_MAX_LEN: usize = 2048;

thread_local! {
    static EXPANSIONS: std::cell::RefCell<rustc_hash::FxHashMap<Box<str>, Tree>> =
        Default::default();
}

/// [`parse_text`] for short texts that recur, such as macro expansions
/// (`STATS_LOCK()` expands to the same text at each of its hundreds of
/// uses): each distinct text is parsed once per thread (a tree is an
/// immutable, reference-counted value; the cache is emptied when full, and
/// long texts are not kept).
pub fn parse_text_cached(text: &str) -> Tree {
    if text.len() > EXPANSION_MAX_LEN {
        return parse_text(text);
    }
    if let Some(t) = EXPANSIONS.with(|c| c.borrow().get(text).cloned()) {
        return t;
    }
    let tree = parse_text(text);
    EXPANSIONS.with(|c| {
        let mut c = c.borrow_mut();
        if c.len() >= EXPANSION_CACHE {
            c.clear();
        }
        c.insert(text.into(), tree.clone());
    });
    tree
}

/// `text` with every line directive (`#line 40 "parser.y"`, and the GNU
/// line markers `# 40 "parser.y" 1` of preprocessed output) replaced by
/// spaces, or `None` when it has none.
///
/// The directives only renumber lines for a compiler's messages, and
/// racelens reports positions in the file itself. But tree-sitter-c takes a
/// directive as an item of its own, so one between `= ` and `{` of an
/// initializer (as CIL and bison write them) tears the declaration apart and
/// turns the whole file into an error: a worse parse, and an incremental
/// reparse that redoes the error recovery of the whole file on every edit.
/// Blanks keep every byte offset and line break where it was, so the tree
/// still indexes the real text.
pub fn mask_line_directives(text: &str) -> Option<String> {
    let mut out: Option<Vec<u8>> = None;
    let (mut offset, mut continued) = (0, false);
    for line in text.as_bytes().split_inclusive(|&b| b == b'\n') {
        // A directive continued by a backslash goes on to the next line.
        if continued || is_line_directive(line) {
            let buf = out.get_or_insert_with(|| text.as_bytes().to_vec());
            for b in &mut buf[offset..offset + line.len()] {
                if !matches!(*b, b'\n' | b'\r') {
                    *b = b' ';
                }
            }
            continued = line.trim_ascii_end().ends_with(b"\\");
        }
        offset += line.len();
    }
    // Only ASCII bytes were replaced by ASCII spaces: still UTF-8.
    out.map(|b| String::from_utf8(b).expect("masking keeps UTF-8"))
}

/// `text` as tree-sitter-c should read it, or `None` when that is `text`:
/// line directives ([`mask_line_directives`]) and GNU attributes
/// ([`mask_attributes`]) become blanks. Every byte offset and line break
/// stays where it was.
pub fn mask_for_parse(text: &str) -> Option<String> {
    match mask_line_directives(text) {
        Some(m) => Some(mask_attributes(&m).map_or(m, |c| c)),
        None => mask_attributes(text),
    }
}

/// `text` with every `__attribute__((...))` replaced by spaces, or `None`
/// when it has none to mask.
///
/// GCC accepts attributes in places tree-sitter-c does not: between a
/// declarator and its initializer (`static T t[36] __attribute__((__aligned__))
/// = {...};`, after which its error recovery swallows the definitions that
/// follow, `main` included), inside a parenthesised declarator (glibc's
/// `extern int ( __attribute__((__nonnull__(1))) open)(...)`, in every file
/// CIL merged), and between a type and its declarator (`typedef unsigned
/// short __attribute__((__may_alias__)) alias;`). Nothing the analysis reads
/// is said by an attribute (alignment, `unused`, `nonnull`, `section`), so
/// all are blanked, except one whose text says `thread`, which is kept for
/// the thread-local test of declarations.
pub fn mask_attributes(text: &str) -> Option<String> {
    const KW: &str = "__attribute";
    let b = text.as_bytes();
    let mut out: Option<Vec<u8>> = None;
    let mut from = 0;
    while let Some(at) = text[from..].find(KW).map(|i| i + from) {
        from = at + KW.len();
        // `__attribute` or `__attribute__`, as a whole word.
        if text[from..].starts_with("__") {
            from += 2;
        }
        let word = |c: u8| c.is_ascii_alphanumeric() || c == b'_';
        if (at > 0 && word(b[at - 1])) || b.get(from).is_some_and(|&c| word(c)) {
            continue;
        }
        let mut j = from;
        while j < b.len() && b[j].is_ascii_whitespace() {
            j += 1;
        }
        if j >= b.len() || b[j] != b'(' {
            continue;
        }
        let Ok(end) = attribute_end(b, j) else {
            continue;
        };
        if !text[at..end].contains("thread") {
            let buf = out.get_or_insert_with(|| b.to_vec());
            for x in &mut buf[at..end] {
                if !matches!(*x, b'\n' | b'\r') {
                    *x = b' ';
                }
            }
        }
        from = end;
    }
    // Only ASCII bytes were replaced by ASCII spaces: still UTF-8.
    out.map(|b| String::from_utf8(b).expect("masking keeps UTF-8"))
}

/// Where an attribute's parentheses, opening at or after `from`, close:
/// `Ok` just past the `)` matching the first `(`; `Err` at the `;`, `{` or
/// `}` (or the end of the text) met first, which an attribute never
/// crosses.
fn attribute_end(b: &[u8], from: usize) -> Result<usize, usize> {
    let mut depth = 0usize;
    for (j, &c) in b.iter().enumerate().skip(from) {
        match c {
            b'(' => depth += 1,
            b')' if depth > 0 => {
                depth -= 1;
                if depth == 0 {
                    return Ok(j + 1);
                }
            }
            b';' | b'{' | b'}' => return Err(j),
            _ => {}
        }
    }
    Err(b.len())
}

/// Marks edited, in place, every range [`attribute_windows`] gives for the
/// edited span `lo..hi` of `text` (the text `tree` was edited to);
/// `point` gives the row and column of a byte offset.
pub fn mark_attribute_edits(
    tree: &mut Tree,
    text: &str,
    lo: usize,
    hi: usize,
    point: impl Fn(usize) -> tree_sitter::Point,
) {
    for (s, e) in attribute_windows(text, lo, hi) {
        let (sp, ep) = (point(s), point(e));
        tree.edit(&tree_sitter::InputEdit {
            start_byte: s,
            old_end_byte: e,
            new_end_byte: e,
            start_position: sp,
            old_end_position: ep,
            new_end_position: ep,
        });
    }
}

/// The byte ranges of `text` whose masking ([`mask_attributes`]) an edit of
/// `lo..hi` may have changed: for each `__attribute` whose reach touches
/// that range, from just before it to its closing parenthesis, and past
/// `hi` to the next `;`, `{` or `}` (an attribute's reach never crosses
/// one, so that covers the rest of one a `;` typed inside it cut short).
/// An editor that reparses incrementally marks them edited, so that no
/// node read from the bytes before the mask changed is reused.
pub fn attribute_windows(text: &str, lo: usize, hi: usize) -> Vec<(usize, usize)> {
    const KW: &str = "__attribute";
    let b = text.as_bytes();
    let (lo, hi) = (lo.min(b.len()), hi.min(b.len()));
    let stop = |c: u8| matches!(c, b';' | b'{' | b'}');
    let from = b[..lo].iter().rposition(|&c| stop(c)).map_or(0, |k| k + 1);
    let after_hi = b[hi..]
        .iter()
        .position(|&c| stop(c))
        .map_or(b.len(), |k| hi + k);
    let mut out = Vec::new();
    // Only occurrences that start by `hi` matter: search no further.
    let limit = (hi + KW.len()).min(b.len());
    let mut at = from;
    while let Some(k) = b
        .get(at..limit)
        .and_then(|w| w.windows(KW.len()).position(|w| w == KW.as_bytes()))
    {
        let start = at + k;
        let end = attribute_end(b, start + KW.len()).unwrap_or_else(|stopped| stopped);
        if end + 1 >= lo {
            out.push((start.saturating_sub(1), end.max(after_hi)));
        }
        at = start + KW.len();
    }
    out
}

/// `#line N ...` or `# N ...`, with optional blanks around the `#`.
fn is_line_directive(line: &[u8]) -> bool {
    let rest = line.trim_ascii_start();
    let Some(rest) = rest.strip_prefix(b"#") else {
        return false;
    };
    let rest = rest.trim_ascii_start();
    match rest.strip_prefix(b"line") {
        Some(after) => after
            .first()
            .is_none_or(|b| b.is_ascii_whitespace() || *b == b'\\'),
        None => rest.first().is_some_and(|b| b.is_ascii_digit()),
    }
}

/// Parses `text` into a [`Parsed`].
pub fn parse(text: Arc<str>) -> Parsed {
    let tree = parse_text(&text);
    Parsed {
        text,
        tree: Arc::new(tree),
    }
}

/// Parses `text` reusing `old`, the parse of a similar text: the one
/// changed region between the two texts (common prefix and suffix) is
/// told to tree-sitter as an edit, so that only it is parsed again.
pub fn reparse(old: &Parsed, text: Arc<str>) -> Parsed {
    let (a, b) = (old.text.as_bytes(), text.as_bytes());
    if a == b {
        return Parsed {
            text,
            tree: old.tree.clone(),
        };
    }
    let mut pre = a.iter().zip(b).take_while(|(x, y)| x == y).count();
    let max_suf = a.len().min(b.len()) - pre;
    let suf = a
        .iter()
        .rev()
        .zip(b.iter().rev())
        .take(max_suf)
        .take_while(|(x, y)| x == y)
        .count();
    // Keep edit boundaries on character boundaries.
    while pre > 0 && !text.is_char_boundary(pre) {
        pre -= 1;
    }
    let point = |t: &[u8], at: usize| {
        let row = t[..at].iter().filter(|&&c| c == b'\n').count();
        let col = at
            - t[..at]
                .iter()
                .rposition(|&c| c == b'\n')
                .map_or(0, |k| k + 1);
        tree_sitter::Point { row, column: col }
    };
    let edit = tree_sitter::InputEdit {
        start_byte: pre,
        old_end_byte: a.len() - suf,
        new_end_byte: b.len() - suf,
        start_position: point(a, pre),
        old_end_position: point(a, a.len() - suf),
        new_end_position: point(b, b.len() - suf),
    };
    let mut tree = (*old.tree).clone();
    tree.edit(&edit);
    // An attribute the edit completed or broke masks differently beyond it.
    mark_attribute_edits(&mut tree, &text, pre, b.len() - suf, |at| point(b, at));
    let masked = mask_for_parse(&text);
    let input = masked.as_deref().unwrap_or(&text);
    let tree = PARSER.with(|p| {
        let mut p = p.borrow_mut();
        p.reset();
        p.parse(input, Some(&tree))
    });
    match tree {
        Some(tree) => Parsed {
            text,
            tree: Arc::new(tree),
        },
        None => parse(text),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cached_parse_is_the_parse_of_its_text() {
        let a = "void __racelens_macro(void) {\npthread_mutex_lock(&stats_lock);\n}\n";
        let b = "void __racelens_macro(void) {\npthread_mutex_unlock(&stats_lock);\n}\n";
        let first = parse_text_cached(a);
        assert_eq!(
            first.root_node().to_sexp(),
            parse_text(a).root_node().to_sexp()
        );
        // The second use of the text finds it kept; another text gets its own.
        assert!(EXPANSIONS.with(|c| c.borrow().contains_key(a)));
        assert_eq!(
            parse_text_cached(a).root_node().to_sexp(),
            first.root_node().to_sexp()
        );
        assert_eq!(
            parse_text_cached(b).root_node().to_sexp(),
            parse_text(b).root_node().to_sexp()
        );
        let long = format!("int x[] = {{{}0}};", "1, ".repeat(EXPANSION_MAX_LEN));
        assert_eq!(
            parse_text_cached(&long).root_node().to_sexp(),
            parse_text(&long).root_node().to_sexp()
        );
        assert!(EXPANSIONS.with(|c| !c.borrow().contains_key(long.as_str())));
    }

    #[test]
    fn a_reparse_through_a_changed_attribute_is_a_fresh_parse() {
        let with = "extern int ( __attribute__((__nonnull__(1))) f)(char *p);\nint g;\n";
        let broken = with.replacen("1)))", "1))", 1);
        let old = parse(Arc::from(with));
        for text in [broken.as_str(), with] {
            let new = reparse(&old, Arc::from(text));
            assert_eq!(
                new.tree.root_node().to_sexp(),
                parse_text(text).root_node().to_sexp()
            );
        }
        let new = reparse(&parse(Arc::from(broken.as_str())), Arc::from(with));
        assert_eq!(
            new.tree.root_node().to_sexp(),
            parse_text(with).root_node().to_sexp()
        );
    }

    #[test]
    fn a_reparse_is_a_fresh_parse() {
        let a = "int x;\nvoid f(void) {\n  x = 1;\n}\n";
        let b = "int x;\nvoid f(void) {\n  x = 1; y();\n  if (x) x--;\n}\nint z;\n";
        let old = parse(Arc::from(a));
        let new = reparse(&old, Arc::from(b));
        assert_eq!(
            new.tree.root_node().to_sexp(),
            parse_text(b).root_node().to_sexp()
        );
        let back = reparse(&new, Arc::from(a));
        assert_eq!(
            back.tree.root_node().to_sexp(),
            parse_text(a).root_node().to_sexp()
        );
    }

    const CIL: &str = "int pl_number = 2;\n#line 462 \"parser.c\"\nstatic int const table[3] =\n#line 462 \"parser.c\"\n  {0, 2, 2};\nint f(void) { return table[1]; }\n";

    #[test]
    fn line_directives_become_blanks_in_place() {
        let masked = mask_line_directives(CIL).expect("two directives");
        assert_eq!(masked.len(), CIL.len());
        assert_eq!(masked.lines().count(), CIL.lines().count());
        assert!(!masked.contains("#line"));
        assert!(masked.contains("static int const table[3] ="));
        let marker = "# 1 \"a.c\"\n  #  12 \"b.h\" 2\n#line\\\n 7\nint x;\n";
        let m = mask_line_directives(marker).unwrap();
        assert_eq!(m.trim(), "int x;");
        assert_eq!(m.len(), marker.len());
        for keep in [
            "#include <a.h>\n",
            "#define LINE 3\n",
            "#lineno 3\n",
            "#if 1\n#endif\n",
            "x = 1; # 2\n",
        ] {
            assert_eq!(mask_line_directives(keep), None, "{keep}");
        }
    }

    #[test]
    fn an_attribute_before_an_initializer_no_longer_hides_what_follows() {
        let src = "static signed char const t[3] __attribute__((__aligned__)) = { (signed char const)2, 3, 4 };\nint main(void) { return t[0]; }\n";
        let masked = mask_for_parse(src).expect("one attribute");
        assert_eq!(masked.len(), src.len());
        assert!(!masked.contains("__attribute__"));
        let tree = parse_text(src);
        assert!(
            !tree.root_node().has_error(),
            "{}",
            tree.root_node().to_sexp()
        );
        let raw = new_parser().parse(src, None).unwrap();
        assert!(raw.root_node().has_error(), "tree-sitter alone fails here");
        // An attribute that says `thread` stays, and so do look-alike words.
        for keep in [
            "int x __attribute__((tls_model_thread));\n",
            "int my__attribute__(int k);\n",
            "int __attribute__x;\n",
        ] {
            assert_eq!(mask_attributes(keep), None, "{keep}");
        }
    }

    #[test]
    fn attributes_where_tree_sitter_has_no_place_for_them_are_blanks() {
        // glibc prototypes as CIL prints them, and a typedef with an
        // attribute before its name: valid C that tree-sitter-c rejects.
        let src = "extern  __attribute__((__nothrow__)) int ( __attribute__((__nonnull__(1))) open)(char const *p, int f);\ntypedef unsigned short __attribute__((__may_alias__))  alias_t;\nint f(void) __attribute ((noreturn));\nint main(void) { return 0; }\n";
        assert!(new_parser()
            .parse(src, None)
            .unwrap()
            .root_node()
            .has_error());
        let masked = mask_for_parse(src).expect("four attributes");
        assert_eq!(masked.len(), src.len());
        assert!(!masked.contains("__attribute"), "{masked}");
        let tree = parse_text(src);
        assert!(
            !tree.root_node().has_error(),
            "{}",
            tree.root_node().to_sexp()
        );
    }

    #[test]
    fn a_directive_inside_an_initializer_no_longer_breaks_the_file() {
        let tree = parse_text(CIL);
        assert!(
            !tree.root_node().has_error(),
            "{}",
            tree.root_node().to_sexp()
        );
        assert_eq!(tree.root_node().kind(), "translation_unit");
        let raw = new_parser().parse(CIL, None).unwrap();
        assert!(raw.root_node().has_error(), "tree-sitter alone fails here");
    }
}
