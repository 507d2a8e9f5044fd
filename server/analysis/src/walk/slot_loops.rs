//! The creating loop of a per-thread slot, read from the creator's text
//! alone (see `slots.rs`): which counting loop around a creation call
//! hands the counter over, whether it retries a failed creation, whether
//! the counter is stored into the element before the call (in the same
//! iteration, or by a numbering loop just before), and the stride of a
//! slice a counting loop's bound names.
//!
//! Owns no state; every answer is a function of the statements given.
//! Invariant: a loop is recognised only when its counter takes each value
//! of its range once (`Stmt::Loop::var`, which the lowering sets only when
//! the body does not assign it).

use super::uncast;
use crate::facts::{member_tag, SlotArg};
use crate::visit::{visit_calls, visit_stmts};
use racelens_syntax::{AccessKind, Expr, FnIr, Name, Stmt, Test};

/// `x`, `x.f`, `x.f.g`: a counter as a counting loop names it
/// (`Stmt::Loop::var`).
pub(super) fn counter_of(e: &Expr) -> Option<String> {
    match e {
        Expr::Var(x) => Some(x.to_string()),
        Expr::Field {
            base,
            field,
            arrow: false,
        } => Some(format!("{}.{field}", counter_of(uncast(base))?)),
        _ => None,
    }
}

/// Does `e` take the address of `root` or of a part of it?
pub(super) fn takes_address_of(e: &Expr, root: &str) -> bool {
    match e {
        Expr::AddrOf(x) => {
            counter_of(uncast(x)).is_some_and(|c| c.split('.').next() == Some(root))
                || takes_address_of(x, root)
        }
        Expr::Field { base, .. } | Expr::Deref(base) | Expr::Offset(base) => {
            takes_address_of(base, root)
        }
        Expr::Index { base, .. } => takes_address_of(base, root),
        Expr::Cast { value, .. } => takes_address_of(value, root),
        Expr::Choice(xs) => xs.iter().any(|x| takes_address_of(x, root)),
        Expr::Init(xs) => xs.iter().any(|(_, x)| takes_address_of(x, root)),
        _ => false,
    }
}

/// Do `a` and `b` (`o.cur_host`, `o`) name overlapping parts of one
/// variable: one is the other or a member path within it?
pub(super) fn overlaps(a: &str, b: &str) -> bool {
    let within = |x: &str, y: &str| x == y || x.starts_with(&format!("{y}."));
    within(a, b) || within(b, a)
}

/// The statement lists a statement holds (its condition's, its branches',
/// its body's, its arms'), or `None` for one that holds none.
fn parts_of(s: &Stmt) -> Option<Vec<&[Stmt]>> {
    Some(match s {
        Stmt::If {
            cond, then, els, ..
        } => vec![cond, then, els],
        Stmt::Loop { cond, body, .. } => vec![cond, body],
        Stmt::Switch { cond, arms, .. } => {
            let mut v: Vec<&[Stmt]> = vec![cond];
            v.extend(arms.iter().map(|a| &a[..]));
            v
        }
        _ => return None,
    })
}

/// The loops of `stmts` around the call with id `call`, outermost first.
pub(super) fn loops_around<'s>(stmts: &'s [Stmt], call: u32, out: &mut Vec<&'s Stmt>) -> bool {
    for s in stmts {
        if matches!(s, Stmt::Call(c) if c.id == call) {
            return true;
        }
        let Some(parts) = parts_of(s) else {
            continue;
        };
        let is_loop = matches!(s, Stmt::Loop { .. });
        if is_loop {
            out.push(s);
        }
        if parts.iter().any(|p| loops_around(p, call, out)) {
            return true;
        }
        if is_loop {
            out.pop();
        }
    }
    false
}

/// Is `l` a loop that retries the creation call `call` until it succeeds
/// (`while (1) { r = pthread_create(..); if (r == 0) break; sleep(1); }`,
/// smtprc's shape)? An endless loop whose body, at its top level, makes
/// the call and then leaves the loop when the result (or a local assigned
/// from it, through casts) is zero, with only plain statements between:
/// each round that creates a thread is the last, so the loop creates at
/// most one thread per round of the loop around it.
fn retries(l: &Stmt, call: u32) -> bool {
    let Stmt::Loop {
        body,
        infinite: true,
        ..
    } = l
    else {
        return false;
    };
    let Some(at) = body
        .iter()
        .position(|s| matches!(s, Stmt::Call(c) if c.id == call))
    else {
        return false;
    };
    let mut holders: Vec<&Name> = Vec::new();
    for s in &body[at + 1..] {
        match s {
            Stmt::Assign {
                lhs: Expr::Var(x),
                rhs,
            } => {
                let from_result = match uncast(rhs) {
                    Expr::CallResult(id) => *id == call,
                    Expr::Var(y) => holders.contains(&y),
                    _ => false,
                };
                holders.retain(|h| *h != x);
                if from_result {
                    holders.push(x);
                }
            }
            Stmt::Access(_) | Stmt::Decl(_) => {}
            Stmt::If {
                cond, test, then, ..
            } => {
                let on_zero = match test {
                    Test::CallZero {
                        id,
                        zero_on_true: true,
                    } => *id == call,
                    Test::VarZero {
                        var,
                        zero_on_true: true,
                    } => holders.contains(&var),
                    _ => false,
                };
                let plain = cond
                    .iter()
                    .all(|s| matches!(s, Stmt::Access(_) | Stmt::Assign { .. }));
                return on_zero && plain && matches!(&then[..], [Stmt::Break]);
            }
            _ => return false,
        }
    }
    false
}

/// The counting loop around the creation call `call`, past the loops
/// that retry the call (see [`retries`]), with how many it passed.
pub(super) fn creating_loop(stmts: &[Stmt], call: u32) -> Option<(&Stmt, usize)> {
    let mut chain = Vec::new();
    if !loops_around(stmts, call, &mut chain) {
        return None;
    }
    let mut skipped = 0;
    while let Some(l) = chain.pop() {
        if retries(l, call) {
            skipped += 1;
            continue;
        }
        return Some((l, skipped));
    }
    None
}

/// Where `body` stores the counter `v` into the element `A[v]` (of the
/// array `base`) before the call `call`, in pre-order: `A[v] = v` (the
/// element holds it: `Stored`) or `A[v].f = v` (`t->f = v` through a local
/// alias `t` of the element: its member does, `Member`). The first such
/// store decides.
pub(super) fn stores_counter_before(
    body: &[Stmt],
    base: &Expr,
    v: &Name,
    aliases: &[Name],
    call: u32,
) -> Option<SlotArg> {
    let element =
        |e: &Expr| matches!(e, Expr::Index { base: b, var: Some(x), .. } if x == v && **b == *base);
    first_store_before(body, v, call, |lhs| match lhs {
        e if element(e) => Some(SlotArg::Stored),
        Expr::Field {
            base: b,
            field,
            arrow: false,
        } if element(b) => Some(SlotArg::Member(member_tag(field))),
        Expr::Field {
            base: b,
            field,
            arrow: true,
        } if matches!(uncast(b), Expr::Var(t) if aliases.contains(t)) => {
            Some(SlotArg::Member(member_tag(field)))
        }
        _ => None,
    })
}

/// The statements and the position of the innermost loop of `stmts`
/// around the call with id `call`.
fn block_of_loop(stmts: &[Stmt], call: u32) -> Option<(&[Stmt], usize)> {
    for (i, s) in stmts.iter().enumerate() {
        let Some(parts) = parts_of(s) else {
            continue;
        };
        for part in &parts {
            if let Some(found) = block_of_loop(part, call) {
                return Some(found);
            }
        }
        if matches!(s, Stmt::Loop { .. }) {
            let mut yes = false;
            for part in &parts {
                visit_calls(part, &mut |c| yes |= c.id == call);
            }
            if yes {
                return Some((stmts, i));
            }
        }
    }
    None
}

/// The number stored by a loop of its own before the creation loop around
/// call `call` (`for (i = 0; i < n; i++) t[i].id = i;` then `for (i = 0; i
/// < n; i++) create(&t[i].th, .., &t[i])`): the counting loop just before
/// it in the same block (only resets of the two counters, `i = 0;`, between),
/// over the same range, stores its counter into member `f` of the element
/// of `base` it indexes (`A[w].f = w`, a statement of its body itself, not
/// inside a branch, in a body no round of which leaves early), and neither
/// loop stores into a member named `f` otherwise. Each element then holds
/// its own index when its thread is created: [`SlotArg::Member`].
pub(super) fn stored_by_earlier_loop(fn_body: &[Stmt], call: u32, base: &Expr) -> Option<SlotArg> {
    let (block, at) = block_of_loop(fn_body, call)?;
    let Stmt::Loop {
        bound: Some(range),
        var: Some(v),
        body: create_body,
        ..
    } = &block[at]
    else {
        return None;
    };
    let stores_member = |stmts: &[Stmt], f: &Name| {
        let mut n = 0;
        visit_stmts(stmts, &mut |s| {
            if let Stmt::Assign {
                lhs: Expr::Field { field, .. },
                ..
            } = s
            {
                n += u32::from(field == f);
            }
        });
        n
    };
    // The counters reset between the two loops (`i = 0;`).
    let mut reset: Vec<&Name> = Vec::new();
    for s in block[..at].iter().rev() {
        match s {
            Stmt::Assign {
                lhs: Expr::Var(x),
                rhs,
            } if matches!(uncast(rhs), Expr::Int(_)) => reset.push(x),
            Stmt::Access(a) if a.kind == AccessKind::Write && matches!(&a.place, Expr::Var(_)) => {
                if let Expr::Var(x) = &a.place {
                    reset.push(x);
                }
            }
            Stmt::Loop {
                var: Some(w),
                bound: Some(r),
                body,
                ..
            } if r == range && reset.iter().all(|x| *x == v || *x == w) => {
                let field = body.iter().find_map(|st| match st {
                    Stmt::Assign {
                        lhs:
                            Expr::Field {
                                base: b,
                                field,
                                arrow: false,
                            },
                        rhs,
                    } if matches!(&**b, Expr::Index { base: a, var: Some(x), .. }
                            if x == w && **a == *base)
                        && matches!(uncast(rhs), Expr::Var(y) if y == w) =>
                    {
                        Some(field)
                    }
                    _ => None,
                })?;
                // Every round reaches the store: no round leaves early.
                let mut leaves = false;
                visit_stmts(body, &mut |st| {
                    leaves |= matches!(
                        st,
                        Stmt::Break | Stmt::Continue | Stmt::Return { .. } | Stmt::Goto(_)
                    );
                });
                return (!leaves
                    && stores_member(body, field) == 1
                    && stores_member(create_body, field) == 0)
                    .then(|| SlotArg::Member(member_tag(field)));
            }
            _ => return None,
        }
    }
    None
}

/// How the first assignment of the counter `v` before the creation call
/// `call` in `body` stores it, as `place` reads its left-hand side (the
/// first one `place` recognises decides).
pub(super) fn first_store_before(
    body: &[Stmt],
    v: &Name,
    call: u32,
    place: impl Fn(&Expr) -> Option<SlotArg>,
) -> Option<SlotArg> {
    let mut stored = None;
    let mut before = true;
    visit_stmts(body, &mut |s| match s {
        Stmt::Call(c) if c.id == call => before = false,
        Stmt::Assign { lhs, rhs }
            if before && stored.is_none() && matches!(uncast(rhs), Expr::Var(y) if y == v) =>
        {
            stored = place(lhs);
        }
        _ => {}
    });
    stored
}

/// How many statements of `ir` assign the variable `x` as a whole.
pub(super) fn assignments_of(ir: &FnIr, x: &Name) -> u32 {
    let mut n = 0;
    visit_stmts(&ir.body, &mut |s| {
        n += matches!(s, Stmt::Assign { lhs: Expr::Var(y), .. } if y == x) as u32;
    });
    n
}

/// The stride of a slice loop's range `LO<HI` over the own number `x`:
/// `x*K<x*K+L` (or `K*x`, `(x+1)*K`) with constants `0 < L <= K`.
pub(super) fn slice_stride(bound: &str, x: &str) -> Option<u32> {
    let (lo, hi) = bound.split_once('<')?;
    let k: i64 = lo
        .strip_prefix(&format!("{x}*"))
        .or_else(|| lo.strip_suffix(&format!("*{x}")))?
        .parse()
        .ok()?;
    if k <= 0 || k > u32::MAX as i64 {
        return None;
    }
    let len = if hi == format!("({x}+1)*{k}") || hi == format!("{k}*({x}+1)") {
        k
    } else {
        let rest = hi
            .strip_prefix(&format!("{lo}+"))
            .or_else(|| hi.strip_suffix(&format!("+{lo}")))?;
        rest.parse::<i64>().ok()?
    };
    (len > 0 && len <= k).then_some(k as u32)
}
