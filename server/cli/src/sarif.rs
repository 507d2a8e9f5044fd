//! SARIF 2.1.0 output: one result per racy access, with the conflicting
//! accesses as `relatedLocations` and the confidence as a property. With
//! `--explain`, the schedule that reaches the race is the result's
//! `codeFlows`: one `threadFlow` per thread instance, whose locations carry
//! a global `executionOrder`.

use crate::render::Sources;
use racelens_analysis::{Confidence, Explanation, RaceReport, SiteRef};
use serde_json::{json, Value};

pub fn file_uri(path: &std::path::Path) -> String {
    let s = path.to_string_lossy();
    let mut out = String::from("file://");
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

fn region(src: &Sources, site: &SiteRef) -> Value {
    let (l1, c1) = src.position(&site.file, site.start);
    let (l2, c2) = src.position(&site.file, site.end);
    json!({ "startLine": l1 + 1, "startColumn": c1 + 1, "endLine": l2 + 1, "endColumn": c2 + 1 })
}

fn location(src: &Sources, site: &SiteRef) -> Value {
    json!({ "physicalLocation": { "artifactLocation": { "uri": file_uri(&site.file) }, "region": region(src, site) } })
}

/// Writes the SARIF log, one result at a time so that huge result sets do
/// not have to fit in memory as one JSON tree.
pub fn render(
    reports: &[RaceReport],
    schedules: &[Option<Explanation>],
    incomplete: &[racelens_analysis::Incomplete],
    src: &Sources,
    out: &mut dyn std::io::Write,
) -> std::io::Result<()> {
    let driver = json!({
        "name": "racelens",
        "version": env!("CARGO_PKG_VERSION"),
        "informationUri": "https://github.com/racelens/racelens",
        "rules": [
            { "id": "data-race", "shortDescription": { "text": "Data race between threads" },
              "fullDescription": { "text": "Two threads access the same memory location without a common lock, at least one access writes, and nothing orders them." } },
            { "id": "analysis-incomplete", "shortDescription": { "text": "Analysis stopped by a budget" } }
        ]
    });
    write!(out, "{{\n  \"$schema\": \"https://json.schemastore.org/sarif-2.1.0.json\",\n  \"version\": \"2.1.0\",\n  \"runs\": [{{\n    \"tool\": {{ \"driver\": ")?;
    serde_json::to_writer(&mut *out, &driver)?;
    write!(
        out,
        " }},\n    \"columnKind\": \"utf16CodeUnits\",\n    \"results\": ["
    )?;
    let mut first = true;
    for (i, r) in reports.iter().enumerate() {
        let mut related: Vec<Value> = Vec::new();
        for (i, c) in r.conflicts.iter().enumerate() {
            let mut l = location(src, &c.site);
            l["id"] = json!(i);
            l["message"] = json!({ "text": format!("conflicting {} in thread `{}`, holding {}", racelens_analysis::report::kind_word(c.kind), c.thread, racelens_analysis::report::locks_text(&c.locks)) });
            related.push(l);
        }
        for cr in &r.creations {
            let mut l = location(src, &cr.site);
            l["id"] = json!(related.len());
            l["message"] = json!({ "text": format!("thread `{}` is created here", cr.thread) });
            related.push(l);
        }
        let confidence = if r.confidence == Confidence::Must {
            "must"
        } else {
            "may"
        };
        let v = json!({
            "ruleId": "data-race",
            "level": if r.confidence == Confidence::Must { "warning" } else { "note" },
            "message": { "text": r.message() },
            "locations": [location(src, &r.site)],
            "relatedLocations": related,
            "properties": { "confidence": confidence, "variable": r.var, "access": racelens_analysis::report::kind_word(r.kind), "threads": r.threads, "locks": r.locks, "refutedBy": r.refuted },
        });
        let mut v = v;
        if let Some(Some(e)) = schedules.get(i) {
            v["codeFlows"] = code_flows(src, e);
        }
        out.write_all(if first { b"\n      " } else { b",\n      " })?;
        first = false;
        serde_json::to_writer(&mut *out, &v)?;
    }
    for inc in incomplete {
        let v = json!({
            "ruleId": "analysis-incomplete",
            "level": "note",
            "message": { "text": format!("analysis incomplete for `{}`: {}", inc.site.func, inc.reason) },
            "locations": [location(src, &inc.site)],
        });
        out.write_all(if first { b"\n      " } else { b",\n      " })?;
        first = false;
        serde_json::to_writer(&mut *out, &v)?;
    }
    write!(out, "\n    ]\n  }}]\n}}\n")
}

/// A schedule as one `codeFlow`: a `threadFlow` per thread instance in the
/// order they first act, each step numbered by `executionOrder`.
fn code_flows(src: &Sources, e: &Explanation) -> Value {
    let mut threads: Vec<(&str, Vec<Value>)> = Vec::new();
    for (n, step) in e.steps.iter().enumerate() {
        let mut loc = location(src, &step.site);
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
