//! Loops are walked to a fixpoint, and a loop whose first pass ends in its
//! head state is not walked a second time unless that pass changed what the
//! whole walk shares. These programs pin both sides: a quiet loop keeps every
//! access of its body, and a loop that creates a thread still makes that
//! thread repeated (two instances that race with each other).

use racelens_analysis::AnalysisHost;
use std::path::Path;

fn races(text: &str) -> Vec<String> {
    let mut host = AnalysisHost::default();
    host.set_file_text(Path::new("/virtual/loops.c"), text.to_string());
    let mut races: Vec<String> = host
        .snapshot()
        .races()
        .iter()
        .map(|r| {
            let line = text[..r.site.start].matches('\n').count() + 1;
            format!("{line}: {}", r.message())
        })
        .collect();
    races.sort();
    races
}

#[test]
fn a_quiet_loop_keeps_the_accesses_of_its_body() {
    let text = "#include <pthread.h>\n\
                int total;\n\
                void *worker(void *arg) { total = 1; return 0; }\n\
                int main(void) {\n\
                  pthread_t t;\n\
                  pthread_create(&t, 0, worker, 0);\n\
                  for (int i = 0; i < 10; i++) {\n\
                    total += i;\n\
                  }\n\
                  pthread_join(t, 0);\n\
                  return 0;\n\
                }\n";
    let r = races(text);
    assert!(
        r.iter()
            .any(|m| m.starts_with("8: ") && m.contains("total")),
        "{r:#?}"
    );
    assert!(
        r.iter()
            .any(|m| m.starts_with("3: ") && m.contains("total")),
        "{r:#?}"
    );
}

#[test]
fn a_thread_created_in_a_loop_is_repeated() {
    let text = "#include <pthread.h>\n\
                int hits;\n\
                void *worker(void *arg) { hits++; return 0; }\n\
                int main(void) {\n\
                  pthread_t t[4];\n\
                  for (int i = 0; i < 4; i++) {\n\
                    pthread_create(&t[i], 0, worker, 0);\n\
                  }\n\
                  return 0;\n\
                }\n";
    let r = races(text);
    assert!(
        r.iter().any(|m| m.starts_with("3: ") && m.contains("hits")),
        "{r:#?}"
    );
}

#[test]
fn a_lock_held_on_every_pass_still_guards() {
    let text = "#include <pthread.h>\n\
                int total;\n\
                pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;\n\
                void *worker(void *arg) {\n\
                  pthread_mutex_lock(&m); total = 1; pthread_mutex_unlock(&m);\n\
                  return 0;\n\
                }\n\
                int main(void) {\n\
                  pthread_t t;\n\
                  pthread_create(&t, 0, worker, 0);\n\
                  for (int i = 0; i < 10; i++) {\n\
                    pthread_mutex_lock(&m);\n\
                    total += i;\n\
                    pthread_mutex_unlock(&m);\n\
                  }\n\
                  return 0;\n\
                }\n";
    assert_eq!(races(text), Vec::<String>::new());
}
