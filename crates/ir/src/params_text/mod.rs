//! Params text: how each primitive's params print, as JAX 0.10 prints them,
//! and how they read back, defined once per params struct.
//!
//! The printer (`print::params`) and the parser (`parse::convert`) both go
//! through [`ParamsText`]: `print` pushes the printed `(key, value)` pairs
//! (the printer sorts them), `parse` reads the struct back from an
//! equation's `[key=value ...]`. Most structs are rows of the
//! [`params_text!`] table in `table.rs`, one field codec per param; the rest
//! implement the trait by hand next to the table, print and parse side by
//! side, because JAX elides or derives some of their params: `arrays.rs`,
//! `control.rs`, `collective.rs`, `state.rs` (the state and Pallas kernel
//! primitives, whose indexers are in the arrow form or in `atomic_rmw`'s
//! `args_tree`) and `pallas.rs` (`pallas_call`).
//!
//! [`text_of`] (printing) and [`parse_by_name`] (parsing) are the only
//! ways in: every primitive's params text is defined here, once.
//!
//! Invariant: for every params value `x` the parser accepts,
//! `parse(print(x)) == x`; the conformance corpus checks the converse
//! (`print(parse(t)) == t`) on JAX's own texts.

mod arrays;
mod callback;
mod codec;
mod collective;
mod control;
mod marker;
mod pallas;
mod random;
mod sharding;
mod state;
mod table;
#[cfg(test)]
mod tests;
mod window;

pub(crate) use codec::Codec;
pub(crate) use table::parse_by_name;

use crate::aval::{Aval, Dim};
use crate::jaxpr::{Eqn, Jaxpr};
use crate::parse::build::Builder;
use crate::parse::params::{Params, PV as Src};
use crate::parse::state::StateForm;
use crate::parse::syntax::PResult;
use crate::primitive::{
    Callback, Collective, Control, Elementwise, Indexing, Linalg, Marker, Pallas, Primitive,
    Random, Reduction, State, Structural, Window,
};
use crate::print::PV;

/// Printed params: `(key, value)` pairs, in any order.
pub(crate) type Printed<'a> = Vec<(&'static str, PV<'a>)>;

/// What a params parser can see: the params as written, the jaxpr builder
/// (for jaxpr-valued params) and the equation's types, from which JAX's
/// elided params are derived.
pub(crate) struct ParseCx<'c, 'p, 'b> {
    /// The primitive's printed name (the op of an op-keyed family).
    pub name: &'c str,
    /// The params as written.
    pub p: &'c Params<'p>,
    /// Builds jaxpr-valued params.
    pub b: &'c mut Builder<'b>,
    /// How many operands the equation has.
    pub n_inputs: usize,
    /// The operands' types (`None` for a literal whose type is not known).
    pub in_avals: &'c [Option<Aval>],
    /// The results' types.
    pub out_avals: &'c [Aval],
    /// What the arrow form said, for an equation written as one
    /// (`y <- r[idx]`); `None` for `= name[...]`.
    pub state: Option<&'c StateForm>,
}

impl ParseCx<'_, '_, '_> {
    /// Reads param `key` with codec `C`; `default` stands in when JAX
    /// elided it.
    pub fn field<C: Codec<T>, T>(&mut self, key: &str, default: Option<T>) -> PResult<T> {
        match (self.p.get(key), default) {
            (Some(v), _) => C::parse(self, v),
            (None, Some(d)) => Ok(d),
            (None, None) => self.p.req(key).and_then(|v| C::parse(self, v)),
        }
    }

    /// Reads param `key`, which JAX prints with one value only (`value`,
    /// e.g. `sharding=None`): absent, that value or `None` (the default,
    /// as other JAX versions print it) is fine; any other value is an error
    /// naming it, since jaxon would otherwise drop it silently.
    pub fn constant(&mut self, key: &str, value: &str) -> PResult<()> {
        match self.p.get(key) {
            Some(v) if self.p.src(v) != value && self.p.src(v) != "None" => Err(self.p.err(
                v.start,
                format!(
                    "param `{key}` of `{}`: only `{value}` is supported, found `{}`",
                    self.name,
                    self.p.src(v)
                ),
            )),
            Some(_) | None => Ok(()),
        }
    }

    /// Marks params that jaxon accepts and ignores, whatever their value:
    /// compiler hints (`compiler_params`, `cost_estimate`) that do not
    /// change what the primitive computes.
    pub fn ignored(&mut self, keys: &[&str]) {
        for k in keys {
            let _ = self.p.get(k);
        }
    }

    /// Sizes of result 0 (`None` where dynamic), for params JAX elides
    /// because the result type shows them.
    pub fn out_sizes(&self) -> Option<Vec<Option<usize>>> {
        self.out_avals.first().map(|a| {
            a.shape()
                .iter()
                .map(|d| match d {
                    crate::aval::Dim::Const(n) => Some(*n),
                    crate::aval::Dim::Var(_) => None,
                })
                .collect()
        })
    }

    /// The rank of operand 0, if its type is known.
    pub fn in_rank(&self) -> Option<usize> {
        self.in_avals
            .first()
            .and_then(|a| a.as_ref())
            .map(|a| a.shape().len())
    }
}

/// What a params printer can see besides the params: the equation, for
/// params JAX derives from its operands (`atomic_rmw`'s `args_tree`).
pub(crate) struct PrintCx<'c> {
    jaxpr: &'c Jaxpr,
    eqn: &'c Eqn,
}

impl<'c> PrintCx<'c> {
    /// The context of equation `eqn` of `jaxpr`.
    pub fn new(jaxpr: &'c Jaxpr, eqn: &'c Eqn) -> PrintCx<'c> {
        PrintCx { jaxpr, eqn }
    }

    /// How many operands the equation has.
    pub fn n_inputs(&self) -> usize {
        self.eqn.inputs.len()
    }

    /// The sizes of operand `k` (a dynamic size reads as 0; empty when
    /// the operand or its type is unknown).
    pub fn in_sizes(&self, k: usize) -> Vec<usize> {
        self.eqn
            .inputs
            .get(k)
            .and_then(|a| self.jaxpr.atom_aval(a))
            .map(|a| {
                a.shape()
                    .iter()
                    .map(|d| match d {
                        Dim::Const(n) => *n,
                        Dim::Var(_) => 0,
                    })
                    .collect()
            })
            .unwrap_or_default()
    }
}

/// One params struct's text, both ways.
pub(crate) trait ParamsText {
    /// Pushes the printed params.
    fn print<'a>(&'a self, cx: &PrintCx<'_>, out: &mut Printed<'a>);
    /// Reads the params of one equation.
    fn parse(cx: &mut ParseCx<'_, '_, '_>) -> PResult<Self>
    where
        Self: Sized;
    /// Whether `name` prints first, before the sorted rest (calls).
    fn name_first(&self) -> bool {
        false
    }
}

/// Wraps a value that parses back with `Src`'s position for errors.
pub(crate) fn bad(cx: &ParseCx<'_, '_, '_>, v: &Src, what: &str) -> crate::parse::ParseError {
    cx.p.err(v.start, format!("expected {what}, found `{}`", cx.p.src(v)))
}

/// The params text of `p`, or `None` for a primitive without params (the
/// unary and binary ops, `select_n`, `clamp`, `dynamic_update_slice`).
pub(crate) fn text_of(p: &Primitive) -> Option<&dyn ParamsText> {
    Some(match p {
        Primitive::Elementwise(f) => match f {
            Elementwise::Unary(_) | Elementwise::Binary(_) => return None,
            Elementwise::SelectN | Elementwise::Clamp | Elementwise::RegularizedIncompleteBeta => {
                return None
            }
            Elementwise::Complex | Elementwise::Real | Elementwise::Imag => return None,
            Elementwise::Conj(x) => x,
            Elementwise::IntegerPow(x) => x,
            Elementwise::Round(x) => x,
            Elementwise::ReducePrecision(x) => x,
            Elementwise::ConvertElementType(x) => x,
            Elementwise::BitcastConvertType(x) => x,
        },
        Primitive::Indexing(f) => match f {
            Indexing::DynamicUpdateSlice => return None,
            Indexing::Slice(x) => x,
            Indexing::DynamicSlice(x) => x,
            Indexing::Gather(x) => x,
            Indexing::Scatter(x) => x,
        },
        Primitive::Structural(f) => match f {
            Structural::BroadcastInDim(x) => x,
            Structural::Reshape(x) => x,
            Structural::Transpose(x) => x,
            Structural::Squeeze(x) => x,
            Structural::Rev(x) => x,
            Structural::Pad(x) => x,
            Structural::Concatenate(x) => x,
            Structural::Iota(x) => x,
            Structural::Split(x) => x,
            Structural::Tile(x) => x,
            Structural::Stack(x) => x,
            Structural::Empty2(x) => x,
        },
        Primitive::Reduction(f) => match f {
            Reduction::Reduce(x) => x,
            Reduction::ArgReduce(x) => x,
            Reduction::Cumulative(x) => x,
            Reduction::Sort(x) => x,
            Reduction::TopK(x) => x,
        },
        Primitive::Linalg(f) => match f {
            Linalg::DotGeneral(x) => x,
            Linalg::ConvGeneralDilated(x) => x,
            Linalg::Cholesky | Linalg::Lu => return None,
            Linalg::TriangularSolve(x) => x,
            Linalg::Qr(x) => x,
            Linalg::Eigh(x) => x,
            Linalg::Svd(x) => x,
            Linalg::Schur(x) => x,
            Linalg::TridiagonalSolve(x) => x,
            Linalg::Fft(x) => x,
        },
        Primitive::Collective(f) => match f {
            Collective::AllReduce(x) => x,
            Collective::AllGather(x) => x,
            Collective::AxisIndex(x) => x,
            Collective::Ppermute(x) => x,
            Collective::AllToAll(x) => x,
            Collective::ReduceScatter(x) => x,
            Collective::Pvary(x) => x,
            Collective::PsumInvariant(x) => x,
        },
        Primitive::Marker(f) => match f {
            Marker::Name(x) => x,
            Marker::DevicePut(x) => x,
            Marker::OptimizationBarrier(x) => x,
            Marker::PlatformIndex(x) => x,
            Marker::Reshard(x) => x,
            Marker::ShardingConstraint(x) => x,
        },
        Primitive::Window(f) => match f {
            Window::ReduceWindow(x) => x,
            Window::Generic(x) => x,
            Window::SelectAndScatterAdd(x) => x,
            Window::SelectAndGatherAdd(x) => x,
        },
        Primitive::Random(f) => match f {
            Random::Seed(x) => x,
            Random::Wrap(x) => x,
            Random::Unwrap(x) => x,
            Random::Bits(x) => x,
            Random::Split(x) => x,
            Random::FoldIn(x) => x,
            Random::Threefry2x32(x) => x,
            Random::Gamma(x) => x,
            Random::RngBitGenerator(x) => x,
        },
        Primitive::Control(f) => match f {
            Control::Cond(x) => x,
            Control::While(x) => x,
            Control::Scan(x) => x,
            Control::ForLoop(x) => x,
            Control::Jit(x) => x,
            Control::CustomJvpCall(x) => x,
            Control::CustomVjpCall(x) => x,
            Control::Remat(x) => x,
            Control::CustomLinearSolve(x) => x,
            Control::ShardMap(x) => x,
        },
        Primitive::State(f) => match f {
            State::Get(x) => x,
            State::Swap(x) => x,
            State::AddUpdate(x) => x,
        },
        Primitive::Pallas(f) => match f {
            Pallas::ProgramId(x) => x,
            Pallas::NumPrograms(x) => x,
            Pallas::Load(x) => x,
            Pallas::Store(x) => x,
            Pallas::AtomicRmw(x) => x,
            Pallas::AtomicCas(x) => x,
            Pallas::PallasCall(x) => x,
        },
        Primitive::Callback(f) => match f {
            Callback::DebugPrint(x) => x,
            Callback::DebugCallback(x) => x,
            Callback::PureCallback(x) => x,
        },
    })
}
