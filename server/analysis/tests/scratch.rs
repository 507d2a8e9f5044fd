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
#[test]
fn show() {
    let only = std::env::var("SHOW").unwrap_or_default();
    if only.is_empty() { return; }
    let src = std::fs::read_to_string(if only.starts_with("/") { only.clone() } else { format!("../../fixtures/{only}") }).unwrap();
    let mut host = AnalysisHost::new(Config::default());
    host.set_file_text(Path::new("/virtual/a.c"), src.clone());
    let a = host.snapshot();
    for r in a.races() {
        let line = src[..r.site.start].matches('\n').count() + 1;
        for f in racelens_analysis::fixes::quick_fixes(&a, &r) {
            let mut v: Vec<(usize, &racelens_analysis::FileEdit)> = f.edits.iter().enumerate().collect();
            v.sort_by(|a, b| (b.1.start, b.0).cmp(&(a.1.start, a.0)));
            let mut out = src.clone();
            for (_, e) in v { out.replace_range(e.start..e.end, &e.new_text); }
            // print changed region lines
            let (a_lines, b_lines): (Vec<&str>, Vec<&str>) = (src.lines().collect(), out.lines().collect());
            let pre = a_lines.iter().zip(&b_lines).take_while(|(x, y)| x == y).count();
            let suf = a_lines.iter().rev().zip(b_lines.iter().rev()).take_while(|(x, y)| x == y).count();
            println!("--- L{line} {} ---", f.title);
            for l in &b_lines[pre.saturating_sub(1)..(b_lines.len() - suf + 1).min(b_lines.len())] { println!("  | {l}"); }
        }
    }
}
