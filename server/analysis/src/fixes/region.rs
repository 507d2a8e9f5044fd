//! Where a lock goes: the statements around some accesses that a lock and
//! an unlock can bracket, and the edits that do it.
//!
//! A region is the smallest statement around each access, grown to the run
//! of neighbouring statements of the same block that touch the location.
//! Statements stay in their block (no braces are added around a run, so a
//! declaration keeps its scope); a lone `if`/loop body gets braces. Every
//! `return`, `break`, `continue` or `goto` that leaves the region unlocks
//! first; a returned value that reads the location is computed under the
//! lock into a temporary.

use super::syntax::*;
use super::FileEdit;
use racelens_syntax::Parsed;
use std::path::Path;
use tree_sitter::Node;

/// Neighbouring statements without calls that a run may bridge.
const MAX_BRIDGE: usize = 2;

/// The texts of the lock and unlock statements, with their semicolons.
#[derive(Clone, Debug)]
pub(super) struct LockText {
    pub lock: String,
    pub unlock: String,
}

/// Consecutive statements of one block, or one body that needs braces.
pub(super) struct Region<'t> {
    pub stmts: Vec<Node<'t>>,
    pub braced: bool,
}

impl Region<'_> {
    pub(super) fn start(&self) -> usize {
        self.stmts[0].start_byte()
    }
    pub(super) fn end(&self) -> usize {
        self.stmts[self.stmts.len() - 1].end_byte()
    }
}

/// The regions that cover `sites` (absolute ranges in one file). `touches`
/// are all accesses to the location, to grow runs; `None` when an access
/// is not inside a statement.
pub(super) fn regions<'t>(
    p: &'t Parsed,
    sites: &[(usize, usize)],
    touches: &[(usize, usize)],
) -> Option<Vec<Region<'t>>> {
    let mut stmts: Vec<(Node<'t>, bool)> = Vec::new();
    for &(s, e) in sites {
        let n = node_at(p, s, e)?;
        stmts.push(statement_around(n)?);
    }
    // An access inside another access's statement is covered by it.
    let outer: Vec<(Node<'t>, bool)> = stmts
        .iter()
        .copied()
        .filter(|(n, _)| {
            !stmts.iter().any(|(m, _)| {
                m.id() != n.id() && m.start_byte() <= n.start_byte() && n.end_byte() <= m.end_byte()
            })
        })
        .collect();
    let mut out: Vec<Region<'t>> = Vec::new();
    let mut seen = Vec::new();
    for (n, braced) in outer {
        if seen.contains(&n.id()) {
            continue;
        }
        seen.push(n.id());
        if braced {
            out.push(Region {
                stmts: vec![n],
                braced: true,
            });
            continue;
        }
        let Some(block) = n.parent() else { continue };
        let members = block_statements(block);
        let idx = members.iter().position(|m| m.id() == n.id())?;
        // Merge with an existing run of the same block when adjacent.
        let touching = |m: &Node| {
            touches
                .iter()
                .any(|&(s, e)| m.start_byte() <= s && e <= m.end_byte())
        };
        let (mut lo, mut hi) = (idx, idx);
        grow(&members, &mut lo, &mut hi, &touching);
        if let Some(r) = out
            .iter_mut()
            .find(|r| !r.braced && r.stmts[0].parent().map(|b| b.id()) == Some(block.id()))
        {
            let rlo = members.iter().position(|m| m.id() == r.stmts[0].id())?;
            let rhi = members
                .iter()
                .position(|m| m.id() == r.stmts[r.stmts.len() - 1].id())?;
            if lo <= rhi + 1 + MAX_BRIDGE
                && rlo <= hi + 1 + MAX_BRIDGE
                && bridgeable(&members, lo.min(rlo), hi.max(rhi), &touching)
            {
                r.stmts = members[lo.min(rlo)..=hi.max(rhi)].to_vec();
                continue;
            }
        }
        out.push(Region {
            stmts: members[lo..=hi].to_vec(),
            braced: false,
        });
    }
    // A run grown over a statement can swallow another access's region.
    let spans: Vec<(usize, usize)> = out.iter().map(|r| (r.start(), r.end())).collect();
    let mut k = 0;
    out.retain(|_| {
        let (s, e) = spans[k];
        k += 1;
        !spans
            .iter()
            .enumerate()
            .any(|(j, &(s2, e2))| j != k - 1 && s2 <= s && e <= e2 && (s2, e2) != (s, e))
    });
    out.sort_by_key(|r| r.start());
    Some(out)
}

/// The statements of a block, in order (comments and labels of `case` left out).
fn block_statements(block: Node) -> Vec<Node> {
    let value = block.child_by_field_name("value").map(|v| v.id());
    let mut cur = block.walk();
    block
        .named_children(&mut cur)
        .filter(|c| c.kind() != "comment" && Some(c.id()) != value)
        .collect()
}

/// Grows `lo..=hi` over neighbours that touch the location, bridging up
/// to [`MAX_BRIDGE`] plain statements between two that do.
fn grow(members: &[Node], lo: &mut usize, hi: &mut usize, touching: &dyn Fn(&Node) -> bool) {
    loop {
        let before = (*lo > 0)
            .then(|| {
                (1..=MAX_BRIDGE + 1).take_while(|k| *lo >= *k).find(|k| {
                    touching(&members[*lo - k]) && (1..*k).all(|j| plain(members[*lo - j]))
                })
            })
            .flatten();
        let after = (1..=MAX_BRIDGE + 1)
            .filter(|k| *hi + k < members.len())
            .find(|k| touching(&members[*hi + k]) && (1..*k).all(|j| plain(members[*hi + j])));
        match (before, after) {
            (None, None) => return,
            (b, a) => {
                if let Some(k) = b {
                    *lo -= k;
                }
                if let Some(k) = a {
                    *hi += k;
                }
            }
        }
    }
}

fn bridgeable(members: &[Node], lo: usize, hi: usize, touching: &dyn Fn(&Node) -> bool) -> bool {
    members[lo..=hi].iter().all(|m| touching(m) || plain(*m))
}

/// An expression statement or declaration without calls or jumps.
fn plain(n: Node) -> bool {
    matches!(n.kind(), "expression_statement" | "declaration")
        && !descendants(n).any(|d| d.kind() == "call_expression")
}

pub(super) fn descendants(n: Node) -> impl Iterator<Item = Node> {
    let mut stack = vec![n];
    std::iter::from_fn(move || {
        let x = stack.pop()?;
        let mut cur = x.walk();
        let kids: Vec<Node> = x.named_children(&mut cur).collect();
        stack.extend(kids.into_iter().rev());
        Some(x)
    })
}

/// Builds the edits that bracket `r` with the lock, or `None` when it
/// cannot be done safely (a label inside, which a jump could enter).
pub(super) fn guard_edits(
    p: &Parsed,
    file: &Path,
    r: &Region,
    lt: &LockText,
    touches: &[(usize, usize)],
    ret_type: &dyn Fn(Node) -> Option<String>,
) -> Option<Vec<FileEdit>> {
    let text = &*p.text;
    let inside = |n: Node| r.start() <= n.start_byte() && n.end_byte() <= r.end();
    let mut edits: Vec<FileEdit> = Vec::new();
    // Unlocks before jumps go after the lock in the list: at the same
    // offset, list order is text order.
    let mut jumps: Vec<FileEdit> = Vec::new();
    let edit = |start: usize, end: usize, new_text: String| FileEdit {
        file: file.to_path_buf(),
        start,
        end,
        new_text,
    };
    let last = r.stmts[r.stmts.len() - 1];
    let mut ends_in_jump = false;
    for s in &r.stmts {
        for d in descendants(*s) {
            match d.kind() {
                "labeled_statement" => return None,
                "case_statement" if !within_switch(d, &inside) => return None,
                "return_statement" | "break_statement" | "continue_statement"
                | "goto_statement"
                    if leaves(d, &inside) =>
                {
                    let is_last = d.id() == last.id();
                    ends_in_jump |= is_last;
                    jumps.extend(unlock_before_jump(
                        p, file, d, lt, touches, is_last, ret_type,
                    )?);
                }
                _ => {}
            }
        }
    }
    let first = r.stmts[0];
    if r.braced {
        let after: Vec<&str> = if ends_in_jump {
            Vec::new()
        } else {
            vec![lt.unlock.as_str()]
        };
        edits.extend(brace(text, file, first, &[lt.lock.as_str()], &after));
    } else {
        // Right after `unlock(m)`, or right before `lock(m)`: widen that
        // critical section instead of opening another one.
        let members = first.parent().map(block_statements).unwrap_or_default();
        let pos = |n: Node| members.iter().position(|m| m.id() == n.id());
        let prev = pos(first)
            .and_then(|i| i.checked_sub(1))
            .map(|i| members[i])
            .filter(|m| same_code(&text[m.byte_range()], &lt.unlock));
        let next = pos(last)
            .and_then(|i| members.get(i + 1))
            .copied()
            .filter(|m| same_code(&text[m.byte_range()], &lt.lock) && !ends_in_jump);
        if let Some(prev) = prev {
            edits.push(delete_statement(text, file, prev));
        } else {
            match indent_before(text, first.start_byte()) {
                Some(ind) => {
                    let ls = line_start(text, first.start_byte());
                    edits.push(edit(ls, ls, format!("{ind}{}\n", lt.lock)));
                }
                None => edits.push(edit(
                    first.start_byte(),
                    first.start_byte(),
                    format!("{} ", lt.lock),
                )),
            }
        }
        if let Some(next) = next {
            edits.push(delete_statement(text, file, next));
        } else if !ends_in_jump {
            let ind = line_indent(text, last.start_byte());
            match (
                indent_before(text, last.start_byte()),
                trivia_to_eol(text, last.end_byte()),
            ) {
                (Some(_), Some(eol)) => edits.push(edit(eol, eol, format!("\n{ind}{}", lt.unlock))),
                _ => edits.push(edit(
                    last.end_byte(),
                    last.end_byte(),
                    format!(" {}", lt.unlock),
                )),
            }
        }
    }
    edits.extend(jumps);
    edits.sort_by_key(|e| (e.start, e.end));
    Some(edits)
}

/// The same code up to blanks.
fn same_code(a: &str, b: &str) -> bool {
    let squash = |s: &str| s.chars().filter(|c| !c.is_whitespace()).collect::<String>();
    squash(a) == squash(b)
}

/// Removes a statement, with its line when it is alone on it.
fn delete_statement(text: &str, file: &Path, n: Node) -> FileEdit {
    let (start, end) = match (
        indent_before(text, n.start_byte()),
        text[n.end_byte()..].find('\n'),
    ) {
        (Some(_), Some(i)) if text[n.end_byte()..n.end_byte() + i].trim().is_empty() => {
            (line_start(text, n.start_byte()), n.end_byte() + i + 1)
        }
        _ => (n.start_byte(), n.end_byte()),
    };
    FileEdit {
        file: file.to_path_buf(),
        start,
        end,
        new_text: String::new(),
    }
}

/// Is a `case` label inside a `switch` that is itself inside the region?
fn within_switch(n: Node, inside: &dyn Fn(Node) -> bool) -> bool {
    let mut cur = n.parent();
    while let Some(p) = cur {
        if p.kind() == "switch_statement" {
            return inside(p);
        }
        cur = p.parent();
    }
    false
}

/// Does this jump leave the region?
fn leaves(j: Node, inside: &dyn Fn(Node) -> bool) -> bool {
    let loops: &[&str] = match j.kind() {
        "break_statement" => &[
            "for_statement",
            "while_statement",
            "do_statement",
            "switch_statement",
        ],
        "continue_statement" => &["for_statement", "while_statement", "do_statement"],
        _ => return true,
    };
    let mut cur = j.parent();
    while let Some(p) = cur {
        if loops.contains(&p.kind()) {
            return !inside(p);
        }
        cur = p.parent();
    }
    true
}

/// Unlocks before a jump that leaves the region. A returned value that
/// reads the location is first saved under the lock.
fn unlock_before_jump(
    p: &Parsed,
    file: &Path,
    j: Node,
    lt: &LockText,
    touches: &[(usize, usize)],
    last_in_block: bool,
    ret_type: &dyn Fn(Node) -> Option<String>,
) -> Option<Vec<FileEdit>> {
    let text = &*p.text;
    let edit = |start: usize, end: usize, new_text: String| FileEdit {
        file: file.to_path_buf(),
        start,
        end,
        new_text,
    };
    let value = (j.kind() == "return_statement")
        .then(|| j.named_child(0))
        .flatten()
        .filter(|v| v.kind() != "comment");
    let reads = value
        .map(|v| {
            touches
                .iter()
                .any(|&(s, e)| v.start_byte() <= s && e <= v.end_byte())
        })
        .unwrap_or(false);
    let in_block = j.parent().map(is_block).unwrap_or(false);
    let own_line = indent_before(text, j.start_byte());
    if reads {
        let v = value?;
        let ty = ret_type(j)?;
        let func_text = enclosing_function(j)
            .map(|f| &text[f.byte_range()])
            .unwrap_or(text);
        let tmp = (1..)
            .map(|k| {
                if k == 1 {
                    "result".to_string()
                } else {
                    format!("result{k}")
                }
            })
            .find(|n| !mentions(func_text, n))?;
        let decl = format!("{} = {};", declare(&ty, &tmp), &text[v.byte_range()]);
        let ret = format!("return {tmp};");
        return Some(vec![match (last_in_block, own_line) {
            (true, Some(ind)) => edit(
                j.start_byte(),
                j.end_byte(),
                format!("{decl}\n{ind}{}\n{ind}{ret}", lt.unlock),
            ),
            _ => edit(
                j.start_byte(),
                j.end_byte(),
                format!("{{ {decl} {} {ret} }}", lt.unlock),
            ),
        }]);
    }
    Some(vec![match (in_block, own_line) {
        (true, Some(ind)) => {
            let ls = line_start(text, j.start_byte());
            edit(ls, ls, format!("{ind}{}\n", lt.unlock))
        }
        (true, None) => edit(j.start_byte(), j.start_byte(), format!("{} ", lt.unlock)),
        (false, _) => return Some(brace(text, file, j, &[lt.unlock.as_str()], &[])),
    }])
}

/// Puts braces around a lone body statement, with `before` and `after`
/// statements inside: K&R style when the body has its own line, inline
/// otherwise.
fn brace(text: &str, file: &Path, body: Node, before: &[&str], after: &[&str]) -> Vec<FileEdit> {
    let edit = |start: usize, end: usize, new_text: String| FileEdit {
        file: file.to_path_buf(),
        start,
        end,
        new_text,
    };
    let own_line = indent_before(text, body.start_byte()).is_some();
    let mut prev = body.prev_sibling();
    while let Some(c) = prev.filter(|c| c.kind() == "comment") {
        prev = c.prev_sibling();
    }
    let head = prev.filter(|p| {
        let gap = text[p.end_byte()..line_start(text, body.start_byte()).max(p.end_byte())].trim();
        own_line
            && !text[p.end_byte()..body.start_byte()]
                .trim_start()
                .starts_with("/*")
            && (gap.is_empty() || trivia_to_eol(text, p.end_byte()).is_some())
    });
    match head {
        Some(prev) => {
            let inner = line_indent(text, body.start_byte());
            let outer = line_indent(text, prev.start_byte());
            let ls = line_start(text, body.start_byte());
            let at = trivia_to_eol(text, body.end_byte()).unwrap_or(body.end_byte());
            let pre: String = before.iter().map(|b| format!("{inner}{b}\n")).collect();
            let post: String = after.iter().map(|a| format!("\n{inner}{a}")).collect();
            vec![
                edit(prev.end_byte(), prev.end_byte(), " {".into()),
                edit(ls, ls, pre),
                edit(at, at, format!("{post}\n{outer}}}")),
            ]
        }
        None => {
            let pre: String = before.iter().map(|b| format!("{b} ")).collect();
            let post: String = after.iter().map(|a| format!(" {a}")).collect();
            vec![
                edit(body.start_byte(), body.start_byte(), format!("{{ {pre}")),
                edit(body.end_byte(), body.end_byte(), format!("{post} }}")),
            ]
        }
    }
}

/// `int x`, `char *x` from a type text and a name.
fn declare(ty: &str, name: &str) -> String {
    let ty = ty.trim();
    if ty.ends_with('*') {
        format!("{ty}{name}")
    } else {
        format!("{ty} {name}")
    }
}

pub(super) fn enclosing_function(mut n: Node) -> Option<Node> {
    loop {
        if n.kind() == "function_definition" {
            return Some(n);
        }
        n = n.parent()?;
    }
}

/// The declared return type of the function around `n`, as text: the
/// definition's text before its name, without storage classes.
pub(super) fn return_type(text: &str, n: Node) -> Option<String> {
    let def = enclosing_function(n)?;
    let mut d = def.child_by_field_name("declarator")?;
    for _ in 0..16 {
        if d.kind() == "function_declarator" {
            break;
        }
        d = d.child_by_field_name("declarator")?;
    }
    let name = d.child_by_field_name("declarator")?;
    let mut ty = text[def.start_byte()..name.start_byte()].trim().to_string();
    loop {
        let before = ty.clone();
        for w in [
            "static",
            "inline",
            "__inline__",
            "__inline",
            "extern",
            "_Noreturn",
        ] {
            if let Some(rest) = ty.strip_prefix(w) {
                if rest.starts_with(char::is_whitespace) {
                    ty = rest.trim_start().to_string();
                }
            }
        }
        if ty == before {
            break;
        }
    }
    let ok = !ty.is_empty() && ty != "void" && !ty.contains(['(', '\n', '#']);
    ok.then_some(ty)
}
