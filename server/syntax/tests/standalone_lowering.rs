//! A function lowered from its own text, parsed standalone (how a last
//! good version is lowered, `baseline.rs`), equals the same definition
//! lowered in its file. A difference makes a function that turns stale
//! while the user types look edited to the walk: a keystroke then walks
//! the program from scratch and changes its races (memcached's
//! `do_add_delta`, whose `#ifdef` arms open an `if` each, parsed only with
//! the file's recovery, and lowered to nothing alone).

use racelens_syntax::{
    for_each_function, lower_definition, lower_function, parse_text, MacroTable,
};
use std::path::{Path, PathBuf};

fn c_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    for e in rd.flatten() {
        let p = e.path();
        if p.is_dir() {
            c_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "c") {
            out.push(p);
        }
    }
}

fn differing(files: &[PathBuf]) -> (usize, Vec<String>) {
    let macros = MacroTable::default();
    let (mut total, mut bad) = (0, Vec::new());
    for p in files {
        let src = std::fs::read_to_string(p).unwrap_or_default();
        let tree = parse_text(&src);
        for_each_function(&tree, &src, &mut |def, text, offset| {
            total += 1;
            // The file's text, as the baseline keeps it (a recovered
            // definition's region text has its inactive arms blanked).
            let own = &src[offset + def.start_byte()..offset + def.end_byte()];
            // Known gap: a definition recovered from a region of the file
            // (another definition's errors) has that region's inactive
            // arms blanked, first arm kept; alone it may parse without
            // error, and the lowering then picks the arms of its
            // conditionals itself (memcached's proto_parser.c has such).
            if offset != 0 && !parse_text(own).root_node().has_error() {
                return;
            }
            if lower_definition(def, text, &macros) != lower_function(own, &macros) {
                bad.push(format!(
                    "{}: {}",
                    p.display(),
                    own.lines().next().unwrap_or("")
                ));
            }
        });
    }
    (total, bad)
}

#[test]
fn a_definition_whose_conditionals_need_recovery_lowers_alone_as_in_its_file() {
    let dir = std::env::temp_dir().join(format!("racelens-standalone-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("arms.c");
    std::fs::write(
        &file,
        "struct item { int nbytes, flags; };\nint hits;\nstatic int delta(struct item *it) {\n#ifdef EXTSTORE\n    if (it->nbytes <= 2 || (it->flags & 3) != 0) {\n#else\n    if (it->nbytes <= 2 || (it->flags & 1) != 0) {\n#endif\n        return 1;\n    }\n    hits++;\n    return 0;\n}\n",
    )
    .unwrap();
    let (total, bad) = differing(std::slice::from_ref(&file));
    let text = std::fs::read_to_string(&file).unwrap();
    let own = &text[text.find("static int delta").unwrap()..];
    let alone = lower_function(own, &MacroTable::default());
    std::fs::remove_dir_all(&dir).ok();
    assert_eq!((total, bad), (1, Vec::<String>::new()));
    assert_eq!(alone.params.len(), 1, "{alone:?}");
    assert!(!alone.body.is_empty());
}

/// Every definition of the real programs and projects in `../shared/bench`.
#[test]
fn every_benchmark_definition_lowers_alone_as_in_its_file() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/bench");
    let mut files = Vec::new();
    c_files(&root.join("realworld"), &mut files);
    c_files(&root.join("projects"), &mut files);
    assert!(files.len() > 60, "../shared/bench is missing");
    let (total, bad) = differing(&files);
    assert!(total > 10_000, "{total}");
    assert!(bad.is_empty(), "{} of {total} differ: {bad:#?}", bad.len());
}

/// An anonymous struct is named by its text, not its offset in the file:
/// a function declaring a local of such a type lowers the same after an
/// edit above it, and alone. (Named by offset, every edit above memcached's
/// `server_socket` changed its summary whenever the lowering cache missed,
/// and the walk ran from scratch: "several functions changed".)
#[test]
fn an_anonymous_struct_is_named_by_its_text_not_its_offset() {
    let fill = "static void fill(void) {\n    struct { int a; int b; } pair;\n    pair.a = 1;\n    m = pair.a;\n}\n";
    let before = format!("int n, m;\nstatic void bump(void) {{\n    n++;\n}}\n{fill}");
    let after = format!("int n, m;\nstatic void bump(void) {{\n    n++;\n    n--;\n}}\n{fill}");
    let macros = MacroTable::default();
    let lowered = |src: &str| {
        let tree = parse_text(src);
        let mut out = Vec::new();
        for_each_function(&tree, src, &mut |def, text, _| {
            if text[def.byte_range()].starts_with("static void fill") {
                out.push(lower_definition(def, text, &macros));
            }
        });
        out.pop().unwrap()
    };
    let (a, b) = (lowered(&before), lowered(&after));
    assert!(format!("{a:?}").contains("<anon#"), "{a:?}");
    assert_eq!(a, b);
    assert_eq!(a, lower_function(fill, &macros));
}
