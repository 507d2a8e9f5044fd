use racelens_analysis::*;
use std::path::Path;
#[test]
fn stress() {
    let src = std::fs::read_to_string("/tmp/rl/a.c").unwrap();
    let mut host = AnalysisHost::new(Config::default());
    host.set_file_text(Path::new("/virtual/a.c"), src.clone());
    let a = host.snapshot();
    for r in a.races() {
        let line = src[..r.site.start].matches('\n').count() + 1;
        let t = std::time::Instant::now();
        let v = racelens_analysis::explain::check(&a, &r);
        let vs = match &v { Verdict::Witness(e) => format!("witness {} steps", e.steps.len()), v => format!("{v:?}") };
        println!("L{line} `{}` {vs} {:?}", r.var, t.elapsed());
        let t = std::time::Instant::now();
        let n = racelens_analysis::fixes::quick_fixes(&a, &r).len();
        println!("   {n} fixes {:?}", t.elapsed());
    }
}
