use racelens_analysis::*;
use std::path::Path;
#[test]
fn dump() {
    let src = std::fs::read_to_string("/tmp/rl/a.c").unwrap();
    let mut host = AnalysisHost::new(Config::default());
    host.set_file_text(Path::new("/virtual/a.c"), src.clone());
    let a = host.snapshot();
    for r in a.races() {
        println!("{:?} {} {:?}", r.site, &src[r.site.start..r.site.end], r);
    }
    let db = a.db();
    let ws = a.workspace();
    let ta = racelens_analysis::races::thread_analysis(db, ws);
    println!("{:#?}", ta.table.threads);
    for s in &ta.table.sites { println!("site {:?} {:?} {:?}", s.func.name(db), s.call, s.span); }
    for f in ws.files(db) {
        for fid in racelens_analysis::db::file_functions(db, ws, *f) {
            let s = racelens_analysis::db::function_summary(db, *fid);
            println!("fn {} {:#?} {:?}", fid.name(db), s.ir.body, s.models);
        }
    }
}
