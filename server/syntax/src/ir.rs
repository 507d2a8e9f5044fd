//! The concurrency IR: what a function body means for data races.
//!
//! A function is lowered to a structured tree of [`Stmt`]s that keeps only
//! memory accesses, assignments (for points-to), calls and control flow.
//! Lock and thread operations are ordinary calls here; the analysis layer
//! decides what a callee means from its configuration. Every span is a byte
//! range relative to the start of the function definition, so that editing one
//! function does not change the IR of any other.

use std::sync::Arc;

/// Interned-by-value identifier text.
pub type Name = Arc<str>;

/// A byte range relative to the start of the enclosing function.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct Span {
    pub start: u32,
    pub end: u32,
}

impl Span {
    pub fn new(start: usize, end: usize) -> Self {
        Span {
            start: start as u32,
            end: end as u32,
        }
    }
}

/// A value or place expression, reduced to what alias and access analysis need.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Expr {
    /// A variable, parameter, global or function name.
    Var(Name),
    /// `base.field` (`arrow == false`) or `base->field`.
    Field {
        base: Box<Expr>,
        field: Name,
        arrow: bool,
    },
    /// `base[index]`; `index` is `Some` only for integer constants, `var`
    /// names a plain variable index (`a[i]`), `affine` describes an index
    /// `x * K + y` (both `None` then).
    Index {
        base: Box<Expr>,
        index: Option<i64>,
        var: Option<Name>,
        affine: Option<Box<Affine>>,
    },
    /// `*e`.
    Deref(Box<Expr>),
    /// `&e`.
    AddrOf(Box<Expr>),
    /// `p + k`, `p - k`, `p++`: the same object, unknown offset.
    Offset(Box<Expr>),
    /// `(T *) e`; the type name is kept for type-based resolution, with the
    /// number of `*` the cast spells (`(T **) e` has 2; a pointer typedef's
    /// own are added when the type is resolved).
    Cast {
        ty: Option<Name>,
        pointer: u8,
        value: Box<Expr>,
    },
    /// The result of the call with this id in the same function.
    CallResult(u32),
    /// An integer constant.
    Int(i64),
    /// A string literal.
    Str,
    /// `c ? a : b`: either value.
    Choice(Vec<Expr>),
    /// A struct initializer list of a local (`struct job j = {fn, .arg = p}`):
    /// each element with the member its designator names, or `None` for one
    /// placed by position (its index), after no designator. Elements placed
    /// after a designator are left out.
    Init(Vec<(Option<Name>, Expr)>),
    /// Anything else (arithmetic, comparisons, ...).
    Other,
}

/// An index `x * K + y` (`K * x + y`, `y + x * K`, `x * K`): a plain
/// variable `x` (or a member `x->f` read through a plain pointer variable)
/// scaled by a positive integer constant `K`, plus a plain variable, an
/// integer constant or nothing; a lone member `x->f` is `x->f * 1`. Kept
/// apart from other unknown indexes so that per-thread ranges
/// (`a[i * 10 + j]` for `j` in `[0, 10)`, `a[d->id]`) can be told apart;
/// to every other analysis the index is unknown.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Affine {
    pub scaled: Name,
    /// `f` when the scaled term is the member `scaled->f`.
    pub member: Option<Name>,
    pub k: i64,
    /// `K` as written (`10`, `N` for a macro constant), without spaces: a
    /// counting loop's range names it so.
    pub k_text: Name,
    pub offset: AffineOffset,
}

/// The added part of an [`Affine`] index.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum AffineOffset {
    None,
    Int(i64),
    Var(Name),
}

/// Read or write.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum AccessKind {
    Read,
    Write,
}

/// One memory access to the object denoted by `place`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Access {
    pub place: Expr,
    pub kind: AccessKind,
    pub span: Span,
}

/// Who is called.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Callee {
    Direct(Name),
    Indirect(Expr),
}

/// A call. Reads of its arguments are emitted as separate accesses before it.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Call {
    pub id: u32,
    pub callee: Callee,
    pub args: Vec<Expr>,
    pub span: Span,
    /// Span of the whole statement containing the call (for quick fixes).
    pub stmt_span: Span,
}

/// What a branch condition tests, as far as trylock handling needs.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Test {
    /// The then-branch runs when the result of call `id` is zero iff `zero_on_true`.
    CallZero { id: u32, zero_on_true: bool },
    /// The then-branch runs when variable `var` is zero iff `zero_on_true`.
    VarZero { var: Name, zero_on_true: bool },
    /// The then-branch runs when variable `var` is greater than zero
    /// (`n > 0`, `0 < n`, `n >= 1`): a count of work still running.
    Positive { var: Name },
    /// The then-branch runs when variable or flag chain `var` (as
    /// [`Test::VarZero`] names it) compares so with an integer constant
    /// that zero does not settle by [`Test::VarZero`] or
    /// [`Test::Positive`] (`n < 0`, `n == 1U`, `o.level != 2`, `n <= 0`):
    /// only whether it runs when `var` is zero (`then_on_zero`) is kept,
    /// and for `==` and `!=`, the constant and whether the then-branch
    /// runs when `var` equals it (`equal`: `mode == 1` gives `(1, true)`).
    Compare {
        var: Name,
        then_on_zero: bool,
        equal: Option<(i64, bool)>,
    },
    /// The then-branch runs when every member `p->f` named in `chains` (a
    /// parameter or variable's field through `->`, as `p->f`) is zero iff
    /// `zero_on_true` (`!p->a && !p->b`, `p->a || p->b`, `p->n == 0`): the
    /// wait condition of a hand-made lock (`walk/gates.rs`).
    FieldsZero {
        chains: Vec<Name>,
        zero_on_true: bool,
    },
    /// A plain variable/field flag (for flag protocols).
    Other,
}

/// A structured statement of the IR.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Stmt {
    Access(Access),
    /// `lhs = rhs` for alias analysis (the accesses are separate statements).
    Assign {
        lhs: Expr,
        rhs: Expr,
    },
    Call(Call),
    /// A local declaration; `is_static` locals live for the whole program.
    Decl(LocalDecl),
    If {
        cond: Vec<Stmt>,
        test: Test,
        then: Vec<Stmt>,
        els: Vec<Stmt>,
    },
    /// Any loop: `cond` is evaluated before each iteration (after it for do-while).
    Loop {
        cond: Vec<Stmt>,
        test: Test,
        body: Vec<Stmt>,
        do_while: bool,
        infinite: bool,
        /// A counting `for` loop's range in normal form (`0<n`, `0<10`),
        /// so that a join loop can be matched with its creation loop.
        bound: Option<Name>,
        /// The counter of a counting loop (set with `bound`): it takes each
        /// value of the range once, and the body does not assign it.
        var: Option<Name>,
        /// The counter of a loop that counts so over a member of a struct
        /// variable (`o.cur_host`), which `bound` and `var` leave out: other
        /// code may write a member, so only a creation loop's numbering
        /// (`walk/slots.rs`) reads it, once it checked that nothing does.
        member: Option<Name>,
    },
    /// `switch`: each arm may run; `break` leaves the switch.
    Switch {
        cond: Vec<Stmt>,
        arms: Vec<Vec<Stmt>>,
        /// The arm labelled `case 0:` (`switch (setjmp(env))`).
        zero: Option<usize>,
        /// The variable switched on (`switch (mode)`, under casts), when
        /// every case label is an integer constant: then `zero` is the one
        /// arm zero enters, or else `default`.
        var: Option<Name>,
        /// The arm labelled `default:`.
        default: Option<usize>,
    },
    Return {
        span: Span,
        value: Option<Expr>,
    },
    Break,
    Continue,
    /// `goto label;`
    Goto(Name),
    /// `label:` before the statements it labels (which follow it in the
    /// same list).
    Label(Name),
}

/// A C type, reduced to what the analysis needs.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Default)]
pub struct TypeInfo {
    /// Base type name: `int`, `struct foo` (as `foo`), a typedef name.
    pub name: Option<Name>,
    pub pointer: u8,
    pub array: bool,
    /// Array dimensions past the first: `T *a[2][64]` has `array` and one
    /// row, so `a[0]` is still an array (of pointers) and `a[0][i]` a
    /// pointer.
    pub rows: u8,
    pub atomic: bool,
    pub thread_local: bool,
    pub is_static: bool,
    pub is_function: bool,
    /// Bit `i` set: the object at pointer level `i` is `volatile` (level 0 is
    /// the base type, level `pointer` the declared object itself).
    pub volatile: u8,
    /// The base type is `sig_atomic_t` (or a typedef of it, or glibc's
    /// `__sig_atomic_t`): set when a typedef is resolved.
    pub sig_atomic: bool,
    /// A global array of one dimension declared with exactly one element
    /// (`struct slot table[1]`): every index a defined execution uses is 0.
    pub one_element: bool,
}

impl TypeInfo {
    /// The type after one `[i]` or `*`: an array loses a dimension, else a
    /// pointer a level. False (unchanged) for a scalar.
    pub fn index_once(&mut self) -> bool {
        if self.rows > 0 {
            self.rows -= 1;
        } else if self.array {
            self.array = false;
            self.one_element = false;
        } else if self.pointer > 0 {
            self.pointer -= 1;
        } else {
            return false;
        }
        true
    }

    /// Is the declared object itself volatile?
    pub fn is_volatile(&self) -> bool {
        self.pointer < 8 && (self.volatile >> self.pointer) & 1 == 1
    }

    /// Is the declared object a `volatile sig_atomic_t`, the one type a
    /// signal handler may share with the code it interrupts (C11 7.14.1.1)?
    pub fn is_volatile_sig_atomic(&self) -> bool {
        self.pointer == 0 && !self.array && self.is_volatile() && self.sig_atomic
    }
}

/// A local variable declaration.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct LocalDecl {
    pub name: Name,
    pub ty: TypeInfo,
    pub span: Span,
}

/// A lowered function.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Default)]
pub struct FnIr {
    pub params: Vec<LocalDecl>,
    pub body: Vec<Stmt>,
    /// Variables whose address `&` takes, whole or in part (`&x`, `&x.f`,
    /// `&x.f.g`). Arrays used as values, and `&a[i]` of an array, are the
    /// walk's to add: only types tell an array from a pointer.
    pub address_taken: Vec<Name>,
    /// Each variable `&` is applied to, under member and element selection
    /// (`&x`, `&x.f`, `&x[i]`, `&x.a[i]`), with the function-relative byte
    /// offset of its first such `&`; sorted by name. What any `&` may lend,
    /// so it over-approximates where `[]` derefs a pointer.
    pub address_at: Vec<(Name, u32)>,
    /// True when the lowering hit its depth or size budget.
    pub truncated: bool,
    /// Number of calls (ids are `0..ncalls`).
    pub ncalls: u32,
    /// Spans of the writes that step a variable down by exactly one
    /// (`n--`, `--n`, `n -= 1`): counters of running threads.
    pub decrements: Vec<Span>,
    /// Short string literals handed to calls as arguments: (call id,
    /// argument index, the text between the quotes), for literals of at
    /// most 32 bytes without escapes (`fuse_opt_add_arg(&args, "-s")`).
    pub call_strings: Vec<(u32, u8, Name)>,
    /// The arms of the preprocessor conditionals left in the body (those
    /// whose condition could not be decided keep their directive lines);
    /// a nested conditional's arms come before those of the one holding it.
    /// No build compiles two arms of one conditional.
    pub build_arms: Vec<BuildArm>,
    /// The types `T` of the casts `(T *)` applied to a pointer stepped
    /// back (`(T *) ((char *) p - offsetof(T, m))`, container_of): this
    /// function may step from a member's address to its enclosing `T`.
    /// Sorted, without duplicates.
    pub recovered_types: Vec<Name>,
}

/// One arm of a preprocessor conditional in a function body: `#if A` up
/// to its `#elif`/`#else` is arm 0, the rest (an `#elif` chain or the
/// `#else`) arm 1; an `#elif` is itself a conditional with its own two
/// arms.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct BuildArm {
    /// The arm's text, relative to the function.
    pub range: Span,
    /// The conditional: where it starts, relative to the function.
    pub cond: u32,
    pub arm: u8,
}

impl FnIr {
    /// The arms of conditionals that the text at `offset` lies in, as
    /// (conditional, arm), outermost first; empty outside conditionals.
    pub fn arms_at(&self, offset: u32) -> Vec<(u32, u8)> {
        let mut arms: Vec<(u32, u8)> = self
            .build_arms
            .iter()
            .filter(|a| a.range.start <= offset && offset < a.range.end)
            .map(|a| (a.cond, a.arm))
            .collect();
        // An outer conditional starts before those nested in it.
        arms.sort_unstable();
        arms
    }
}

/// Visits every statement, nested ones included, each before the
/// statements nested in it.
pub fn visit_stmts(stmts: &[Stmt], f: &mut dyn FnMut(&Stmt)) {
    for s in stmts {
        f(s);
        match s {
            Stmt::If {
                cond, then, els, ..
            } => {
                visit_stmts(cond, f);
                visit_stmts(then, f);
                visit_stmts(els, f);
            }
            Stmt::Loop { cond, body, .. } => {
                visit_stmts(cond, f);
                visit_stmts(body, f);
            }
            Stmt::Switch { cond, arms, .. } => {
                visit_stmts(cond, f);
                for a in arms {
                    visit_stmts(a, f);
                }
            }
            _ => {}
        }
    }
}

/// The expressions statement `s` holds itself (not those of the statements
/// nested in it), for rewriting: an access's place, both sides of an
/// assignment, a call through a pointer and the call's arguments, a
/// returned value.
pub fn stmt_exprs_mut(s: &mut Stmt, f: &mut dyn FnMut(&mut Expr)) {
    match s {
        Stmt::Access(a) => f(&mut a.place),
        Stmt::Assign { lhs, rhs } => {
            f(lhs);
            f(rhs);
        }
        Stmt::Call(c) => {
            if let Callee::Indirect(e) = &mut c.callee {
                f(e);
            }
            c.args.iter_mut().for_each(f);
        }
        Stmt::Return { value: Some(v), .. } => f(v),
        _ => {}
    }
}

/// [`visit_stmts`] for rewriting: `f` may change each statement, and then
/// sees the statements nested in what it left.
pub fn visit_stmts_mut(stmts: &mut [Stmt], f: &mut dyn FnMut(&mut Stmt)) {
    for s in stmts {
        f(s);
        match s {
            Stmt::If {
                cond, then, els, ..
            } => {
                visit_stmts_mut(cond, f);
                visit_stmts_mut(then, f);
                visit_stmts_mut(els, f);
            }
            Stmt::Loop { cond, body, .. } => {
                visit_stmts_mut(cond, f);
                visit_stmts_mut(body, f);
            }
            Stmt::Switch { cond, arms, .. } => {
                visit_stmts_mut(cond, f);
                for a in arms {
                    visit_stmts_mut(a, f);
                }
            }
            _ => {}
        }
    }
}
