//! Param syntax: `[key=value ...]` read into small syntax trees of Python
//! reprs (tuples, calls, dotted names, numbers, nested jaxprs), and typed
//! accessors that turn them into param values with precise errors.

use super::lexer::Tok;
use super::syntax::{parse_float, PResult, Reader};
use super::ParseError;
use crate::aval::ShapedArray;
use crate::dtype::DType;
use crate::primitive::Ints;

/// A param value as written.
#[derive(Debug, Clone)]
pub(crate) enum PValue {
    /// A (dotted) name: `None`, `True`, `float32`, `GatherScatterMode.CLIP`,
    /// `<lambda>`, or a reference to a `let`-bound jaxpr.
    Word(String),
    /// A number as written.
    Num(String),
    /// A quoted string, quotes included (kept as written).
    Str,
    /// `(a, b)` or `( {..} {..} )`.
    Tuple(Vec<PV>),
    /// `[a, b]`.
    List(Vec<PV>),
    /// `Name(args)` with optional keywords.
    Call(String, Vec<(Option<String>, PV)>),
    /// A nested `{ lambda ... }`: its arena id.
    Jaxpr(usize),
    /// `int32[2]` inside a call such as `ShapedArray(...)`.
    Type(ShapedArray),
    /// A set, `{'a', 'b'}` (inside `frozenset(..)`).
    Set(Vec<PV>),
    /// `'x': 2`, a dict-like argument of `Mesh(..)`.
    Pair(Box<PV>, Box<PV>),
    /// Raw text that is not a Python repr (see [`RAW_KEYS`]).
    Raw,
}

/// Params whose values are read as raw text: `debug_print`'s format string
/// and operand tree, the callbacks' function reprs.
pub(crate) const RAW_KEYS: &[&str] = &["fmt", "in_tree", "callback"];

/// A param value with its byte span.
#[derive(Debug, Clone)]
pub(crate) struct PV {
    pub v: PValue,
    pub start: usize,
    pub end: usize,
}

/// One `key=value` param.
#[derive(Debug, Clone)]
pub(crate) struct Param {
    pub key: String,
    pub value: PV,
}

impl Reader<'_> {
    /// Reads `[key=value ...]`.
    pub fn read_params(&mut self) -> PResult<Vec<Param>> {
        self.expect(Tok::LBrack, "`[`")?;
        let mut params = Vec::new();
        while self.peek_kind() != Tok::RBrack {
            let key_tok = self.expect(Tok::Word, "a param name or `]`")?;
            self.expect(Tok::Eq, "`=` after the param name")?;
            // `remat2`'s `policy=<function everything_saveable at 0x..>`.
            let fn_repr = self.slice(key_tok) == "policy"
                && self
                    .text
                    .get(self.tok(self.pos.saturating_sub(1)).end..)
                    .is_some_and(|r| r.starts_with('<'));
            let value = if fn_repr || RAW_KEYS.contains(&self.slice(key_tok)) {
                self.read_raw()?
            } else {
                self.read_value()?
            };
            params.push(Param {
                key: self.slice(key_tok).to_string(),
                value,
            });
            if self.peek_kind() == Tok::Comma {
                self.bump();
            }
        }
        self.bump();
        Ok(params)
    }

    /// Reads a value that is not a Python repr (a format string, a
    /// `PyTreeDef`, a function's repr): the text to the end of its line,
    /// or a `<...>` repr to its closing `>`.
    fn read_raw(&mut self) -> PResult<PV> {
        let start = self.tok(self.pos.saturating_sub(1)).end;
        let rest = self.text.get(start..).unwrap_or("");
        let len = if rest.starts_with('<') {
            let mut depth = 0usize;
            let mut end = None;
            for (i, c) in rest.char_indices() {
                match c {
                    '<' => depth += 1,
                    '>' if depth > 0 => {
                        depth -= 1;
                        if depth == 0 {
                            end = Some(i + 1);
                            break;
                        }
                    }
                    '\n' => break,
                    _ => {}
                }
            }
            end.ok_or_else(|| self.err_at(start, "unterminated `<...>` value"))?
        } else {
            rest.find('\n').unwrap_or(rest.len())
        };
        let end = start + rest[..len].trim_end().len();
        while self.peek_kind() != Tok::Eof && self.peek().start < end {
            if self.peek().end > end {
                return Err(self.err_at(self.peek().start, "a token runs past the raw value"));
            }
            self.bump();
        }
        Ok(PV {
            v: PValue::Raw,
            start,
            end,
        })
    }

    /// Reads one Python-repr value.
    pub fn read_value(&mut self) -> PResult<PV> {
        self.enter()?;
        let r = self.read_value_inner();
        self.leave();
        r
    }

    fn read_value_inner(&mut self) -> PResult<PV> {
        let t = self.peek();
        let start = t.start;
        let v = match t.kind {
            Tok::LBrace if matches!(self.kind_at(1), Tok::Str | Tok::RBrace) => {
                self.bump();
                let mut items = Vec::new();
                while self.peek_kind() != Tok::RBrace {
                    items.push(self.read_value()?);
                    if self.peek_kind() == Tok::Comma {
                        self.bump();
                    } else if self.peek_kind() != Tok::RBrace {
                        return Err(self.expected("`,` or `}` in the set"));
                    }
                }
                self.bump();
                PValue::Set(items)
            }
            Tok::LBrace => PValue::Jaxpr(self.read_lambda()?),
            Tok::LParen | Tok::LBrack => {
                self.bump();
                let close = if t.kind == Tok::LParen {
                    Tok::RParen
                } else {
                    Tok::RBrack
                };
                let mut items = Vec::new();
                while self.peek_kind() != close {
                    let item = self.read_value()?;
                    // JAX separates the jaxprs of a tuple (`branches=( {..}
                    // jaxpr1 )`) with line breaks only; a jaxpr is inline
                    // or the name of a `let`-bound one.
                    let jaxpr_like = matches!(item.v, PValue::Jaxpr(_) | PValue::Word(_));
                    items.push(item);
                    let next_jaxpr = matches!(self.peek_kind(), Tok::LBrace | Tok::Word);
                    if self.peek_kind() == Tok::Comma {
                        self.bump();
                    } else if self.peek_kind() != close && !(jaxpr_like && next_jaxpr) {
                        return Err(self.expected("`,` or a closing bracket"));
                    }
                }
                self.bump();
                if close == Tok::RParen {
                    PValue::Tuple(items)
                } else {
                    PValue::List(items)
                }
            }
            Tok::Num => {
                self.bump();
                PValue::Num(self.slice(t).to_string())
            }
            Tok::Str => {
                self.bump();
                PValue::Str
            }
            Tok::Star => {
                self.bump();
                PValue::Word("*".to_string())
            }
            Tok::Word => {
                let first = self.slice(t);
                // `int32[2]`: a type, written with no space before `[`.
                let next = self.tok(self.pos + 1);
                if next.kind == Tok::LBrack
                    && next.start == t.end
                    && DType::from_name(first).is_some()
                {
                    let ty = self.read_array_type(None)?;
                    let end = self.tok(self.pos.saturating_sub(1)).end;
                    return Ok(PV {
                        v: PValue::Type(ty),
                        start,
                        end,
                    });
                }
                self.bump();
                let mut name = first.to_string();
                while self.peek_kind() == Tok::Dot && self.kind_at(1) == Tok::Word {
                    self.bump();
                    let w = self.bump();
                    name.push('.');
                    name.push_str(self.slice(w));
                }
                let glued = self.peek().start == self.tok(self.pos.saturating_sub(1)).end;
                if self.peek_kind() == Tok::LBrack && glued {
                    // `NDIndexer[(...)]`: a subscripted name.
                    let sub = self.read_value()?;
                    let end = sub.end;
                    let sub = match sub.v {
                        PValue::List(mut items) if items.len() == 1 => items.remove(0),
                        v => PV {
                            v,
                            start: sub.start,
                            end,
                        },
                    };
                    return Ok(PV {
                        v: PValue::Call(format!("{name}[]"), vec![(None, sub)]),
                        start,
                        end,
                    });
                }
                if self.peek_kind() == Tok::LParen && glued {
                    self.bump();
                    // `_LinearSolveTuple(matvec=<a jaxpr document>, ...)`.
                    let documents = name == "_LinearSolveTuple";
                    let mut args = Vec::new();
                    while self.peek_kind() != Tok::RParen {
                        let key = if self.peek_kind() == Tok::Word && self.kind_at(1) == Tok::Eq {
                            let k = self.bump();
                            self.bump();
                            Some(self.slice(k).to_string())
                        } else {
                            None
                        };
                        let at_document = self.peek_kind() == Tok::LBrace
                            || (self.at_word("let") && self.kind_at(1) == Tok::Word);
                        let val = if documents && at_document {
                            let start = self.peek().start;
                            let id = self.read_document()?;
                            let end = self.tok(self.pos.saturating_sub(1)).end;
                            PV {
                                v: PValue::Jaxpr(id),
                                start,
                                end,
                            }
                        } else {
                            self.read_value()?
                        };
                        // `Mesh('x': 2, ..)`: a dict-like entry.
                        let val = if key.is_none() && self.peek_kind() == Tok::Colon {
                            self.bump();
                            let rhs = self.read_value()?;
                            let (start, end) = (val.start, rhs.end);
                            PV {
                                v: PValue::Pair(Box::new(val), Box::new(rhs)),
                                start,
                                end,
                            }
                        } else {
                            val
                        };
                        args.push((key, val));
                        if self.peek_kind() == Tok::Comma {
                            self.bump();
                        } else if self.peek_kind() != Tok::RParen {
                            return Err(self.expected("`,` or `)` in the arguments"));
                        }
                    }
                    self.bump();
                    PValue::Call(name, args)
                } else {
                    PValue::Word(name)
                }
            }
            _ => return Err(self.expected("a param value")),
        };
        let end = self.tok(self.pos.saturating_sub(1)).end;
        Ok(PV { v, start, end })
    }
}

/// Typed access to an equation's params, with errors pointing into the text.
/// Every [`Params::get`] marks its key read, so [`Params::unread`] can name
/// a param no rule looked at (a typo, or a key of another primitive).
pub(crate) struct Params<'p> {
    pub text: &'p str,
    pub prim: &'p str,
    pub pos: usize,
    pub params: &'p [Param],
    read: Vec<std::cell::Cell<bool>>,
}

impl<'p> Params<'p> {
    /// Access to `params`, none read yet.
    pub fn new(text: &'p str, prim: &'p str, pos: usize, params: &'p [Param]) -> Params<'p> {
        Params {
            text,
            prim,
            pos,
            params,
            read: params.iter().map(|_| std::cell::Cell::new(false)).collect(),
        }
    }

    /// Marks each of `keys` read where its value is `None`; any other
    /// value stays unread unless a rule reads it.
    pub fn accept_none(&self, keys: &[&str]) {
        for (p, r) in self.params.iter().zip(&self.read) {
            if keys.contains(&p.key.as_str()) && self.src(&p.value) == "None" {
                r.set(true);
            }
        }
    }

    /// The first param that no rule read, if any.
    pub fn unread(&self) -> Option<&'p Param> {
        self.params
            .iter()
            .zip(&self.read)
            .find(|(_, r)| !r.get())
            .map(|(p, _)| p)
    }

    pub fn err(&self, pos: usize, message: impl Into<String>) -> ParseError {
        let (line, column) = super::lexer::line_col(self.text, pos);
        ParseError {
            line,
            column,
            message: message.into(),
        }
    }

    /// The value of `key`, if present.
    pub fn get(&self, key: &str) -> Option<&'p PV> {
        let i = self.params.iter().position(|p| p.key == key)?;
        if let Some(r) = self.read.get(i) {
            r.set(true);
        }
        Some(&self.params[i].value)
    }

    /// The value of `key`, or an error naming the primitive.
    pub fn req(&self, key: &str) -> PResult<&'p PV> {
        self.get(key).ok_or_else(|| {
            self.err(
                self.pos,
                format!("expected param `{key}` for `{}`, found none", self.prim),
            )
        })
    }

    /// The source text of a value.
    pub fn src(&self, v: &PV) -> String {
        self.text.get(v.start..v.end).unwrap_or("").to_string()
    }

    pub fn bad(&self, v: &PV, what: &str) -> ParseError {
        self.err(v.start, format!("expected {what}, found `{}`", self.src(v)))
    }

    pub fn int_of(&self, v: &PV) -> PResult<i64> {
        match &v.v {
            PValue::Num(s) => s.parse().map_err(|_| self.bad(v, "an integer")),
            PValue::Call(n, args) if n == "np.int64" || n == "np.int32" => match args.as_slice() {
                [(None, x)] => self.int_of(x),
                _ => Err(self.bad(v, "an integer")),
            },
            _ => Err(self.bad(v, "an integer")),
        }
    }

    pub fn usize_of(&self, v: &PV) -> PResult<usize> {
        let i = self.int_of(v)?;
        usize::try_from(i).map_err(|_| self.bad(v, "a non-negative integer"))
    }

    pub fn bool_of(&self, v: &PV) -> PResult<bool> {
        match &v.v {
            PValue::Word(w) if w == "True" => Ok(true),
            PValue::Word(w) if w == "False" => Ok(false),
            _ => Err(self.bad(v, "`True` or `False`")),
        }
    }

    pub fn is_none(v: &PV) -> bool {
        matches!(&v.v, PValue::Word(w) if w == "None")
    }

    pub fn dtype_of(&self, v: &PV) -> PResult<DType> {
        match &v.v {
            PValue::Word(w) => DType::from_name(w).ok_or_else(|| self.bad(v, "a dtype name")),
            _ => Err(self.bad(v, "a dtype name")),
        }
    }

    pub fn items_of(&self, v: &'p PV) -> PResult<&'p [PV]> {
        match &v.v {
            PValue::Tuple(items) | PValue::List(items) => Ok(items),
            _ => Err(self.bad(v, "a tuple")),
        }
    }

    pub fn ints_of(&self, v: &PV) -> PResult<Ints> {
        let items = match &v.v {
            PValue::Tuple(items) | PValue::List(items) => items,
            _ => return Err(self.bad(v, "a tuple of integers")),
        };
        let mut out = Ints::default();
        for it in items {
            out.values.push(self.int_of(it)?);
            out.np_int64
                .push(matches!(&it.v, PValue::Call(n, _) if n == "np.int64"));
        }
        Ok(out)
    }

    pub fn usizes_of(&self, v: &PV) -> PResult<Vec<usize>> {
        self.items_of(v)?.iter().map(|x| self.usize_of(x)).collect()
    }

    pub fn opt_sizes_of(&self, v: &PV) -> PResult<Vec<Option<usize>>> {
        self.items_of(v)?
            .iter()
            .map(|x| {
                if Self::is_none(x) {
                    Ok(None)
                } else {
                    self.usize_of(x).map(Some)
                }
            })
            .collect()
    }

    pub fn float_of(&self, v: &PV) -> PResult<f64> {
        let s = match &v.v {
            PValue::Num(s) | PValue::Word(s) => s.as_str(),
            _ => return Err(self.bad(v, "a number")),
        };
        parse_float(s).ok_or_else(|| self.bad(v, "a number"))
    }

    // Shorthands over keys.
    pub fn bool_or(&self, key: &str, default: bool) -> PResult<bool> {
        self.get(key).map_or(Ok(default), |v| self.bool_of(v))
    }
    /// The printed text of a name-like param (`name=<lambda>`).
    pub fn text_of(&self, key: &str) -> PResult<String> {
        self.req(key).map(|v| self.src(v))
    }

    /// The keyword arguments of a call such as `Foo(a=1, b=2)`.
    pub fn kwargs_of(&self, v: &'p PV, name: &str) -> PResult<&'p [(Option<String>, PV)]> {
        match &v.v {
            PValue::Call(n, args) if n == name || n.ends_with(&format!(".{name}")) => Ok(args),
            _ => Err(self.bad(v, &format!("`{name}(...)`"))),
        }
    }

    /// The keyword argument `key` of a call's arguments.
    pub fn kwarg(&self, args: &'p [(Option<String>, PV)], key: &str, at: &PV) -> PResult<&'p PV> {
        args.iter()
            .find(|(k, _)| k.as_deref() == Some(key))
            .map(|(_, v)| v)
            .ok_or_else(|| self.err(at.start, format!("expected `{key}=` in `{}`", self.src(at))))
    }
}
