//! SARIF 2.1.0 output: one result per racy access, with the conflicting
//! accesses as `relatedLocations`, the confidence as a property and a
//! stable fingerprint in `partialFingerprints`. URIs are relative to
//! `%SRCROOT%` (set in `originalUriBaseIds`) where the file lies below it.
//! Suppressed races carry `suppressions`; notices (syntax errors, skipped
//! inputs, analyses cut short) go to `invocations[0].toolExecutionNotifications`,
//! never to `results`. With `--explain`, the schedule that reaches the race
//! is the result's `codeFlows`: one `threadFlow` per thread instance, whose
//! locations carry a global `executionOrder`.

use crate::check::Finding;
use crate::fingerprint;
use crate::notices::{Kind, Notice};
use crate::render::Sources;
use racelens_analysis::{Confidence, Explanation, SiteRef};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};

/// Where the documentation of the rules lives.
const DOCS: &str = "https://github.com/racelens/racelens/blob/main/docs/output.md";

/// A file URI, percent-encoded (`file:///a%20b/c.c`); a folder's ends in `/`.
pub fn file_uri(path: &Path) -> String {
    format!("file://{}", encode(&path.to_string_lossy()))
}

fn encode(s: &str) -> String {
    let mut out = String::new();
    for b in s.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'/' | b'-' | b'_' | b'.' | b'~' => {
                out.push(b as char)
            }
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

/// The run's facts that are not results.
pub struct Run<'a> {
    /// `%SRCROOT%`: absolute, canonical.
    pub root: PathBuf,
    pub notices: &'a [Notice],
    pub command_line: Vec<String>,
    pub working_dir: PathBuf,
    pub start: std::time::SystemTime,
    pub exit_code: i32,
    /// Mark results `baselineState: new` (a baseline was given).
    pub baseline: bool,
}

struct Ctx<'a> {
    src: &'a Sources,
    root: &'a Path,
}

impl Ctx<'_> {
    fn artifact(&self, file: &Path) -> Value {
        match file.strip_prefix(self.root) {
            Ok(rel) if !rel.as_os_str().is_empty() => {
                let rel: Vec<String> = rel
                    .components()
                    .map(|c| encode(&c.as_os_str().to_string_lossy()))
                    .collect();
                json!({ "uri": rel.join("/"), "uriBaseId": "SRCROOT" })
            }
            _ => json!({ "uri": file_uri(file) }),
        }
    }

    fn region(&self, file: &Path, start: usize, end: usize) -> Value {
        let (l1, c1) = self.src.position(file, start);
        let (l2, c2) = self.src.position(file, end);
        json!({ "startLine": l1 + 1, "startColumn": c1 + 1, "endLine": l2 + 1, "endColumn": c2 + 1 })
    }

    fn location(&self, site: &SiteRef) -> Value {
        json!({ "physicalLocation": { "artifactLocation": self.artifact(&site.file), "region": self.region(&site.file, site.start, site.end) } })
    }
}

fn rules() -> Value {
    json!([{
        "id": "data-race",
        "name": "DataRace",
        "shortDescription": { "text": "Data race between threads" },
        "fullDescription": { "text": "Two threads access the same memory location without a common lock, at least one access writes, and nothing orders them. The result of such a program is undefined in C11." },
        "help": {
            "text": "A data race happens when two threads access the same memory location concurrently, at least one of them writes, and no lock or other synchronisation orders the accesses. The C standard makes the behaviour of such a program undefined: updates get lost, readers see torn or stale values, and the compiler may transform the code in surprising ways.\n\nTo fix one: protect every access to the variable with the same mutex (pthread_mutex_lock/unlock or mtx_lock/unlock), make the variable _Atomic or access it with atomic_* functions, or order the accesses (create the thread after the write, join it before the read). If the race is intended, suppress it with `// racelens: ignore[data-race]` on the access's line or the line above, or on the variable's declaration.",
            "markdown": "A **data race** happens when two threads access the same memory location concurrently, at least one of them writes, and no lock or other synchronisation orders the accesses. The C standard makes the behaviour of such a program undefined: updates get lost, readers see torn or stale values, and the compiler may transform the code in surprising ways.\n\n**How to fix one**\n\n- Protect every access to the variable with the same mutex (`pthread_mutex_lock`/`pthread_mutex_unlock`, `mtx_lock`/`mtx_unlock`).\n- Make the variable `_Atomic`, or access it with `atomic_*` functions.\n- Order the accesses: create the thread after the write, join it before the read.\n\nIf the race is intended, suppress it with `// racelens: ignore[data-race]` on the access's line or the line above, or on the variable's declaration. See [the output documentation](https://github.com/racelens/racelens/blob/main/docs/output.md#data-race)."
        },
        "helpUri": format!("{DOCS}#data-race"),
        "defaultConfiguration": { "level": "warning" },
        "properties": { "tags": ["concurrency", "correctness"], "precision": "high", "problem.severity": "warning" }
    }])
}

fn notification_descriptors() -> Value {
    Value::Array(
        ALL_KINDS
            .iter()
            .map(|k| json!({ "id": k.id(), "shortDescription": { "text": k.description() }, "helpUri": format!("{DOCS}#notices"), "defaultConfiguration": { "level": k.level() } }))
            .collect(),
    )
}

/// Every notice kind, in descriptor order.
const ALL_KINDS: [Kind; 9] = [
    Kind::SyntaxError,
    Kind::NotC,
    Kind::Incomplete,
    Kind::LostMain,
    Kind::LostFunction,
    Kind::Build,
    Kind::Link,
    Kind::Library,
    Kind::Conditional,
];

fn notification(ctx: &Ctx, n: &Notice) -> Value {
    let index = ALL_KINDS.iter().position(|k| *k == n.kind).unwrap_or(0);
    let mut v = json!({
        "level": n.kind.level(),
        "message": { "text": n.message },
        "descriptor": { "id": n.kind.id(), "index": index },
    });
    if !n.file.as_os_str().is_empty() {
        let mut phys = json!({ "artifactLocation": ctx.artifact(&n.file) });
        if let Some((s, e)) = n.span {
            phys["region"] = ctx.region(&n.file, s, e);
        }
        v["locations"] = json!([{ "physicalLocation": phys }]);
    }
    v
}

/// Writes the SARIF log, one result at a time so that huge result sets do
/// not have to fit in memory as one JSON tree.
pub fn render(
    findings: &[&Finding],
    src: &Sources,
    run: &Run,
    out: &mut dyn std::io::Write,
) -> std::io::Result<()> {
    let ctx = Ctx {
        src,
        root: &run.root,
    };
    let driver = json!({
        "name": "racelens",
        "version": env!("CARGO_PKG_VERSION"),
        "semanticVersion": env!("CARGO_PKG_VERSION"),
        "informationUri": "https://github.com/racelens/racelens",
        "rules": rules(),
        "notifications": notification_descriptors(),
    });
    write!(out, "{{\n  \"$schema\": \"https://json.schemastore.org/sarif-2.1.0.json\",\n  \"version\": \"2.1.0\",\n  \"runs\": [{{\n    \"tool\": {{ \"driver\": ")?;
    serde_json::to_writer(&mut *out, &driver)?;
    let mut root_uri = file_uri(&run.root);
    if !root_uri.ends_with('/') {
        root_uri.push('/');
    }
    write!(out, " }},\n    \"originalUriBaseIds\": ")?;
    serde_json::to_writer(&mut *out, &json!({ "SRCROOT": { "uri": root_uri } }))?;
    write!(
        out,
        ",\n    \"columnKind\": \"utf16CodeUnits\",\n    \"results\": ["
    )?;
    let mut first = true;
    for f in findings {
        let r = &f.report;
        let mut related: Vec<Value> = Vec::new();
        for (i, c) in r.conflicts.iter().enumerate() {
            let mut l = ctx.location(&c.site);
            l["id"] = json!(i);
            l["message"] = json!({ "text": format!("conflicting {} in thread `{}`, holding {}", racelens_analysis::report::kind_word(c.kind), c.thread, racelens_analysis::report::locks_text(&c.locks)) });
            related.push(l);
        }
        for cr in crate::render::creations(r) {
            let mut l = ctx.location(&cr.site);
            l["id"] = json!(related.len());
            l["message"] = json!({ "text": format!("{} here", cr.note()) });
            related.push(l);
        }
        let confidence = if r.confidence == Confidence::Must {
            "must"
        } else {
            "may"
        };
        let mut v = json!({
            "ruleId": "data-race",
            "ruleIndex": 0,
            "level": if r.confidence == Confidence::Must { "warning" } else { "note" },
            "message": { "text": r.message() },
            "locations": [ctx.location(&r.site)],
            "relatedLocations": related,
            "partialFingerprints": { fingerprint::KEY: f.fingerprint },
            "properties": { "confidence": confidence, "variable": r.var, "access": racelens_analysis::report::kind_word(r.kind), "function": r.site.func, "threads": r.threads, "locks": r.locks, "refutedBy": r.refuted, "programs": r.programs, "unresolved": r.unresolved, "speculative": r.speculative, "lockArray": r.lock_array },
        });
        if f.suppressed {
            v["suppressions"] = json!([{ "kind": "inSource" }]);
        }
        if run.baseline {
            v["baselineState"] = json!("new");
        }
        if let Some(e) = &f.schedule {
            v["codeFlows"] = code_flows(&ctx, e);
        }
        out.write_all(if first { b"\n      " } else { b",\n      " })?;
        first = false;
        serde_json::to_writer(&mut *out, &v)?;
    }
    let notifications: Vec<Value> = run.notices.iter().map(|n| notification(&ctx, n)).collect();
    let mut wd = file_uri(&run.working_dir);
    if !wd.ends_with('/') {
        wd.push('/');
    }
    let invocation = json!({
        "commandLine": run.command_line.iter().map(|a| shell_quote(a)).collect::<Vec<_>>().join(" "),
        "arguments": run.command_line.get(1..).unwrap_or(&[]),
        "workingDirectory": { "uri": wd },
        "executionSuccessful": run.exit_code != 2,
        "exitCode": run.exit_code,
        "startTimeUtc": humantime::format_rfc3339_millis(run.start).to_string(),
        "endTimeUtc": humantime::format_rfc3339_millis(std::time::SystemTime::now()).to_string(),
        "toolExecutionNotifications": notifications,
    });
    write!(out, "\n    ],\n    \"invocations\": [")?;
    serde_json::to_writer(&mut *out, &invocation)?;
    write!(out, "]\n  }}]\n}}\n")
}

/// An argument as a POSIX shell would need it.
fn shell_quote(a: &str) -> String {
    if !a.is_empty()
        && a.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_./=:,+@%".contains(&b))
    {
        a.to_string()
    } else {
        format!("'{}'", a.replace('\'', "'\\''"))
    }
}

/// A schedule as one `codeFlow`: a `threadFlow` per thread instance in the
/// order they first act, each step numbered by `executionOrder`.
fn code_flows(ctx: &Ctx, e: &Explanation) -> Value {
    let mut threads: Vec<(&str, Vec<Value>)> = Vec::new();
    for (n, step) in e.steps.iter().enumerate() {
        let mut loc = ctx.location(&step.site);
        loc["message"] = json!({ "text": step.message });
        let tfl = json!({ "location": loc, "executionOrder": n + 1 });
        match threads.iter_mut().find(|(t, _)| *t == step.thread) {
            Some((_, list)) => list.push(tfl),
            None => threads.push((&step.thread, vec![tfl])),
        }
    }
    let flows: Vec<Value> = threads
        .into_iter()
        .map(|(t, locations)| {
            json!({ "id": t.trim_matches('`').replace("` #", "#"), "message": { "text": format!("thread {t}") }, "locations": locations })
        })
        .collect();
    json!([{ "message": { "text": "a schedule that reaches the race" }, "threadFlows": flows }])
}
