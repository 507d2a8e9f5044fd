fn main() {
    let path = std::env::args().nth(1).unwrap();
    let text = String::from_utf8_lossy(&std::fs::read(&path).unwrap()).into_owned();
    let tree = racelens_syntax::parse::parse_text(&text);
    let items = racelens_syntax::extract_items(&tree, &text);
    for f in &items.functions {
        if f.name.contains(std::env::args().nth(2).as_deref().unwrap_or("main")) {
            println!("{} {}..{}", f.name, f.start, f.end);
        }
    }
    println!("{} functions, {} errors", items.functions.len(), items.error_count);
}
