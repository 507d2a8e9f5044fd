//! Calling contexts that differ only in what a callee never looks at share
//! one walk of the callee.
//!
//! A function gets a bounded number of calling contexts; past that it is
//! reported incomplete and its accesses in further contexts are lost. Two
//! parts of the state used to split contexts for nothing: the heap objects
//! still private to the thread (each `malloc` before a call made a new
//! context of every callee), and the sites where an event loop registers its
//! own callback again. Both programs below call a function in 30 such
//! contexts, more than the budget.

use racelens_analysis::AnalysisHost;
use std::path::Path;

fn analyse(text: &str) -> (Vec<String>, Vec<String>) {
    let mut host = AnalysisHost::default();
    host.set_file_text(Path::new("/virtual/contexts.c"), text.to_string());
    let analysis = host.snapshot();
    let mut races: Vec<String> = analysis.races().iter().map(|r| r.message()).collect();
    races.sort();
    let incomplete = analysis
        .incomplete()
        .iter()
        .map(|i| i.reason.clone())
        .collect();
    (races, incomplete)
}

/// `main` allocates 30 objects, each followed by a call of `note` (whose
/// body is given), which touches none of them: the calls differ only in
/// which objects are still private to `main`, and which sites it has
/// allocated from.
fn allocations_between_calls(n: usize, note: &str) -> String {
    let mut s = format!(
        "#include <pthread.h>\n#include <stdlib.h>\n\nstruct item {{ int v; }};\nint hits;\n\n\
         void note(void) {{{note}}}\n\nvoid *worker(void *arg) {{ hits++; return 0; }}\n\n\
         int main(void) {{\n  pthread_t t;\n  pthread_create(&t, 0, worker, 0);\n",
    );
    for i in 0..n {
        s.push_str(&format!(
            "  struct item *p{i} = malloc(sizeof *p{i});\n  p{i}->v = {i};\n  note();\n"
        ));
    }
    s.push_str("  return 0;\n}\n");
    s
}

/// A callee that touches no heap object.
const NOTE: &str = " hits++; ";

/// A callee that allocates an object of its own (a logging buffer), which
/// it writes and frees.
const NOTE_ALLOCATING: &str =
    "\n  int *buf = malloc(sizeof *buf);\n  *buf = hits;\n  free(buf);\n  hits++;\n";

/// A callback handed to unknown code registers itself again at 30 places,
/// each followed by a call of `step`.
fn callback_registering_itself(n: usize) -> String {
    let mut s = String::from(
        "#include <pthread.h>\n\nextern void g_idle_add(void (*cb)(int));\nint state;\n\n\
         void step(void) { state++; }\n\nvoid on_event(int k) {\n",
    );
    for i in 0..n {
        s.push_str(&format!(
            "  if (k == {i}) g_idle_add(on_event);\n  step();\n"
        ));
    }
    s.push_str(
        "}\n\nvoid *worker(void *arg) { return 0; }\n\nint main(void) {\n  pthread_t t;\n  \
         pthread_create(&t, 0, worker, 0);\n  g_idle_add(on_event);\n  state = 1;\n  return 0;\n}\n",
    );
    s
}

#[test]
fn private_heap_objects_do_not_split_the_contexts_of_callees_that_never_touch_them() {
    let (races, incomplete) = analyse(&allocations_between_calls(30, NOTE));
    assert_eq!(incomplete, Vec::<String>::new());
    assert_eq!(
        races,
        vec![
            "data race on `hits`: write in thread `main` holding no lock".to_string(),
            "data race on `hits`: write in thread `worker` holding no lock".to_string(),
        ]
    );
}

#[test]
fn a_private_heap_object_a_callee_touches_still_splits_its_contexts() {
    // `touch` writes the object: private the first time, shared with the
    // worker (through its argument) the second.
    let text = "#include <pthread.h>\n#include <stdlib.h>\n\nstruct item { int v; };\n\n\
                void touch(struct item *o) { o->v = 1; }\n\n\
                void *worker(void *arg) { struct item *o = arg; o->v = 2; return 0; }\n\n\
                int main(void) {\n  pthread_t t;\n  struct item *p = malloc(sizeof *p);\n  \
                touch(p);\n  pthread_create(&t, 0, worker, p);\n  touch(p);\n  return 0;\n}\n";
    let (races, incomplete) = analyse(text);
    assert_eq!(incomplete, Vec::<String>::new());
    assert!(
        races.iter().any(|r| r.contains("write in thread `main`")),
        "the second call races with the worker: {races:?}"
    );
    assert!(
        races.iter().any(|r| r.contains("write in thread `worker`")),
        "{races:?}"
    );
}

#[test]
fn an_event_loop_registering_its_own_callback_does_not_split_contexts() {
    let (races, incomplete) = analyse(&callback_registering_itself(30));
    assert_eq!(incomplete, Vec::<String>::new());
    assert_eq!(
        races,
        vec![
            "data race on `state`: write in thread `main` holding no lock".to_string(),
            "data race on `state`: write in thread `on_event` holding no lock".to_string(),
        ]
    );
}

#[test]
fn heap_sites_allocated_before_a_call_do_not_split_the_contexts_of_an_allocating_callee() {
    let (races, incomplete) = analyse(&allocations_between_calls(30, NOTE_ALLOCATING));
    assert_eq!(incomplete, Vec::<String>::new());
    assert_eq!(
        races,
        vec![
            "data race on `hits`: read in thread `main` holding no lock".to_string(),
            "data race on `hits`: write in thread `main` holding no lock".to_string(),
            "data race on `hits`: write in thread `worker` holding no lock".to_string(),
        ]
    );
}
