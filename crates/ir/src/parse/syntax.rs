//! Phase one of parsing: the recursive-descent reader that turns tokens into
//! raw jaxprs (names resolved per scope, params kept as syntax trees).
//!
//! Invariant: every `{ lambda ... }` is a closed scope; a raw jaxpr's vars are
//! numbered in the order their binders appear, `_` binders included (phase
//! two drops the `_` binders that nothing reads and renumbers).

use super::lexer::{lex, Tok, Token};
use super::params::Param;
use super::state::StateForm;
use super::ParseError;
use crate::array::HostArray;
use crate::aval::{AbstractRef, Aval, Dim, MemorySpace, ShapedArray};
use crate::dtype::DType;
use crate::jaxpr::{Atom, Var};
use crate::literal::{Literal, Scalar};
use std::collections::{HashMap, VecDeque};

/// Deepest nesting of brackets and jaxprs accepted (guards the stack).
const MAX_DEPTH: usize = 200;

/// A jaxpr as read, before params are typed and `_` binders resolved.
#[derive(Debug, Default)]
pub(crate) struct RawJaxpr {
    pub vars: Vec<Aval>,
    /// Per var: bound by a `_` binder.
    pub underscore: Vec<bool>,
    /// Per var: read somewhere (operand, outvar or dimension).
    pub referenced: Vec<bool>,
    pub constvars: Vec<Var>,
    pub invars: Vec<Var>,
    pub eqns: Vec<RawEqn>,
    pub outvars: Vec<Atom>,
    /// Values of the constvars (empty when parsing without values).
    pub consts: Vec<HostArray>,
    /// Every `_` binder, in order (for resolving `_` operands).
    pub underscores: Vec<Var>,
    /// Operands written `_`: how many `_` binders preceded each.
    pub pending: Vec<usize>,
    /// The `_` binders that `_` outvars read.
    pub matched: Vec<Var>,
    /// Per var: the name its binder wrote (`_` included).
    pub names: Vec<String>,
    /// Per var: the name was bound before, outside every enclosing scope —
    /// this jaxpr is a copy of an earlier one sharing its variables.
    pub foreign: Vec<bool>,
    /// Byte offsets of the `{` and just past the `}`.
    pub span: (usize, usize),
    /// The `{V:..}` varying axes written after binders' types.
    pub vma: Vec<(Var, Vec<String>)>,
}

/// An equation as read.
#[derive(Debug)]
pub(crate) struct RawEqn {
    pub name: String,
    /// Byte offset of the primitive name (or of the equation for arrow forms).
    pub pos: usize,
    pub params: Vec<Param>,
    pub inputs: Vec<Atom>,
    pub outputs: Vec<Var>,
    /// For the state/Pallas arrow forms: what the arrow syntax said.
    pub state: Option<StateForm>,
}

#[derive(Default)]
pub(crate) struct Scope {
    names: HashMap<String, Var>,
    last_underscore: Option<Var>,
    /// Every `_` binder so far, in order.
    underscores: Vec<Var>,
    /// Operands written `_`: how many `_` binders preceded each.
    pending: Vec<usize>,
}

/// Placeholder vars for `_` operands resolved after the outvars are read.
pub(super) const PENDING_BASE: u32 = u32::MAX / 2;

/// The phase-one reader.
pub(crate) struct Reader<'a> {
    pub text: &'a str,
    pub toks: Vec<Token>,
    pub pos: usize,
    pub arena: Vec<RawJaxpr>,
    /// `let NAME = {...} in` bindings, the program's and those of the
    /// documents nested in params.
    pub lets: Vec<LetBinding>,
    /// Arena ids of the main jaxprs of documents nested in params.
    pub documents: Vec<usize>,
    /// Constant values still to hand out, or `None` when parsing without.
    consts: Option<VecDeque<HostArray>>,
    depth: usize,
    /// The binder types of the equation whose params are being read, with
    /// whether each is `_`: a jit body's `_` outvars take the caller's
    /// dropped outputs, so their types pick the matching `_` binders.
    caller_binders: Option<Vec<(bool, Aval)>>,
    /// Names of the binders already read in the equation being read: a
    /// later binder's type may use one as a dimension (`c:i64[] d:f64[c]`,
    /// a dynamic-shape result sized by another result).
    eqn_binders: Vec<&'a str>,
    /// Names bound by the open scopes and by the binders of the equations
    /// whose params are being read, with multiplicity.
    pub(super) visible: HashMap<String, usize>,
    /// Each name bound so far: where the jaxpr that first bound it starts.
    pub(super) first_bound: HashMap<String, usize>,
}

pub(crate) type PResult<T> = Result<T, ParseError>;

/// One `let NAME = {...} in` binding.
#[derive(Debug)]
pub(crate) struct LetBinding {
    pub name: String,
    /// The arena id of the bound jaxpr.
    pub id: usize,
    /// Byte offset of the `let`.
    pub pos: usize,
    /// The byte span where the name is visible: the whole text for the
    /// program's lets, the nested document for a document's own.
    pub scope: (usize, usize),
}

/// The arena id of the `let` named `name` visible at byte `pos` (the
/// innermost, when nested documents bind the same name).
/// Primitives JAX prints without results or `=` (`debug_print[..] a`).
const NO_RESULTS: &[&str] = &["debug_print", "debug_callback"];

pub(crate) fn let_named(lets: &[LetBinding], name: &str, pos: usize) -> Option<usize> {
    lets.iter()
        .filter(|l| l.name == name && l.scope.0 <= pos && pos < l.scope.1)
        .min_by_key(|l| l.scope.1 - l.scope.0)
        .map(|l| l.id)
}

impl<'a> Reader<'a> {
    pub fn new(text: &'a str, consts: Option<Vec<HostArray>>) -> Reader<'a> {
        Reader {
            text,
            toks: lex(text),
            pos: 0,
            arena: Vec::new(),
            lets: Vec::new(),
            documents: Vec::new(),
            consts: consts.map(VecDeque::from),
            depth: 0,
            caller_binders: None,
            eqn_binders: Vec::new(),
            visible: HashMap::new(),
            first_bound: HashMap::new(),
        }
    }

    // ---- token helpers -------------------------------------------------

    pub fn tok(&self, i: usize) -> Token {
        self.toks
            .get(i)
            .or(self.toks.last())
            .copied()
            .unwrap_or(Token {
                kind: Tok::Eof,
                start: self.text.len(),
                end: self.text.len(),
            })
    }

    pub fn peek(&self) -> Token {
        self.tok(self.pos)
    }

    pub fn peek_kind(&self) -> Tok {
        self.peek().kind
    }

    pub fn kind_at(&self, off: usize) -> Tok {
        self.tok(self.pos + off).kind
    }

    pub fn slice(&self, t: Token) -> &'a str {
        self.text.get(t.start..t.end).unwrap_or("")
    }

    pub fn bump(&mut self) -> Token {
        let t = self.peek();
        if t.kind != Tok::Eof {
            self.pos += 1;
        }
        t
    }

    /// Whether the next token is the word `w`.
    pub fn at_word(&self, w: &str) -> bool {
        let t = self.peek();
        t.kind == Tok::Word && self.slice(t) == w
    }

    /// Describes a token for error messages.
    pub fn describe(&self, t: Token) -> String {
        match t.kind {
            Tok::Eof => "end of input".to_string(),
            _ => format!("`{}`", self.slice(t)),
        }
    }

    pub fn err_at(&self, pos: usize, message: impl Into<String>) -> ParseError {
        let (line, column) = super::lexer::line_col(self.text, pos);
        ParseError {
            line,
            column,
            message: message.into(),
        }
    }

    /// "expected X, found Y" at the next token.
    pub fn expected(&self, what: &str) -> ParseError {
        let t = self.peek();
        self.err_at(
            t.start,
            format!("expected {what}, found {}", self.describe(t)),
        )
    }

    pub fn expect(&mut self, kind: Tok, what: &str) -> PResult<Token> {
        if self.peek_kind() == kind {
            Ok(self.bump())
        } else {
            Err(self.expected(what))
        }
    }

    pub fn expect_word(&mut self, w: &str) -> PResult<Token> {
        if self.at_word(w) {
            Ok(self.bump())
        } else {
            Err(self.expected(&format!("`{w}`")))
        }
    }

    pub fn enter(&mut self) -> PResult<()> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(self.err_at(
                self.peek().start,
                format!("nesting too deep: over the parser's nesting limit of {MAX_DEPTH} brackets and jaxprs"),
            ));
        }
        Ok(())
    }

    pub fn leave(&mut self) {
        self.depth = self.depth.saturating_sub(1);
    }

    // ---- top level -----------------------------------------------------

    /// Reads `let NAME = {...} in`* `{...}` and the end of input; returns the
    /// arena id of the main jaxpr.
    pub fn read_program(&mut self) -> PResult<usize> {
        let scope = (0, self.text.len() + 1);
        self.read_lets(scope)?;
        let main = self.read_lambda()?;
        if self.peek_kind() != Tok::Eof {
            return Err(self.expected("end of input"));
        }
        // After every `let` is read: a `_` operand of a call may need its
        // callee's types, and the callee may be a forward reference.
        for id in 0..self.arena.len() {
            self.resolve_pending(id);
        }
        Ok(main)
    }

    /// Reads `let NAME = {...} in`*, each visible in `scope`.
    fn read_lets(&mut self, scope: (usize, usize)) -> PResult<()> {
        while self.at_word("let") {
            let let_tok = self.bump();
            let name_tok = self.expect(Tok::Word, "a jaxpr name")?;
            let name = self.slice(name_tok).to_string();
            self.expect(Tok::Eq, "`=`")?;
            let id = self.read_lambda()?;
            self.expect_word("in")?;
            self.lets.push(LetBinding {
                name,
                id,
                pos: let_tok.start,
                scope,
            });
        }
        Ok(())
    }

    /// Reads a whole jaxpr document printed inside a param value (JAX's
    /// `str(closed_jaxpr)` in `custom_linear_solve`'s `jaxprs`): its own
    /// `let`s, visible only inside it, and its own variable names, which
    /// may repeat the enclosing program's. Returns the main jaxpr's id.
    pub fn read_document(&mut self) -> PResult<usize> {
        let start = self.peek().start;
        let first_let = self.lets.len();
        let visible = std::mem::take(&mut self.visible);
        let first_bound = std::mem::take(&mut self.first_bound);
        let read = self
            .read_lets((start, usize::MAX))
            .and_then(|()| self.read_lambda());
        self.visible = visible;
        self.first_bound = first_bound;
        let main = read?;
        let end = self.arena.get(main).map_or(start, |j| j.span.1);
        for l in &mut self.lets[first_let..] {
            l.scope = (start, end);
        }
        self.documents.push(main);
        Ok(main)
    }

    /// Reads `{ lambda consts ; invars . let eqns in (outvars) }`.
    pub fn read_lambda(&mut self) -> PResult<usize> {
        self.enter()?;
        let open = self.expect(Tok::LBrace, "`{`")?;
        self.expect_word("lambda")?;
        let caller_binders = self.caller_binders.take();
        let mut jx = RawJaxpr {
            span: (open.start, open.start),
            ..RawJaxpr::default()
        };
        let mut scope = Scope::default();
        // constvars
        let mut consts_pos = Vec::new();
        while self.peek_kind() == Tok::Word {
            consts_pos.push(self.peek().start);
            let v = self.read_binder(&mut jx, &mut scope)?;
            jx.constvars.push(v);
        }
        self.expect(Tok::Semi, "`;` after the constvars")?;
        while self.peek_kind() == Tok::Word {
            let v = self.read_binder(&mut jx, &mut scope)?;
            jx.invars.push(v);
        }
        self.expect(Tok::Dot, "`.` after the invars")?;
        self.expect_word("let")?;
        self.bind_consts(&mut jx, &consts_pos)?;
        loop {
            if self.at_word("in") && self.kind_at(1) == Tok::LParen {
                break;
            }
            match self.peek_kind() {
                Tok::Semi => {
                    self.bump();
                }
                Tok::Word | Tok::Eq => self.read_eqn(&mut jx, &mut scope)?,
                _ => return Err(self.expected("an equation or `in`")),
            }
        }
        self.bump(); // `in`
        self.read_outvars(&mut jx, &mut scope, caller_binders.as_deref())?;
        let close = self.expect(Tok::RBrace, "`}`")?;
        jx.span.1 = close.end;
        self.hide(scope.names.keys());
        self.leave();
        self.arena.push(jx);
        Ok(self.arena.len() - 1)
    }

    fn bind_consts(&mut self, jx: &mut RawJaxpr, positions: &[usize]) -> PResult<()> {
        let Some(queue) = self.consts.as_mut() else {
            return Ok(());
        };
        for (k, &v) in jx.constvars.iter().enumerate() {
            let pos = positions.get(k).copied().unwrap_or(0);
            let Some(value) = queue.pop_front() else {
                return Err(self.err_at(
                    pos,
                    "expected a const value for this constvar, found no more consts",
                ));
            };
            let want = jx.vars.get(v.index()).cloned();
            let got = Aval::Array(value.aval());
            if want.as_ref() != Some(&got) {
                return Err(self.err_at(
                    pos,
                    format!(
                        "expected a const of type {}, found one of type {}",
                        want.as_ref().map_or("?".to_string(), aval_text),
                        aval_text(&got)
                    ),
                ));
            }
            jx.consts.push(value);
        }
        Ok(())
    }

    /// After the whole text: no const value may be left over.
    pub fn check_consts_used(&self) -> PResult<()> {
        if let Some(q) = &self.consts {
            if !q.is_empty() {
                return Err(self.err_at(
                    self.text.len(),
                    format!("expected no more consts, found {} unused", q.len()),
                ));
            }
        }
        Ok(())
    }

    // ---- binders, types, atoms ----------------------------------------

    /// Reads `name:type` and binds `name` in the scope.
    pub fn read_binder(&mut self, jx: &mut RawJaxpr, scope: &mut Scope) -> PResult<Var> {
        let name_tok = self.expect(Tok::Word, "a variable name")?;
        self.expect(Tok::Colon, "`:` and a type")?;
        let aval = self.read_type(jx, scope)?;
        let vma = self.read_vma()?;
        let name = self.slice(name_tok);
        let v = Var(jx.vars.len() as u32);
        if let Some(axes) = vma {
            jx.vma.push((v, axes));
        }
        jx.vars.push(aval);
        jx.referenced.push(false);
        self.note_binder(jx, name);
        if name == "_" {
            jx.underscore.push(true);
            scope.last_underscore = Some(v);
            scope.underscores.push(v);
        } else {
            jx.underscore.push(false);
            scope.names.insert(name.to_string(), v);
        }
        Ok(v)
    }

    /// Reads the `{V:x}` or `{V:(a,b)}` that JAX glues to a type inside a
    /// `shard_map` with `check_vma=True`, if there.
    pub fn read_vma(&mut self) -> PResult<Option<Vec<String>>> {
        let t = self.peek();
        let glued = t.start == self.tok(self.pos.saturating_sub(1)).end;
        let v = self.tok(self.pos + 1);
        if !(t.kind == Tok::LBrace
            && glued
            && v.kind == Tok::Word
            && self.slice(v) == "V"
            && self.kind_at(2) == Tok::Colon)
        {
            return Ok(None);
        }
        self.bump();
        self.bump();
        self.bump();
        let mut axes = Vec::new();
        if self.peek_kind() == Tok::LParen {
            self.bump();
            while self.peek_kind() != Tok::RParen {
                let w = self.expect(Tok::Word, "an axis name")?;
                axes.push(self.slice(w).to_string());
                if self.peek_kind() == Tok::Comma {
                    self.bump();
                }
            }
            self.bump();
        } else {
            let w = self.expect(Tok::Word, "an axis name")?;
            axes.push(self.slice(w).to_string());
        }
        self.expect(Tok::RBrace, "`}` after the varying axes")?;
        Ok(Some(axes))
    }

    /// Reads `f32[2,a]` or `Ref<space>{f32[2]}`.
    pub fn read_type(&mut self, jx: &mut RawJaxpr, scope: &mut Scope) -> PResult<Aval> {
        let t = self.peek();
        if t.kind == Tok::Word && self.slice(t) == "Ref" {
            self.bump();
            let mut space = MemorySpace::Default;
            let s = self.peek();
            if s.kind == Tok::Word && self.slice(s).starts_with('<') {
                self.bump();
                let name = self.slice(s).trim_start_matches('<').trim_end_matches('>');
                if name != "default" {
                    space = MemorySpace::Named(name.to_string());
                }
            }
            self.expect(Tok::LBrace, "`{` after `Ref`")?;
            let inner = self.read_array_type(Some((jx, scope)))?;
            self.expect(Tok::RBrace, "`}`")?;
            return Ok(Aval::Ref(AbstractRef {
                inner,
                memory_space: space,
            }));
        }
        Ok(Aval::Array(self.read_array_type(Some((jx, scope)))?))
    }

    /// Reads `dtype[dims]`; dimension names resolve in `ctx` when given.
    pub fn read_array_type(
        &mut self,
        mut ctx: Option<(&mut RawJaxpr, &mut Scope)>,
    ) -> PResult<ShapedArray> {
        let t = self.peek();
        let dtype = if t.kind == Tok::Word {
            DType::from_name(self.slice(t))
        } else {
            None
        };
        // A typed key, `key<fry>`: the word `key` and the word `<fry>`.
        let dtype = match dtype {
            None if t.kind == Tok::Word && self.slice(t) == "key" => {
                self.bump();
                let i = self.peek();
                let name = format!("key{}", self.slice(i));
                match (i.kind, DType::from_name(&name)) {
                    (Tok::Word, Some(d)) => Some(d),
                    _ => return Err(self.expected("a PRNG implementation such as `<fry>`")),
                }
            }
            d => d,
        };
        let Some(dtype) = dtype else {
            return Err(self.expected("a dtype such as `f32`"));
        };
        self.bump();
        self.expect(Tok::LBrack, "`[` after the dtype")?;
        let mut shape = Vec::new();
        if self.peek_kind() != Tok::RBrack {
            loop {
                let d = self.peek();
                match d.kind {
                    Tok::Num => {
                        let n: usize = self
                            .slice(d)
                            .parse()
                            .map_err(|_| self.expected("a dimension size"))?;
                        self.bump();
                        shape.push(Dim::Const(n));
                    }
                    Tok::Word if ctx.is_some() => {
                        let name = self.slice(d);
                        let Some((jx, scope)) = ctx.as_mut() else {
                            return Err(self.expected("a dimension size"));
                        };
                        let earlier = self.eqn_binders.iter().rposition(|b| *b == name);
                        let dim = match earlier {
                            // Resolved to the binder's var in `bind_outputs`.
                            Some(k) => crate::shape::out_dim(k),
                            None => Dim::Var(lookup(scope, jx, name).ok_or_else(|| {
                                self.err_at(d.start, format!("unbound variable `{name}`"))
                            })?),
                        };
                        self.bump();
                        shape.push(dim);
                    }
                    _ => return Err(self.expected("a dimension size")),
                }
                if self.peek_kind() == Tok::Comma {
                    self.bump();
                } else {
                    break;
                }
            }
        }
        self.expect(Tok::RBrack, "`,` or `]` in the shape")?;
        Ok(ShapedArray::new(dtype, shape))
    }

    /// Reads a variable reference or a literal.
    pub fn read_atom(&mut self, jx: &mut RawJaxpr, scope: &mut Scope) -> PResult<Atom> {
        let t = self.peek();
        let text = self.slice(t);
        let literal_word = matches!(text, "True" | "False" | "nan" | "inf");
        match t.kind {
            Tok::Num => self.read_literal().map(Atom::Lit),
            Tok::Word if literal_word && self.kind_at(1) == Tok::Colon => {
                self.read_literal().map(Atom::Lit)
            }
            Tok::Word if text == "True" || text == "False" => self.read_literal().map(Atom::Lit),
            Tok::Word if text == "_" => {
                self.bump();
                if scope.underscores.is_empty() {
                    return Err(self.err_at(t.start, "unbound variable `_`"));
                }
                // Which `_` this is depends on the outvars: resolved later.
                scope.pending.push(scope.underscores.len());
                Ok(Atom::Var(Var(
                    PENDING_BASE + (scope.pending.len() - 1) as u32
                )))
            }
            Tok::Word => {
                self.bump();
                let v = lookup(scope, jx, text)
                    .ok_or_else(|| self.err_at(t.start, format!("unbound variable `{text}`")))?;
                Ok(Atom::Var(v))
            }
            _ => Err(self.expected("a variable or a literal")),
        }
    }

    /// Reads `value:dtype[]` (or an untyped `value`, as older JAX printed).
    fn read_literal(&mut self) -> PResult<Literal> {
        let t = self.bump();
        let text = self.slice(t);
        let dtype = if self.peek_kind() == Tok::Colon {
            self.bump();
            let ty = self.read_array_type(None)?;
            if !ty.shape.is_empty() {
                return Err(self.err_at(
                    t.start,
                    "expected a scalar literal type `dtype[]`, found a shaped type",
                ));
            }
            ty.dtype
        } else if text == "True" || text == "False" {
            DType::Bool
        } else if text.ends_with('j') || text.ends_with("j)") {
            DType::C128
        } else if text.contains(['.', 'e', 'n']) {
            DType::F64
        } else {
            DType::I64
        };
        let bad = || {
            self.err_at(
                t.start,
                format!("expected a {dtype} literal, found `{text}`"),
            )
        };
        let value = match dtype {
            DType::Bool => match text {
                "True" => Scalar::Bool(true),
                "False" => Scalar::Bool(false),
                _ => return Err(bad()),
            },
            DType::I8 | DType::I16 | DType::I32 | DType::I64 => {
                Scalar::Int(text.parse::<i64>().map_err(|_| bad())?)
            }
            DType::U8 | DType::U16 | DType::U32 | DType::U64 => {
                Scalar::UInt(text.parse::<u64>().map_err(|_| bad())?)
            }
            DType::F16 | DType::BF16 | DType::F32 | DType::F64 => {
                Scalar::Float(parse_float(text).ok_or_else(bad)?)
            }
            DType::C64 | DType::C128 => {
                let (re, im) = parse_complex(text).ok_or_else(bad)?;
                Scalar::Complex(re, im)
            }
            DType::KeyFry => return Err(bad()),
        };
        Ok(Literal { value, dtype })
    }

    // ---- equations -----------------------------------------------------

    /// Whether the next tokens end the operand list of an equation.
    fn at_eqn_end(&self) -> bool {
        let t = self.peek();
        match t.kind {
            Tok::Semi | Tok::RBrace | Tok::Eof | Tok::Eq | Tok::RParen | Tok::RBrack => true,
            Tok::Word => {
                let s = self.slice(t);
                let next = self.kind_at(1);
                if s == "in" && next == Tok::LParen {
                    return true;
                }
                match next {
                    Tok::LBrack => true,
                    Tok::Colon if matches!(s, "True" | "False") => false,
                    // `inf:f32[]` on the operands' line is a literal; on a
                    // new line it may be the first binder of the next eqn.
                    Tok::Colon if matches!(s, "nan" | "inf") => {
                        self.newline_before(self.pos) && self.binders_ahead()
                    }
                    Tok::Colon => true,
                    _ => false,
                }
            }
            _ => false,
        }
    }

    /// Whether a line break separates token `i` from the one before it.
    fn newline_before(&self, i: usize) -> bool {
        let prev_end = self.tok(i.saturating_sub(1)).end;
        let start = self.tok(i).start;
        self.text
            .get(prev_end..start)
            .is_some_and(|gap| gap.contains('\n'))
    }

    /// From the next token: do `x:type` groups lead to `=` or `<-`? (They
    /// are binders then, else literals.) Bounded by the groups it skips.
    fn binders_ahead(&self) -> bool {
        let mut i = self.pos;
        loop {
            let t = self.tok(i);
            if matches!(t.kind, Tok::Eq | Tok::Arrow | Tok::Comma) {
                return true;
            }
            if !matches!(t.kind, Tok::Word | Tok::Num) || self.tok(i + 1).kind != Tok::Colon {
                return false;
            }
            i += 2;
            // skip the type
            if self.tok(i).kind == Tok::Word && self.slice(self.tok(i)) == "Ref" {
                while !matches!(self.tok(i).kind, Tok::RBrace | Tok::Eof) {
                    i += 1;
                }
                i += 1;
            } else {
                while !matches!(self.tok(i).kind, Tok::RBrack | Tok::Eof) {
                    i += 1;
                }
                i += 1;
            }
        }
    }

    fn read_eqn(&mut self, jx: &mut RawJaxpr, scope: &mut Scope) -> PResult<()> {
        let start = self.peek().start;
        // An equation without results (`debug_print[...] a`).
        let no_results = self.peek_kind() == Tok::Word
            && self.kind_at(1) == Tok::LBrack
            && NO_RESULTS.contains(&self.slice(self.peek()));
        // An arrow form that starts with `ref[...]` (store / addupdate).
        if !no_results && self.peek_kind() == Tok::Word && self.kind_at(1) == Tok::LBrack {
            return self.read_state_eqn(jx, scope, Vec::new(), start);
        }
        let mut pending = Vec::new();
        let mut vmas = Vec::new();
        while !no_results && self.peek_kind() == Tok::Word {
            if self.kind_at(1) == Tok::LBrack {
                break;
            }
            // Bind after the whole equation is read: operands see the old names.
            let name_tok = self.bump();
            self.expect(Tok::Colon, "`:` and a type")?;
            self.eqn_binders = pending.iter().map(|(n, _)| *n).collect();
            let aval = self.read_type(jx, scope);
            self.eqn_binders.clear();
            pending.push((self.slice(name_tok), aval?));
            vmas.push(self.read_vma()?);
            if self.peek_kind() == Tok::Comma {
                self.bump();
            }
        }
        let arrow = matches!(self.peek_kind(), Tok::Arrow)
            || (self.peek_kind() == Tok::Word && self.kind_at(1) == Tok::LBrack);
        if arrow && !no_results {
            return self.read_state_eqn(jx, scope, pending, start);
        }
        if !no_results {
            self.expect(Tok::Eq, "`=` after the binders")?;
        }
        let name_tok = self.expect(Tok::Word, "a primitive name")?;
        let name = self.slice(name_tok).to_string();
        let mut params = Vec::new();
        if self.peek_kind() == Tok::LBrack {
            self.caller_binders = Some(
                pending
                    .iter()
                    .map(|(n, a)| (*n == "_", a.clone()))
                    .collect(),
            );
            // A jit body may name its outvars after these binders.
            let names: Vec<&str> = pending.iter().map(|(n, _)| *n).collect();
            self.show(names.iter().copied());
            let read = self.read_params();
            self.hide(names.iter());
            self.caller_binders = None;
            params = read?;
        }
        let mut inputs = Vec::new();
        while !self.at_eqn_end() {
            inputs.push(self.read_atom(jx, scope)?);
        }
        let outputs = self.bind_outputs(jx, scope, pending);
        for (v, vma) in outputs.iter().zip(vmas) {
            if let Some(axes) = vma {
                jx.vma.push((*v, axes));
            }
        }
        jx.eqns.push(RawEqn {
            name,
            pos: name_tok.start,
            params,
            inputs,
            outputs,
            state: None,
        });
        Ok(())
    }

    /// Binds the output binders read before an arrow form.
    pub fn bind_outputs(
        &mut self,
        jx: &mut RawJaxpr,
        scope: &mut Scope,
        pre: Vec<(&'a str, Aval)>,
    ) -> Vec<Var> {
        let mut outputs: Vec<Var> = Vec::new();
        for (name, mut aval) in pre {
            let v = Var(jx.vars.len() as u32);
            let shape = match &mut aval {
                Aval::Array(a) => &mut a.shape,
                Aval::Ref(r) => &mut r.inner.shape,
            };
            for d in shape.iter_mut() {
                if let Some(k) = crate::shape::as_out_dim(*d) {
                    if let Some(&w) = outputs.get(k) {
                        *d = Dim::Var(w);
                    }
                }
            }
            jx.vars.push(aval);
            jx.referenced.push(false);
            jx.underscore.push(name == "_");
            self.note_binder(jx, name);
            if name == "_" {
                scope.last_underscore = Some(v);
                scope.underscores.push(v);
            } else {
                scope.names.insert(name.to_string(), v);
            }
            outputs.push(v);
        }
        outputs
    }

    fn read_outvars(
        &mut self,
        jx: &mut RawJaxpr,
        scope: &mut Scope,
        caller_binders: Option<&[(bool, Aval)]>,
    ) -> PResult<()> {
        self.expect(Tok::LParen, "`(` after `in`")?;
        let mut underscores = Vec::new();
        while self.peek_kind() != Tok::RParen {
            let t = self.peek();
            if t.kind == Tok::Word && self.slice(t) == "_" {
                self.bump();
                underscores.push(jx.outvars.len());
                jx.outvars.push(Atom::Var(Var(u32::MAX)));
            } else {
                let a = self.read_atom(jx, scope)?;
                jx.outvars.push(a);
            }
            if self.peek_kind() == Tok::Comma {
                self.bump();
            } else if self.peek_kind() != Tok::RParen {
                return Err(self.expected("`,` or `)` in the outvars"));
            }
        }
        self.bump();
        // `_` outvars: the inner names of outputs the caller drops. Match
        // them, in order, with the last `_` equation binders.
        let mut matched = Vec::new();
        if !underscores.is_empty() {
            let cands: Vec<Var> = jx
                .eqns
                .iter()
                .flat_map(|e| e.outputs.iter().copied())
                .filter(|v| jx.underscore.get(v.index()).copied().unwrap_or(false))
                .collect();
            if cands.is_empty() {
                let t = self.tok(self.pos.saturating_sub(1));
                return Err(self.err_at(
                    t.start,
                    "expected a variable in the outvars, found `_` with no `_` binder",
                ));
            }
            let m = underscores.len();
            let mut taken = vec![false; cands.len()];
            for (k, &slot) in underscores.iter().enumerate() {
                // The last binders in order, unless the caller's dropped
                // output at this slot has another type: then the last
                // unmatched `_` binder of that type.
                let want = caller_binders.and_then(|c| c.get(slot)).map(|(_, a)| a);
                let default = (cands.len() + k).saturating_sub(m).min(cands.len() - 1);
                let fits = |i: usize| {
                    !taken[i] && want.is_none_or(|w| jx.vars.get(cands[i].index()) == Some(w))
                };
                let idx = if fits(default) {
                    default
                } else {
                    (0..cands.len()).rev().find(|&i| fits(i)).unwrap_or(default)
                };
                taken[idx] = true;
                let v = cands[idx];
                if let Some(r) = jx.referenced.get_mut(v.index()) {
                    *r = true;
                }
                if let Some(o) = jx.outvars.get_mut(slot) {
                    *o = Atom::Var(v);
                }
                matched.push(v);
            }
        }
        jx.underscores = std::mem::take(&mut scope.underscores);
        jx.pending = std::mem::take(&mut scope.pending);
        jx.matched = matched;
        Ok(())
    }
}

/// Looks a name up in a scope and marks the var read.
pub(crate) fn lookup(scope: &Scope, jx: &mut RawJaxpr, name: &str) -> Option<Var> {
    let v = if name == "_" {
        scope.last_underscore
    } else {
        scope.names.get(name).copied()
    }?;
    if let Some(r) = jx.referenced.get_mut(v.index()) {
        *r = true;
    }
    Some(v)
}

/// Parses a Python float repr: `1.5`, `1e-05`, `nan`, `inf`, `-inf`.
pub(crate) fn parse_float(text: &str) -> Option<f64> {
    match text {
        "nan" => Some(f64::NAN),
        "inf" => Some(f64::INFINITY),
        "-inf" => Some(f64::NEG_INFINITY),
        _ => text.parse::<f64>().ok(),
    }
}

/// Parses a Python complex repr: `1j`, `(1+2j)`, `(0.5-0.25j)`, `(-0-1j)`.
pub(crate) fn parse_complex(text: &str) -> Option<(f64, f64)> {
    let inner = match text.strip_prefix('(') {
        Some(t) => t.strip_suffix(')')?,
        None => return Some((0.0, parse_float(text.strip_suffix('j')?)?)),
    };
    let inner = inner.strip_suffix('j')?;
    let bytes = inner.as_bytes();
    // The sign between the parts: the last `+`/`-` not at the start and not
    // an exponent's sign.
    let split = (1..bytes.len())
        .rev()
        .find(|&k| matches!(bytes[k], b'+' | b'-') && !matches!(bytes[k - 1], b'e' | b'E'))?;
    let re = parse_float(&inner[..split])?;
    let im = parse_float(inner[split..].trim_start_matches('+'))?;
    Some((re, im))
}

/// A type as text, for messages.
pub(crate) fn aval_text(a: &Aval) -> String {
    let arr = a.array();
    let dims: Vec<String> = arr
        .shape
        .iter()
        .map(|d| match d {
            Dim::Const(n) => n.to_string(),
            Dim::Var(v) => format!("#{}", v.0),
        })
        .collect();
    let inner = format!("{}[{}]", arr.dtype, dims.join(","));
    match a {
        Aval::Array(_) => inner,
        Aval::Ref(_) => format!("Ref{{{inner}}}"),
    }
}
