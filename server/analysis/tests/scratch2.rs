use racelens_analysis::*;
use std::path::Path;
#[test]
fn all() {
    let only = std::env::var("ONLY").unwrap_or_default();
    let mut ents: Vec<_> = std::fs::read_dir("../../fixtures").unwrap().map(|e| e.unwrap().path()).filter(|p| p.extension().map(|e| e == "c").unwrap_or(false)).collect();
    ents.sort();
    for p in ents {
        if !only.is_empty() && !p.to_string_lossy().contains(&only) { continue; }
        let src = std::fs::read_to_string(&p).unwrap();
        let mut host = AnalysisHost::new(Config::default());
        let vp = Path::new("/virtual/a.c");
        host.set_file_text(vp, src.clone());
        let a = host.snapshot();
        let t = std::time::Instant::now();
        let races = a.races();
        println!("== {} ({} races)", p.display(), races.len());
        for r in races {
            let line = src[..r.site.start].matches('\n').count() + 1;
            let lt = src.lines().nth(line - 1).unwrap_or("");
            let t0 = std::time::Instant::now();
            let v = racelens_analysis::explain::check(&a, &r);
            let d = t0.elapsed();
            let vs = match &v { Verdict::Witness(e) => format!("witness {} steps", e.steps.len()), v => format!("{v:?}") };
            println!("  L{line} {:?} `{}` [{}] -> {vs} ({:?})", r.kind, r.var, lt.trim(), d);
            if std::env::var("TEXT").is_ok() { if let Verdict::Witness(e) = &v { print!("{}", e.text()); } }
        }
        let _ = t;
    }
}
