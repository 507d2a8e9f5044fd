//! The value of an `#if` / `#elif` condition under a set of macros.
//!
//! Evaluation follows C17 6.10.1: `defined X` and `defined(X)` first, then
//! macro expansion (object-like and function-like macros, bounded depth),
//! then integer arithmetic in `intmax_t`. An identifier left after expansion
//! is 0, unless the caller says it may come from a header racelens did not
//! read, in which case the condition is [`Undecided`]. Anything this
//! evaluator does not understand (`__has_include` of a system header, a
//! division by zero, a malformed expression) is undecided as well, never
//! guessed.

use super::Macros;

/// A condition whose value racelens cannot know; names the first cause.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Undecided(pub String);

#[derive(Clone, Debug, PartialEq, Eq)]
enum Tok {
    Num(i64),
    Ident(String),
    Punct(&'static str),
}

const PUNCTS: [&str; 25] = [
    "<<", ">>", "<=", ">=", "==", "!=", "&&", "||", "(", ")", "!", "~", "-", "+", "*", "/", "%",
    "<", ">", "&", "^", "|", "?", ":", ",",
];

fn lex(s: &str) -> Result<Vec<Tok>, Undecided> {
    let b = s.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if c.is_ascii_whitespace() {
            i += 1;
        } else if c == b'/' && b.get(i + 1) == Some(&b'/') {
            break;
        } else if c == b'/' && b.get(i + 1) == Some(&b'*') {
            match s[i + 2..].find("*/") {
                Some(k) => i += k + 4,
                None => break,
            }
        } else if c.is_ascii_digit() {
            let st = i;
            while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'\'') {
                i += 1;
            }
            out.push(Tok::Num(number(&s[st..i])?));
        } else if c.is_ascii_alphabetic() || c == b'_' {
            let st = i;
            while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
                i += 1;
            }
            out.push(Tok::Ident(s[st..i].to_string()));
        } else if c == b'\'' {
            // A character constant: plain ASCII and the common escapes.
            let rest = &s[i + 1..];
            let end = rest
                .find('\'')
                .ok_or_else(|| Undecided("bad character constant".into()))?;
            let v = match &rest[..end] {
                "\\n" => 10,
                "\\t" => 9,
                "\\0" => 0,
                "\\\\" => 92,
                x if x.len() == 1 => x.as_bytes()[0] as i64,
                x => return Err(Undecided(format!("character constant '{x}'"))),
            };
            out.push(Tok::Num(v));
            i += end + 2;
        } else {
            let p = PUNCTS
                .iter()
                .find(|p| s[i..].starts_with(**p))
                .ok_or_else(|| Undecided(format!("`{}` in a condition", c as char)))?;
            out.push(Tok::Punct(p));
            i += p.len();
        }
    }
    Ok(out)
}

fn number(t: &str) -> Result<i64, Undecided> {
    let t = t.replace('\'', "");
    let t = t.trim_end_matches(['u', 'U', 'l', 'L']);
    let v = if let Some(h) = t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
        u64::from_str_radix(h, 16).ok()
    } else if let Some(bn) = t.strip_prefix("0b").or_else(|| t.strip_prefix("0B")) {
        u64::from_str_radix(bn, 2).ok()
    } else if t.len() > 1 && t.starts_with('0') {
        u64::from_str_radix(&t[1..], 8).ok()
    } else {
        t.parse::<u64>().ok()
    };
    v.map(|v| v as i64)
        .ok_or_else(|| Undecided(format!("number `{t}`")))
}

/// Evaluates a condition. `unknown(name)` says whether an identifier that
/// no macro defines may still be defined by an unread header.
pub fn eval(
    cond: &str,
    macros: &Macros,
    unknown: &dyn Fn(&str) -> bool,
    has_include: &mut dyn FnMut(&str, bool) -> Option<bool>,
) -> Result<bool, Undecided> {
    let cond = has_includes(cond, has_include)?;
    let toks = lex(&cond)?;
    let toks = resolve_defined(toks, macros, unknown)?;
    let toks = expand(toks, macros, unknown, 0)?;
    let mut p = Parser { toks: &toks, i: 0 };
    let v = p.ternary()?;
    if p.i != toks.len() {
        return Err(Undecided("malformed condition".into()));
    }
    Ok(v != 0)
}

/// Replaces each `__has_include("f")` / `__has_include(<f>)` by 1 or 0,
/// as `has_include(name, quoted)` answers; `None` leaves it undecided.
fn has_includes(
    cond: &str,
    has_include: &mut dyn FnMut(&str, bool) -> Option<bool>,
) -> Result<String, Undecided> {
    let mut out = String::with_capacity(cond.len());
    let mut rest = cond;
    while let Some(k) = rest.find("__has_include") {
        out.push_str(&rest[..k]);
        let after = rest[k..]
            .trim_start_matches("__has_include_next")
            .trim_start_matches("__has_include");
        let after = after.trim_start();
        let inner_end = after.find(')').filter(|_| after.starts_with('('));
        let Some(end) = inner_end else {
            return Err(Undecided("malformed `__has_include`".into()));
        };
        let inner = after[1..end].trim();
        let (name, quoted) =
            if let Some(q) = inner.strip_prefix('"').and_then(|i| i.strip_suffix('"')) {
                (q, true)
            } else if let Some(a) = inner.strip_prefix('<').and_then(|i| i.strip_suffix('>')) {
                (a, false)
            } else {
                return Err(Undecided(format!("`__has_include({inner})`")));
            };
        match has_include(name, quoted) {
            Some(v) => out.push_str(if v { " 1 " } else { " 0 " }),
            None => return Err(Undecided(format!("`__has_include({inner})`"))),
        }
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

/// Replaces `defined X` and `defined(X)` by numbers.
fn resolve_defined(
    toks: Vec<Tok>,
    macros: &Macros,
    unknown: &dyn Fn(&str) -> bool,
) -> Result<Vec<Tok>, Undecided> {
    let mut out = Vec::with_capacity(toks.len());
    let mut i = 0;
    while i < toks.len() {
        match &toks[i] {
            Tok::Ident(d) if d == "defined" => {
                let (name, next) = match (toks.get(i + 1), toks.get(i + 2), toks.get(i + 3)) {
                    (Some(Tok::Punct("(")), Some(Tok::Ident(n)), Some(Tok::Punct(")"))) => {
                        (n, i + 4)
                    }
                    (Some(Tok::Ident(n)), _, _) => (n, i + 2),
                    _ => return Err(Undecided("malformed `defined`".into())),
                };
                out.push(Tok::Num(defined(name, macros, unknown)? as i64));
                i = next;
            }
            t => {
                out.push(t.clone());
                i += 1;
            }
        }
    }
    Ok(out)
}

fn defined(name: &str, macros: &Macros, unknown: &dyn Fn(&str) -> bool) -> Result<bool, Undecided> {
    match macros.state(name) {
        Some(Some(_)) => Ok(true),
        Some(None) => Ok(false),
        None if macros.is_unknown(name) || unknown(name) => Err(Undecided(format!(
            "`{name}` may be defined by a header racelens did not read"
        ))),
        None => Ok(false),
    }
}

const MAX_EXPANSION: u32 = 32;

/// Expands macros; identifiers left are 0 or undecided.
fn expand(
    toks: Vec<Tok>,
    macros: &Macros,
    unknown: &dyn Fn(&str) -> bool,
    depth: u32,
) -> Result<Vec<Tok>, Undecided> {
    if depth > MAX_EXPANSION {
        return Err(Undecided("macro expansion too deep".into()));
    }
    let mut out = Vec::with_capacity(toks.len());
    let mut i = 0;
    while i < toks.len() {
        let Tok::Ident(name) = &toks[i] else {
            out.push(toks[i].clone());
            i += 1;
            continue;
        };
        i += 1;
        match macros.state(name) {
            Some(Some(m)) => match &m.params {
                None => {
                    let body = lex(&m.body)?;
                    out.extend(expand(body, macros, unknown, depth + 1)?);
                }
                Some(params) => {
                    if toks.get(i) != Some(&Tok::Punct("(")) {
                        out.push(Tok::Num(0));
                        continue;
                    }
                    let (args, next) = call_args(&toks, i)?;
                    i = next;
                    let body = lex(&m.body)?;
                    let mut sub = Vec::new();
                    for t in body {
                        match &t {
                            Tok::Ident(p) => match params.iter().position(|q| &**q == p) {
                                Some(k) => sub.extend(args.get(k).cloned().unwrap_or_default()),
                                None => sub.push(t),
                            },
                            _ => sub.push(t),
                        }
                    }
                    out.extend(expand(sub, macros, unknown, depth + 1)?);
                }
            },
            Some(None) => out.push(Tok::Num(0)),
            None if macros.is_unknown(name) || unknown(name) => {
                return Err(Undecided(format!(
                    "`{name}` may be defined by a header racelens did not read"
                )))
            }
            None if name == "true" => out.push(Tok::Num(1)),
            None if toks.get(i) == Some(&Tok::Punct("(")) => {
                return Err(Undecided(format!("`{name}(...)` is not a known macro")))
            }
            None => out.push(Tok::Num(0)),
        }
    }
    Ok(out)
}

/// The arguments of a call whose `(` is at `open`, and the index after `)`.
fn call_args(toks: &[Tok], open: usize) -> Result<(Vec<Vec<Tok>>, usize), Undecided> {
    let mut args = vec![Vec::new()];
    let mut depth = 0;
    let mut i = open + 1;
    while i < toks.len() {
        match &toks[i] {
            Tok::Punct("(") => depth += 1,
            Tok::Punct(")") if depth == 0 => return Ok((args, i + 1)),
            Tok::Punct(")") => depth -= 1,
            Tok::Punct(",") if depth == 0 => {
                args.push(Vec::new());
                i += 1;
                continue;
            }
            _ => {}
        }
        if let Some(a) = args.last_mut() {
            a.push(toks[i].clone());
        }
        i += 1;
    }
    Err(Undecided("unclosed macro call".into()))
}

struct Parser<'a> {
    toks: &'a [Tok],
    i: usize,
}

impl Parser<'_> {
    fn peek(&self) -> Option<&'static str> {
        match self.toks.get(self.i) {
            Some(Tok::Punct(p)) => Some(p),
            _ => None,
        }
    }

    fn ternary(&mut self) -> Result<i64, Undecided> {
        let c = self.binary(0)?;
        if self.peek() == Some("?") {
            self.i += 1;
            let a = self.ternary()?;
            if self.peek() != Some(":") {
                return Err(Undecided("malformed `?:`".into()));
            }
            self.i += 1;
            let b = self.ternary()?;
            return Ok(if c != 0 { a } else { b });
        }
        Ok(c)
    }

    fn binary(&mut self, min: u8) -> Result<i64, Undecided> {
        let mut l = self.unary()?;
        while let Some(op) = self.peek() {
            let prec = match op {
                "||" => 1,
                "&&" => 2,
                "|" => 3,
                "^" => 4,
                "&" => 5,
                "==" | "!=" => 6,
                "<" | ">" | "<=" | ">=" => 7,
                "<<" | ">>" => 8,
                "+" | "-" => 9,
                "*" | "/" | "%" => 10,
                _ => break,
            };
            if prec <= min {
                break;
            }
            self.i += 1;
            let r = self.binary(prec)?;
            l = match op {
                "||" => (l != 0 || r != 0) as i64,
                "&&" => (l != 0 && r != 0) as i64,
                "|" => l | r,
                "^" => l ^ r,
                "&" => l & r,
                "==" => (l == r) as i64,
                "!=" => (l != r) as i64,
                "<" => (l < r) as i64,
                ">" => (l > r) as i64,
                "<=" => (l <= r) as i64,
                ">=" => (l >= r) as i64,
                "<<" => l.wrapping_shl(r as u32),
                ">>" => l.wrapping_shr(r as u32),
                "+" => l.wrapping_add(r),
                "-" => l.wrapping_sub(r),
                "*" => l.wrapping_mul(r),
                "/" | "%" if r == 0 => return Err(Undecided("division by zero".into())),
                "/" => l.wrapping_div(r),
                _ => l.wrapping_rem(r),
            };
        }
        Ok(l)
    }

    fn unary(&mut self) -> Result<i64, Undecided> {
        match self.toks.get(self.i) {
            Some(Tok::Num(n)) => {
                self.i += 1;
                Ok(*n)
            }
            Some(Tok::Punct(p)) => {
                self.i += 1;
                match *p {
                    "(" => {
                        let v = self.ternary()?;
                        if self.peek() != Some(")") {
                            return Err(Undecided("unbalanced parentheses".into()));
                        }
                        self.i += 1;
                        Ok(v)
                    }
                    "!" => Ok((self.unary()? == 0) as i64),
                    "~" => Ok(!self.unary()?),
                    "-" => Ok(self.unary()?.wrapping_neg()),
                    "+" => self.unary(),
                    _ => Err(Undecided(format!("unexpected `{p}`"))),
                }
            }
            _ => Err(Undecided("malformed condition".into())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(cond: &str, defs: &[(&str, &str)]) -> Result<bool, Undecided> {
        let mut m = Macros::default();
        for (n, b) in defs {
            m.define_text(&format!("{n} {b}"));
        }
        eval(cond, &m, &|n| n.starts_with("__"), &mut |_, _| None)
    }

    #[test]
    fn arithmetic_and_logic() {
        assert_eq!(ev("1 + 2 * 3 == 7", &[]), Ok(true));
        assert_eq!(ev("(1 || 0) && !0", &[]), Ok(true));
        assert_eq!(ev("10 - 2 - 3 == 5", &[]), Ok(true));
        assert_eq!(ev("1 ? 0 : 1", &[]), Ok(false));
        assert_eq!(ev("0x10 == 16 && 010 == 8 && 3UL > 2", &[]), Ok(true));
        assert_eq!(ev("1 << 4 == 16", &[]), Ok(true));
    }

    #[test]
    fn defined_and_macros() {
        let d = [("A", "1"), ("B", "A + 1"), ("F(x)", "((x) * 2)"), ("E", "")];
        assert_eq!(ev("defined(A) && defined B && !defined C", &d), Ok(true));
        assert_eq!(ev("B == 2", &d), Ok(true));
        assert_eq!(ev("F(B) == 4", &d), Ok(true));
        assert_eq!(ev("C == 0", &d), Ok(true));
        assert_eq!(ev("defined E", &d), Ok(true));
    }

    #[test]
    fn unknown_names_are_undecided() {
        assert!(ev("__GLIBC__ >= 2", &[]).is_err());
        assert!(ev("defined(__USE_GNU)", &[]).is_err());
        assert!(ev("1 / 0", &[]).is_err());
        assert!(ev("G(1)", &[]).is_err());
        // An undefined project macro is 0, as for the compiler.
        assert_eq!(ev("THREADSAFE", &[]), Ok(false));
    }
}
