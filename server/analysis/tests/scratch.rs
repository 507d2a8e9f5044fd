use racelens_analysis::*;
use std::path::Path;
#[test]
fn dump() {
    let only = std::env::var("ONLY").unwrap_or_default();
    let mut ents: Vec<_> = std::fs::read_dir("../../fixtures").unwrap().map(|e| e.unwrap().path()).filter(|p| p.extension().map(|e| e == "c").unwrap_or(false)).collect();
    ents.sort();
    for p in ents {
        if !only.is_empty() && !p.to_string_lossy().contains(&only) { continue; }
        let src = std::fs::read_to_string(&p).unwrap();
        let mut host = AnalysisHost::new(Config::default());
        host.set_file_text(Path::new("/virtual/a.c"), src.clone());
        let a = host.snapshot();
        println!("== {}", p.display());
        for r in a.races() {
            let line = src[..r.site.start].matches('\n').count() + 1;
            let fixes = racelens_analysis::fixes::quick_fixes(&a, &r);
            println!("  L{line} `{}` {} fixes", r.var, fixes.len());
            for f in fixes {
                println!("    - {}{}", f.title, if f.is_preferred { " [preferred]" } else { "" });
                if std::env::var("EDITS").is_ok() {
                    for e in &f.edits { println!("        {}..{} {:?} (was {:?})", e.start, e.end, e.new_text, &src[e.start..e.end]); }
                }
            }
        }
    }
}
