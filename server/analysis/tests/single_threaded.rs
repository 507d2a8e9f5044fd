//! A program that can never start a thread has no races, and its walk is
//! skipped. Without any thread creation, only a function shaped like a
//! thread entry (`void *f(void *)`) and used as a value can become a
//! thread, when unknown code calls it back. Merely defining one (a
//! `void *xrealloc(void *)` helper) must not cost a walk of the program.

use racelens_analysis::AnalysisHost;
use std::path::Path;

fn analyse(text: &str) -> (Vec<String>, usize) {
    let mut host = AnalysisHost::default();
    host.set_file_text(Path::new("/virtual/single.c"), text.to_string());
    let analysis = host.snapshot();
    let mut races: Vec<String> = analysis.races().iter().map(|r| r.message()).collect();
    races.sort();
    (races, analysis.incomplete().len())
}

/// A helper shaped like a thread entry, called directly from 40 places with
/// distinct private heap objects, which would exceed the context budget if
/// the program were walked. `use_helper` decides how `main` refers to it.
fn program(use_helper: &str) -> String {
    let mut s = String::from(
        "#include <stdlib.h>\n\nextern void on_idle(void *(*cb)(void *));\nint counter;\n\n\
         void *touch(void *p) {\n  counter++;\n  return p;\n}\n\nint main(void) {\n",
    );
    for i in 0..40 {
        s.push_str(&format!(
            "  int *p{i} = malloc(sizeof *p{i});\n  *p{i} = {i};\n  counter += {i};\n  touch(p{i});\n  \
             if (counter > {i}) touch(&counter);\n"
        ));
    }
    s.push_str(use_helper);
    s.push_str("  counter = 0;\n  return 0;\n}\n");
    s
}

#[test]
fn a_program_without_threads_is_not_walked() {
    let (races, incomplete) = analyse(&program(""));
    assert_eq!(races, Vec::<String>::new());
    // A walk of `main` would run out of contexts for `touch`.
    assert_eq!(incomplete, 0);
}

#[test]
fn an_entry_shaped_function_handed_to_unknown_code_is_a_thread() {
    let (races, _) = analyse(&program("  on_idle(touch);\n"));
    assert!(
        races
            .iter()
            .any(|r| r.starts_with("data race on `counter`: write in thread `touch`")),
        "{races:?}"
    );
}
