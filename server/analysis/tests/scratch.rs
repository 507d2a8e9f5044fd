use racelens_analysis::*;
use std::path::Path;
#[test]
fn dump() {
    let src = std::fs::read_to_string("/tmp/rl/a.c").unwrap();
    let mut host = AnalysisHost::new(Config::default());
    let p = Path::new("/virtual/a.c");
    host.set_file_text(p, src.clone());
    let a = host.snapshot();
    for r in a.races() {
        println!("{} @{} {:?}", r.message(), &src[r.site.start..r.site.end], r.site.start);
        match racelens_analysis::explain::check(&a, &r) { racelens_analysis::Verdict::Witness(e) => print!("{}", e.text()), v => println!("  {:?}", v) }
    }
    for needle in std::env::var("HOVER").unwrap_or_default().split(',').filter(|s| !s.is_empty()) {
        let off = src.find(needle).unwrap();
        println!("--- hover {needle}\n{}", racelens_analysis::hover::hover(&a, p, off).unwrap_or("NONE".into()));
    }
}
