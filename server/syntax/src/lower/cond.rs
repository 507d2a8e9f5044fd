//! Branch conditions: lowering a condition and deriving its [`Test`].
//!
//! A condition's calls are remembered in `Lowerer::cond_calls` only while
//! the condition is lowered (cleared before and after), so a [`Test`] can
//! name the call whose result it compares with zero.

use super::{uncast, unparen, Lowerer};
use crate::fields::Field;
use crate::ir::*;
use crate::items::{name, text};
use tree_sitter::Node;

impl<'s> Lowerer<'s> {
    /// Lowers a branch condition and derives its [`Test`].
    pub(super) fn condition(&mut self, c: Node, out: &mut Vec<Stmt>, depth: u32) -> Test {
        self.cond_calls.clear();
        let inner = unparen(c);
        self.value(inner, out, depth + 1);
        let test = self.test_of(inner, true, 0);
        self.cond_calls.clear();
        test
    }

    /// The [`Test`] of a condition (`positive`: as written, or negated).
    /// `NULL` counts as zero: no C library defines it otherwise.
    pub(super) fn test_of(&self, n: Node, positive: bool, depth: u32) -> Test {
        if depth > 8 {
            return Test::Other;
        }
        let n = unparen(n);
        match n.kind() {
            "call_expression" => match self.cond_calls.iter().find(|(id, _)| *id == n.id()) {
                Some(&(_, id)) => Test::CallZero {
                    id,
                    zero_on_true: !positive,
                },
                None => Test::Other,
            },
            // A cast keeps a value zero or nonzero (`(unsigned int) p`).
            "cast_expression" => match n.field("value") {
                Some(v) => self.test_of(v, positive, depth + 1),
                None => Test::Other,
            },
            "identifier" => Test::VarZero {
                var: name(n, self.src),
                zero_on_true: !positive,
            },
            // `(x = e)` in an `if` is the value assigned, which `x` holds
            // once the condition's own assignment ran (`if ((pid = fork())
            // == 0)`, `if ((rc = pthread_mutex_trylock(&m)) == 0)`).
            "assignment_expression"
                if self.if_condition
                    && n.field("operator").map(|o| text(o, self.src)) == Some("=") =>
            {
                match n.field("left").map(unparen) {
                    Some(l) if l.kind() == "identifier" => Test::VarZero {
                        var: name(l, self.src),
                        zero_on_true: !positive,
                    },
                    _ => Test::Other,
                }
            }
            // A member of a named object (`zconf.dryrun`, `cfg.opt.quiet`) is a
            // flag named by its chain; the walk forgets it when the object or
            // the member is written.
            "field_expression" => match flag_chain(n, self.src, 0) {
                Some(var) => Test::VarZero {
                    var: var.into(),
                    zero_on_true: !positive,
                },
                None => match arrow_chain(n, self.src) {
                    Some(chain) => Test::FieldsZero {
                        chains: vec![chain.into()],
                        zero_on_true: !positive,
                    },
                    None => Test::Other,
                },
            },
            "unary_expression" if n.field("operator").map(|o| text(o, self.src)) == Some("!") => {
                match n.field("argument") {
                    Some(a) => self.test_of(a, !positive, depth + 1),
                    None => Test::Other,
                }
            }
            "binary_expression" => {
                let op = n.field("operator").map(|o| text(o, self.src)).unwrap_or("");
                let (Some(l), Some(r)) = (n.field("left"), n.field("right")) else {
                    return Test::Other;
                };
                // `a && b`, `a || b` of member tests: all zero, or not.
                if op == "&&" || op == "||" {
                    let all_zero = (op == "&&") == positive;
                    let lt = self.test_of(l, positive, depth + 1);
                    let rt = self.test_of(r, positive, depth + 1);
                    return match (lt, rt) {
                        (
                            Test::FieldsZero {
                                chains: mut a,
                                zero_on_true: za,
                            },
                            Test::FieldsZero {
                                chains: b,
                                zero_on_true: zb,
                            },
                        ) if za == all_zero && zb == all_zero => {
                            a.extend(b);
                            a.sort();
                            a.dedup();
                            Test::FieldsZero {
                                chains: a,
                                zero_on_true: all_zero,
                            }
                        }
                        _ => Test::Other,
                    };
                }
                // `0`, `NULL`, and either under casts (`(void *) 0`,
                // `(unsigned int) ((T) 0)`): a null pointer constant; `0UL`
                // and the other integer suffixes are zero too.
                let zero = |x: Node| {
                    let t = text(uncast(x), self.src);
                    t.trim_end_matches(['u', 'U', 'l', 'L']) == "0" || t == "NULL"
                };
                let (subject, konst) = if zero(r) {
                    (l, true)
                } else if zero(l) {
                    (r, true)
                } else {
                    (l, false)
                };
                // `n > 0`, `0 < n`, `n >= 1`, `1 <= n` of a plain variable.
                let one = |x: Node| text(unparen(x), self.src) == "1";
                let positive_of = |x: Node| match unparen(x).kind() {
                    "identifier" if positive => Test::Positive {
                        var: name(unparen(x), self.src),
                    },
                    _ => Test::Other,
                };
                let pos = match op {
                    ">" if zero(r) => positive_of(l),
                    "<" if zero(l) => positive_of(r),
                    ">=" if one(r) => positive_of(l),
                    "<=" if one(l) => positive_of(r),
                    _ => Test::Other,
                };
                if pos != Test::Other {
                    return pos;
                }
                match op {
                    "==" if konst => self.test_of(subject, !positive, depth + 1),
                    "!=" if konst => self.test_of(subject, positive, depth + 1),
                    _ => self.compare(op, l, r, positive),
                }
            }
            _ => Test::Other,
        }
    }
}

impl<'s> Lowerer<'s> {
    /// `x op K` (or `K op x`) of a variable or flag chain `x` and an
    /// integer constant `K`: a [`Test::Compare`] that keeps whether the
    /// then-branch runs when `x` is zero. An order with a negative `K` is
    /// left out: against an unsigned `x` it converts to a large value.
    fn compare(&self, op: &str, l: Node, r: Node, positive: bool) -> Test {
        let (subject, k, op) = match (int_const(r, self.src), int_const(l, self.src)) {
            (Some(k), _) => (l, k, op),
            (None, Some(k)) => {
                let flipped = match op {
                    "<" => ">",
                    "<=" => ">=",
                    ">" => "<",
                    ">=" => "<=",
                    o => o,
                };
                (r, k, flipped)
            }
            _ => return Test::Other,
        };
        // A spin lock's exchange compared with the value it swaps in
        // (`while (atomic_exchange(&l, 1) == 1) ;`,
        // `__sync_lock_test_and_set(&l, 1) == 1`): the word held that value,
        // so the lock was taken, exactly when the result is nonzero, as long
        // as the word only ever holds zero and that value (as a lock word
        // does).
        if let Some(id) = self.exchange_of(subject, k) {
            if op == "==" || op == "!=" {
                return Test::CallZero {
                    id,
                    zero_on_true: (op == "!=") == positive,
                };
            }
        }
        let then_on_zero = match op {
            "==" => k == 0,
            "!=" => k != 0,
            "<" if k >= 0 => 0 < k,
            "<=" if k >= 0 => true,
            ">" if k >= 0 => false,
            ">=" if k >= 0 => k == 0,
            _ => return Test::Other,
        };
        let s = uncast(subject);
        let var = match s.kind() {
            "identifier" => name(s, self.src),
            "field_expression" => match flag_chain(s, self.src, 0) {
                Some(c) => c.into(),
                None => return Test::Other,
            },
            _ => return Test::Other,
        };
        let equal = match op {
            "==" => Some((k, positive)),
            "!=" => Some((k, !positive)),
            _ => None,
        };
        Test::Compare {
            var,
            then_on_zero: then_on_zero == positive,
            equal,
        }
    }
}

impl<'s> Lowerer<'s> {
    /// The id of call `n` of the condition when it is an exchange that
    /// swaps the nonzero constant `k` into a lock word
    /// (`atomic_exchange[_explicit](&l, k, ..)`, `__atomic_exchange_n`,
    /// `__sync_lock_test_and_set(&l, k)`) or a test-and-set (whose `k` is
    /// 1: `atomic_flag_test_and_set(&f) == 1`).
    fn exchange_of(&self, n: Node, k: i64) -> Option<u32> {
        let n = uncast(n);
        if n.kind() != "call_expression" || k == 0 {
            return None;
        }
        let &(_, id) = self.cond_calls.iter().find(|(x, _)| *x == n.id())?;
        let callee = n.field("function").map(|f| text(unparen(f), self.src))?;
        let args = n.field("arguments")?;
        let mut cursor = args.walk();
        let arg: Vec<Node> = args.named_children(&mut cursor).collect();
        let swapped = match callee {
            "atomic_exchange"
            | "atomic_exchange_explicit"
            | "__atomic_exchange_n"
            | "__sync_lock_test_and_set" => {
                let v = *arg.get(1)?;
                match text(uncast(v), self.src) {
                    "true" => Some(1),
                    _ => int_const(v, self.src),
                }
            }
            "atomic_flag_test_and_set"
            | "atomic_flag_test_and_set_explicit"
            | "__atomic_test_and_set" => Some(1),
            _ => None,
        }?;
        (swapped == k).then_some(id)
    }
}

/// The value of an integer constant under casts and parentheses (`1U`,
/// `0x10`, `-1`, `(unsigned int) 2`), or `None`.
pub(super) fn int_const(n: Node, src: &str) -> Option<i64> {
    let n = uncast(n);
    match n.kind() {
        "number_literal" => {
            let t = text(n, src).trim_end_matches(['u', 'U', 'l', 'L']);
            if let Some(h) = t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
                i64::from_str_radix(h, 16).ok()
            } else if t.len() > 1 && t.starts_with('0') {
                i64::from_str_radix(&t[1..], 8).ok()
            } else {
                t.parse().ok()
            }
        }
        "unary_expression" if n.field("operator").map(|o| text(o, src)) == Some("-") => {
            int_const(n.field("argument")?, src)?.checked_neg()
        }
        _ => None,
    }
}

/// `a.b.c` as text, for a chain of `.` members below an identifier (no
/// `->`, no index, no call).
fn flag_chain(n: Node, src: &str, depth: u32) -> Option<String> {
    let n = unparen(n);
    match n.kind() {
        "identifier" if depth > 0 => Some(text(n, src).to_string()),
        "field_expression" if depth < 8 => {
            if n.field("operator").map(|o| text(o, src)) != Some(".") {
                return None;
            }
            let base = flag_chain(n.field("argument")?, src, depth + 1)?;
            let field = n.field("field")?;
            Some(format!("{base}.{}", text(field, src)))
        }
        _ => None,
    }
}

/// `p->f` as text, for a member through `->` of a plain identifier.
fn arrow_chain(n: Node, src: &str) -> Option<String> {
    if n.field("operator").map(|o| text(o, src)) != Some("->") {
        return None;
    }
    let base = unparen(n.field("argument")?);
    if base.kind() != "identifier" {
        return None;
    }
    Some(format!(
        "{}->{}",
        text(base, src),
        text(n.field("field")?, src)
    ))
}
