use racelens_analysis::*;
use std::time::Instant;
#[test]
fn prof() {
    let path = std::path::PathBuf::from(std::env::var("F").unwrap());
    let text = String::from_utf8_lossy(&std::fs::read(&path).unwrap()).into_owned();
    let mut host = AnalysisHost::new(Config::default());
    host.set_file_text(&path, text.clone());
    let t = Instant::now(); let a = host.snapshot(); let r = a.races(); println!("cold races {} in {:?}", r.len(), t.elapsed());
    let t = Instant::now(); let r = a.races(); println!("warm races {} in {:?}", r.len(), t.elapsed());
    drop(a);
    let mut pos = 0; for _ in 0..200 { pos = text[pos+1..].find('{').unwrap() + pos + 1; }
    let semi = text[pos..].find(';').unwrap() + pos;
    let mut t2 = text.clone(); t2.insert(semi, ' ');
    host.db().enable_logging();
    let t = Instant::now(); host.set_file_text(&path, t2); println!("set_file_text (full parse) {:?}", t.elapsed());
    let a = host.snapshot();
    let t = Instant::now(); let _ = racelens_analysis::db::file_items(a.db(), a.file(&path).unwrap()); println!("file_items {:?}", t.elapsed());
    let t = Instant::now(); let _ = racelens_analysis::races::thread_analysis(a.db(), a.workspace()); println!("edit thread_analysis {:?}", t.elapsed());
    let t = Instant::now(); let _ = racelens_analysis::races::locations(a.db(), a.workspace()); println!("locations {:?}", t.elapsed());
    let t = Instant::now(); let r = a.races(); println!("edit races {} in {:?}", r.len(), t.elapsed());
    let log = host.db().take_log();
    let mut counts = std::collections::BTreeMap::new();
    for l in &log { *counts.entry(l.split('(').next().unwrap().to_string()).or_insert(0) += 1; }
    println!("{counts:?}");
    let t = Instant::now(); let i = a.incomplete(); println!("incomplete {} {:?}", i.len(), t.elapsed());
}
