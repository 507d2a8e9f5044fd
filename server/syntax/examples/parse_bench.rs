//! Times the syntax layer alone on one file: a bare tree-sitter parse (the
//! baseline quoted in docs/benchmarks.md), item extraction and lowering.
//! `cargo run --release -p racelens-syntax --example parse_bench FILE`

fn main() {
    let path = std::env::args().nth(1).unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    let t = std::time::Instant::now();
    for _ in 0..3 {
        let tree = racelens_syntax::parse::parse_text(&text);
        std::hint::black_box(&tree);
    }
    eprintln!("parse avg {:?}", t.elapsed() / 3);
    let tree = racelens_syntax::parse::parse_text(&text);
    let t = std::time::Instant::now();
    let items = racelens_syntax::extract_items(&tree, &text);
    eprintln!("items {:?}", t.elapsed());
    let t = std::time::Instant::now();
    let mt = racelens_syntax::MacroTable::new(&items.macros);
    let mut n = 0;
    for f in &items.functions {
        let ir = racelens_syntax::lower_function(&text[f.start as usize..f.end as usize], &mt);
        n += ir.body.len();
    }
    eprintln!("lower {:?} {}", t.elapsed(), n);
}
