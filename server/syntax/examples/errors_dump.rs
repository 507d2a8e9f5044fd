fn main() {
    let path = std::env::args().nth(1).unwrap();
    let text = String::from_utf8_lossy(&std::fs::read(&path).unwrap()).into_owned();
    let tree = racelens_syntax::parse::parse_text(&text);
    let mut cur = tree.root_node().walk();
    for c in tree.root_node().named_children(&mut cur) {
        let li0 = racelens_syntax::LineIndex::new(&text);
        let (a, b) = (li0.line_of(c.start_byte()) + 1, li0.line_of(c.end_byte()) + 1);
        if a >= 4714 && a <= 4720 {
            println!("covering 4714: {} {}..{} {}", c.kind(), a, b, &c.to_sexp()[..300.min(c.to_sexp().len())]);
        }
        if c.has_error() {
            let li = racelens_syntax::LineIndex::new(&text);
            println!("{} lines {}..{} ({} bytes)", c.kind(), li.line_of(c.start_byte()) + 1, li.line_of(c.end_byte()) + 1, c.end_byte() - c.start_byte());
        }
    }
}
#[allow(dead_code)]
fn unused() {}
