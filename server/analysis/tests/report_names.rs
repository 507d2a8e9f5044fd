//! What a report names when two accesses share one expression: `gp[5] =
//! c` reads the pointer `gp` and writes the element it points to, and both
//! accesses carry the span of the whole expression. The report there is a
//! write, so it names the written object (`shared_text[5]`), not the
//! pointer read on the way, and lists the element's conflicts only: the
//! pointer's race with `gp = shared_ptr` is reported at that write.

use racelens_analysis::AnalysisHost;
use std::path::Path;

const PROGRAM: &str = "#include <pthread.h>\n\
    static char shared_text[64] = \"shared text\";\n\
    static char *shared_ptr = shared_text;\n\
    static char *gp;\n\
    static void *w(void *arg) {\n\
      gp = shared_ptr;\n\
      gp[5] = 'u';\n\
      return arg;\n\
    }\n\
    int main(void) {\n\
      pthread_t t[2];\n\
      pthread_create(&t[0], 0, w, 0);\n\
      pthread_create(&t[1], 0, w, 0);\n\
      pthread_join(t[0], 0);\n\
      pthread_join(t[1], 0);\n\
      return 0;\n\
    }\n";

#[test]
fn a_write_through_a_read_pointer_names_what_it_writes() {
    let mut host = AnalysisHost::default();
    let path = Path::new("/virtual/report_names.c");
    host.set_file_text(path, PROGRAM);
    let races = host.snapshot().races();
    let at = |needle: &str| PROGRAM.find(needle).unwrap() as u32;
    let report_at = |needle: &str| {
        races
            .iter()
            .find(|r| r.site.start as u32 == at(needle))
            .unwrap_or_else(|| panic!("no report at {needle}: {races:?}"))
    };
    let element = report_at("gp[5]");
    assert_eq!(element.var, "shared_text[5]", "{element:?}");
    assert_eq!(format!("{:?}", element.kind), "Write");
    // Its conflicts are the element's (the other thread's write), not
    // those of the pointer read on the way (`gp = shared_ptr`).
    assert!(
        element
            .conflicts
            .iter()
            .all(|c| c.site.start as u32 == at("gp[5]")),
        "{element:?}"
    );
    let pointer = report_at("gp = shared_ptr");
    assert_eq!(pointer.var, "gp");
    assert!(
        pointer
            .conflicts
            .iter()
            .any(|c| c.site.start as u32 == at("gp[5]")),
        "{pointer:?}"
    );
}
