//! Unit tests of the conditional evaluation.

use super::*;

#[derive(Default)]
struct Files(Vec<(PathBuf, Arc<str>)>);

impl Sources for Files {
    fn find(&mut self, spec: &str, _quoted: bool, _from: &Path) -> Option<(PathBuf, Arc<str>)> {
        self.0.iter().find(|(p, _)| p.ends_with(spec)).cloned()
    }
}

fn run(text: &str, flags: &Flags, headers: &[(&str, &str)]) -> (String, UnitConditions) {
    let mut files = Files(
        headers
            .iter()
            .map(|(p, t)| (PathBuf::from(format!("/w/{p}")), Arc::from(*t)))
            .collect(),
    );
    let c = evaluate(Path::new("/w/main.c"), text, flags, &mut files);
    let view = apply(text, &c.files[0].1.blank);
    (view, c)
}

fn kept(view: &str) -> Vec<&str> {
    view.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect()
}

#[test]
fn if_zero_and_else() {
    let src = "int a;\n#if 0\nint b;\n#else\nint c;\n#endif\n";
    let (v, c) = run(src, &Flags::default(), &[]);
    assert_eq!(kept(&v), ["int a;", "int c;"]);
    assert_eq!(v.len(), src.len());
    assert_eq!((c.files[0].1.decided, c.files[0].1.undecided), (1, 0));
}

#[test]
fn command_line_define_selects_branch() {
    let src = "#ifdef THREADSAFE\nlock();\n#endif\nx++;\n";
    let (v, _) = run(src, &Flags::default(), &[]);
    assert_eq!(kept(&v), ["x++;"]);
    let flags = Flags {
        macros: vec![("THREADSAFE".into(), MacroOp::Define(None))],
        ..Flags::default()
    };
    let (v, _) = run(src, &flags, &[]);
    assert_eq!(kept(&v), ["lock();", "x++;"]);
}

#[test]
fn header_defines_count_and_guards_work() {
    let h = "#ifndef CFG_H\n#define CFG_H\n#define USE_LOCKS 1\n#endif\n";
    let src = "#include \"cfg.h\"\n#include \"cfg.h\"\n#if USE_LOCKS\nlock();\n#else\nnolock();\n#endif\n";
    let (v, c) = run(src, &Flags::default(), &[("cfg.h", h)]);
    assert_eq!(
        kept(&v),
        ["#include \"cfg.h\"", "#include \"cfg.h\"", "lock();"]
    );
    let hb = c.of(Path::new("/w/cfg.h")).unwrap();
    assert_eq!(
        apply(h, &hb.blank).trim(),
        "#define CFG_H\n#define USE_LOCKS 1"
    );
}

#[test]
fn undecided_conditions_keep_every_branch() {
    let src = "#include <pthread.h>\n#ifdef PTHREAD_MUTEX_RECURSIVE_NP\na();\n#else\nb();\n#endif\n#ifdef __GLIBC__\nc();\n#endif\n";
    let (v, c) = run(src, &Flags::default(), &[]);
    assert_eq!(v, src);
    let b = &c.files[0].1;
    assert_eq!((b.decided, b.undecided), (0, 2));
    assert_eq!(b.first_undecided.as_ref().unwrap().0, 1);
}

#[test]
fn missing_project_header_makes_names_undecided() {
    let src =
        "#include \"config.h\"\n#ifdef HAVE_EPOLL\na();\n#endif\n#ifdef _WIN32\nw();\n#endif\n";
    let (v, c) = run(src, &Flags::default(), &[]);
    assert_eq!(
        kept(&v),
        [
            "#include \"config.h\"",
            "#ifdef HAVE_EPOLL",
            "a();",
            "#endif"
        ]
    );
    assert_eq!(c.missing, ["config.h"]);
}

#[test]
fn define_in_undecided_branch_is_unknown() {
    let src = "#ifdef __USE_X\n#define MODE 1\n#endif\n#if MODE\na();\n#endif\n#define K 2\n#if K == 2\nb();\n#endif\n";
    let (v, c) = run(src, &Flags::default(), &[]);
    assert!(v.contains("a();") && v.contains("#if MODE"));
    assert!(v.contains("b();") && !v.contains("#if K"));
    assert_eq!(c.files[0].1.undecided, 2);
}

#[test]
fn nested_and_elif_chains() {
    let src = "#define V 3\n#if V == 1\none();\n#elif V == 3\n# if defined(V) && V > 2\nthree();\n# endif\n#else\nother();\n#endif\n";
    let (v, _) = run(src, &Flags::default(), &[]);
    assert_eq!(kept(&v), ["#define V 3", "three();"]);
}

#[test]
fn comments_and_continuations() {
    let src = "/*\n#if 0\n*/\n#if 1 /* on */ && \\\n  0\nx();\n#endif\ny();\n";
    let (v, _) = run(src, &Flags::default(), &[]);
    assert_eq!(kept(&v), ["/*", "#if 0", "*/", "y();"]);
}

#[test]
fn std_flag_sets_version_and_platforms_are_false() {
    let src = "#if __STDC_VERSION__ >= 201112L\nc11();\n#endif\n#ifdef _WIN32\nwin();\n#endif\n#ifdef __linux__\nlin();\n#endif\n";
    let flags = Flags {
        std: Some("c99".into()),
        ..Flags::default()
    };
    let (v, _) = run(src, &flags, &[]);
    assert_eq!(kept(&v), ["lin();"]);
    let (v, _) = run(src, &Flags::default(), &[]);
    assert_eq!(kept(&v), ["c11();", "lin();"]);
}

/// A conditional nested in a branch that is not compiled goes whole, even
/// when its own condition could not be decided: a kept `#if` whose `#endif`
/// went would leave the view with a conditional that never closes (pigz's
/// `#ifdef PIGZ_DEBUG` / `#  if defined(__APPLE__)` / ... / `#  endif`).
#[test]
fn undecided_chain_inside_an_inactive_branch_goes_whole() {
    let src = "#ifdef DEBUG_BUILD\n#  if defined(__APPLE__)\nmac();\n#  elif defined(__linux)\nlinux();\n#  else\nother();\n#  endif\n#endif\nint main(void) { return 0; }\n";
    let (v, c) = run(src, &Flags::default(), &[]);
    assert_eq!(kept(&v), ["int main(void) { return 0; }"]);
    assert_eq!(v.len(), src.len());
    assert_eq!((c.files[0].1.decided, c.files[0].1.undecided), (1, 0));
}
