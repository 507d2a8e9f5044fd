//! Moving every span of a lowered function through a position map.
//!
//! The analysis keeps showing a function's last good IR while its current
//! text has syntax errors (analysis `baseline.rs`); this puts that IR's
//! spans where its text lies now. The map is applied to each start and end
//! alone, so it should be monotone to keep spans non-empty in order.

use crate::ir::{Call, FnIr, LocalDecl, Span, Stmt};

/// `ir` with every span moved by `map`.
pub fn respan(ir: &FnIr, map: &dyn Fn(u32) -> u32) -> FnIr {
    let mut out = ir.clone();
    let span = |s: &mut Span| {
        s.start = map(s.start);
        s.end = map(s.end).max(s.start);
    };
    for p in &mut out.params {
        decl(p, &span);
    }
    stmts(&mut out.body, &span);
    for d in &mut out.decrements {
        span(d);
    }
    for a in &mut out.build_arms {
        span(&mut a.range);
    }
    for (_, at) in &mut out.address_at {
        *at = map(*at);
    }
    out
}

fn decl(d: &mut LocalDecl, span: &dyn Fn(&mut Span)) {
    span(&mut d.span);
}

fn call(c: &mut Call, span: &dyn Fn(&mut Span)) {
    span(&mut c.span);
    span(&mut c.stmt_span);
}

fn stmts(body: &mut [Stmt], span: &dyn Fn(&mut Span)) {
    crate::ir::visit_stmts_mut(body, &mut |s| match s {
        Stmt::Access(a) => span(&mut a.span),
        Stmt::Call(c) => call(c, span),
        Stmt::Decl(d) => decl(d, span),
        Stmt::Return { span: s, .. } => span(s),
        Stmt::If { .. }
        | Stmt::Loop { .. }
        | Stmt::Switch { .. }
        | Stmt::Assign { .. }
        | Stmt::Break
        | Stmt::Continue
        | Stmt::Goto(_)
        | Stmt::Label(_) => {}
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{lower_function, MacroTable};

    #[test]
    fn every_span_moves() {
        let src = "void f(int *p) { int x; *p = 1; g(x); if (x) { x = 2; } return; }";
        let ir = lower_function(src, &MacroTable::default());
        let moved = respan(&ir, &|x| x + 100);
        let before = format!("{ir:?}");
        let after = format!("{moved:?}");
        assert_ne!(before, after);
        let back = respan(&moved, &|x| x - 100);
        assert_eq!(back, ir);
    }

    #[test]
    fn decrements_move_with_their_accesses() {
        let src = "void f(void) { n--; m -= 1; }";
        let ir = lower_function(src, &MacroTable::default());
        assert_eq!(ir.decrements.len(), 2);
        let moved = respan(&ir, &|x| x + 7);
        let writes: Vec<Span> = moved
            .body
            .iter()
            .filter_map(|s| match s {
                Stmt::Access(a) if a.kind == crate::ir::AccessKind::Write => Some(a.span),
                _ => None,
            })
            .collect();
        assert_eq!(moved.decrements, writes);
    }
}
