//! Stable fingerprints of race reports, for SARIF `partialFingerprints`
//! and baselines.
//!
//! A fingerprint hashes what identifies a race independently of where the
//! code sits in the file: the rule, the variable, the access kind, the
//! function and the whitespace-normalised text of the access and of its
//! source line. Line numbers and file paths are left out, so an unrelated
//! edit above, or running from another folder, keeps every fingerprint.
//! Reports that hash alike are numbered in source order (`…:1`, `…:2`),
//! as GitHub's own `primaryLocationLineHash` does.

use crate::render::Sources;
use racelens_analysis::RaceReport;
use sha2::{Digest, Sha256};
use std::collections::HashMap;

/// The key in `partialFingerprints`.
pub const KEY: &str = "racelens/v1";

/// Whitespace runs collapsed to one space, ends trimmed.
fn normalise(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn hash(r: &RaceReport, src: &Sources) -> String {
    let text = src.text(&r.site.file).unwrap_or("");
    let start = r.site.start.min(text.len());
    let end = r.site.end.clamp(start, text.len());
    let access = text.get(start..end).unwrap_or("");
    let line_start = text[..start].rfind('\n').map_or(0, |i| i + 1);
    let line_end = text[start..].find('\n').map_or(text.len(), |i| start + i);
    let line = text.get(line_start..line_end).unwrap_or("");
    let mut h = Sha256::new();
    for part in [
        "data-race",
        &r.var,
        racelens_analysis::report::kind_word(r.kind),
        &r.site.func,
        &normalise(access),
        &normalise(line),
    ] {
        h.update(part.as_bytes());
        h.update([0]);
    }
    h.finalize()[..8]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// The fingerprint of each report, in the order given.
pub fn fingerprints(reports: &[&RaceReport], src: &Sources) -> Vec<String> {
    let hashes: Vec<String> = reports.iter().map(|r| hash(r, src)).collect();
    // Number equal hashes in source order (file, then offset).
    let mut order: Vec<usize> = (0..reports.len()).collect();
    order.sort_by(|&a, &b| {
        let (ra, rb) = (reports[a], reports[b]);
        (&ra.site.file, ra.site.start, ra.site.end).cmp(&(
            &rb.site.file,
            rb.site.start,
            rb.site.end,
        ))
    });
    let mut seen: HashMap<&str, usize> = HashMap::new();
    let mut out = vec![String::new(); reports.len()];
    for i in order {
        let n = seen.entry(&hashes[i]).or_insert(0);
        *n += 1;
        out[i] = format!("{}:{}", hashes[i], n);
    }
    out
}
