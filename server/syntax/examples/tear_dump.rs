//! Debugging aid: lists the functions racelens recovers from a C file and the
//! top-level nodes in a byte range, to diagnose torn definitions.
use racelens_syntax::{extract_items, parse_text};
fn main() {
    let args: Vec<String> = std::env::args().collect();
    let src = std::fs::read_to_string(&args[1]).unwrap();
    let tree = parse_text(&src);
    let items = extract_items(&tree, &src);
    let idx = racelens_syntax::LineIndex::new(&src);
    if args.len() > 2 && args[2] == "fns" {
        for f in &items.functions {
            println!(
                "{} {}..{}",
                f.name,
                idx.line_of(f.start as usize) + 1,
                idx.line_of(f.end as usize) + 1
            );
        }
        return;
    }
    let lo: usize = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(0);
    let hi: usize = args
        .get(3)
        .and_then(|s| s.parse().ok())
        .unwrap_or(usize::MAX);
    let mut cur = tree.root_node().walk();
    for c in tree.root_node().children(&mut cur) {
        let l0 = c.start_position().row + 1;
        let l1 = c.end_position().row + 1;
        if l1 < lo || l0 > hi {
            continue;
        }
        let t = &src[c.byte_range()];
        let first: String = t.lines().next().unwrap_or("").chars().take(70).collect();
        println!("{:5}-{:5} {:22} {}", l0, l1, c.kind(), first);
    }
}
