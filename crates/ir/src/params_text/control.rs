//! Params text of the calls and loops whose params JAX elides or orders
//! specially: `scan` (`linear`, `_split_transpose`, a boolean `unroll`),
//! `jit` and the custom-derivative calls (`name` printed first, zero
//! `num_consts` elided) and `remat2` (its policy kept as written).

use super::codec::{py_bool, tuple, Bool, Closed, ClosedTuple, Num, Word};
use super::table::bool_word;
use super::{Codec, ParamsText, ParseCx, PrintCx, Printed};
use crate::jaxpr::ClosedJaxpr;
use crate::parse::build::bare;
use crate::parse::params::Params;
use crate::parse::syntax::PResult;
use crate::primitive::{
    CondParams, CustomJvpCallParams, CustomLinearSolveParams, CustomVjpCallParams, JitParams,
    LinearSolveTuple, RematParams, ScanParams,
};
use crate::print::PV;

fn text(s: impl Into<String>) -> PV<'static> {
    PV::Text(s.into())
}

/// `branches_platforms` (a `cond` on `platform_index`) is printed only
/// when set.
impl ParamsText for CondParams {
    fn print<'a>(&'a self, _: &PrintCx<'_>, out: &mut Printed<'a>) {
        out.push(("branches", ClosedTuple::print(&self.branches)));
        if let Some(p) = &self.branches_platforms {
            out.push(("branches_platforms", super::marker::print_platforms(p)));
        }
    }
    fn parse(cx: &mut ParseCx<'_, '_, '_>) -> PResult<Self> {
        let branches = cx.field::<ClosedTuple, _>("branches", None)?;
        let branches_platforms = match cx.p.get("branches_platforms") {
            Some(v) => Some(super::marker::parse_platforms(cx, v)?),
            None => None,
        };
        Ok(CondParams {
            branches,
            branches_platforms,
        })
    }
}

/// JAX 0.10.2's scan has neither `linear` nor `_split_transpose`; they are
/// printed only when set, so that such jaxprs round-trip.
impl ParamsText for ScanParams {
    fn print<'a>(&'a self, _: &PrintCx<'_>, out: &mut Printed<'a>) {
        if self.split_transpose {
            out.push(("_split_transpose", text("True")));
        }
        out.push(("jaxpr", Closed::print(&self.jaxpr)));
        out.push(("length", Num::print(&self.length)));
        if self.linear.iter().any(|&b| b) {
            let items = self
                .linear
                .iter()
                .map(|&b| py_bool(b).to_string())
                .collect();
            out.push(("linear", text(tuple(items))));
        }
        out.push(("num_carry", Num::print(&self.num_carry)));
        out.push(("num_consts", Num::print(&self.num_consts)));
        out.push(("reverse", Bool::print(&self.reverse)));
        out.push(("unroll", Num::print(&self.unroll)));
    }
    fn parse(cx: &mut ParseCx<'_, '_, '_>) -> PResult<Self> {
        let p = cx.p;
        let unroll = match p.get("unroll") {
            None => 1,
            Some(v) => match bool_word(v) {
                Some(b) => i64::from(b),
                None => p.int_of(v)?,
            },
        };
        let linear = match p.get("linear") {
            None => vec![false; cx.n_inputs],
            Some(v) => p
                .items_of(v)?
                .iter()
                .map(|x| p.bool_of(x))
                .collect::<PResult<_>>()?,
        };
        Ok(ScanParams {
            jaxpr: cx.field::<Closed, _>("jaxpr", None)?,
            length: cx.field::<Num, _>("length", None)?,
            reverse: cx.field::<Bool, _>("reverse", Some(false))?,
            num_consts: cx.field::<Num, _>("num_consts", None)?,
            num_carry: cx.field::<Num, _>("num_carry", None)?,
            unroll,
            linear,
            split_transpose: cx.field::<Bool, _>("_split_transpose", Some(false))?,
        })
    }
}

impl ParamsText for JitParams {
    fn print<'a>(&'a self, _: &PrintCx<'_>, out: &mut Printed<'a>) {
        out.push(("name", Word::print(&self.name)));
        out.push(("jaxpr", Closed::print(&self.jaxpr)));
    }
    fn parse(cx: &mut ParseCx<'_, '_, '_>) -> PResult<Self> {
        Ok(JitParams {
            name: cx.p.text_of("name")?,
            jaxpr: cx.field::<Closed, _>("jaxpr", None)?,
        })
    }
    fn name_first(&self) -> bool {
        true
    }
}

/// `num_consts` is printed only when non-zero.
fn push_num_consts(out: &mut Printed<'_>, n: usize) {
    if n != 0 {
        out.push(("num_consts", text(n.to_string())));
    }
}

impl ParamsText for CustomJvpCallParams {
    fn print<'a>(&'a self, _: &PrintCx<'_>, out: &mut Printed<'a>) {
        out.push(("name", Word::print(&self.name)));
        out.push(("call_jaxpr", Closed::print(&self.call_jaxpr)));
        out.push(("jvp", Word::print(&self.jvp)));
        push_num_consts(out, self.num_consts);
        out.push(("symbolic_zeros", Bool::print(&self.symbolic_zeros)));
    }
    fn parse(cx: &mut ParseCx<'_, '_, '_>) -> PResult<Self> {
        Ok(CustomJvpCallParams {
            name: cx.p.text_of("name")?,
            call_jaxpr: cx.field::<Closed, _>("call_jaxpr", None)?,
            jvp: cx.p.text_of("jvp")?,
            num_consts: cx.field::<Num, _>("num_consts", Some(0))?,
            symbolic_zeros: cx.field::<Bool, _>("symbolic_zeros", Some(false))?,
        })
    }
    fn name_first(&self) -> bool {
        true
    }
}

impl ParamsText for CustomVjpCallParams {
    fn print<'a>(&'a self, _: &PrintCx<'_>, out: &mut Printed<'a>) {
        out.push(("name", Word::print(&self.name)));
        out.push(("bwd", Word::print(&self.bwd)));
        out.push(("call_jaxpr", Closed::print(&self.call_jaxpr)));
        out.push(("fwd", Word::print(&self.fwd)));
        push_num_consts(out, self.num_consts);
        out.push(("symbolic_zeros", Bool::print(&self.symbolic_zeros)));
    }
    fn parse(cx: &mut ParseCx<'_, '_, '_>) -> PResult<Self> {
        Ok(CustomVjpCallParams {
            name: cx.p.text_of("name")?,
            call_jaxpr: cx.field::<Closed, _>("call_jaxpr", None)?,
            fwd: cx.p.text_of("fwd")?,
            bwd: cx.p.text_of("bwd")?,
            num_consts: cx.field::<Num, _>("num_consts", Some(0))?,
            symbolic_zeros: cx.field::<Bool, _>("symbolic_zeros", Some(false))?,
        })
    }
    fn name_first(&self) -> bool {
        true
    }
}

/// `policy` is kept as written (`None` or e.g. `DotsSaveable(...)`).
impl ParamsText for RematParams {
    fn print<'a>(&'a self, _: &PrintCx<'_>, out: &mut Printed<'a>) {
        out.push(("differentiated", Bool::print(&self.differentiated)));
        out.push(("jaxpr", PV::Jaxpr(&self.jaxpr)));
        let policy = self.policy.clone().unwrap_or_else(|| "None".into());
        out.push(("policy", text(policy)));
        out.push(("prevent_cse", Bool::print(&self.prevent_cse)));
    }
    fn parse(cx: &mut ParseCx<'_, '_, '_>) -> PResult<Self> {
        let p = cx.p;
        Ok(RematParams {
            jaxpr: bare(cx.field::<Closed, _>("jaxpr", None)?),
            prevent_cse: cx.field::<Bool, _>("prevent_cse", Some(true))?,
            differentiated: cx.field::<Bool, _>("differentiated", Some(false))?,
            policy: match p.get("policy") {
                None => None,
                Some(v) if Params::is_none(v) => None,
                Some(v) => Some(p.src(v)),
            },
        })
    }
}

/// The fields of JAX's `_LinearSolveTuple`, in order.
const SOLVE_FIELDS: [&str; 4] = ["matvec", "vecmat", "solve", "transpose_solve"];

/// `_LinearSolveTuple(matvec=.., vecmat=.., solve=.., transpose_solve=..)`
/// of the four printed values.
fn solve_tuple(items: [String; 4]) -> String {
    let fields: Vec<String> = SOLVE_FIELDS
        .iter()
        .zip(items)
        .map(|(k, v)| format!("{k}={v}"))
        .collect();
    format!("_LinearSolveTuple({})", fields.join(", "))
}

/// JAX prints the four functions with `str(closed_jaxpr)`: each a whole
/// document of its own (own `let`s, names from `a`), inserted as text.
impl ParamsText for CustomLinearSolveParams {
    fn print<'a>(&'a self, _: &PrintCx<'_>, out: &mut Printed<'a>) {
        let lens = self.const_lengths.as_array().map(|n| n.to_string());
        out.push(("const_lengths", text(solve_tuple(lens))));
        let docs = self.jaxprs.as_array().map(|j| match j {
            Some(c) => c.jaxpr.to_string(),
            None => "None".to_string(),
        });
        out.push(("jaxprs", text(solve_tuple(docs))));
    }
    fn parse(cx: &mut ParseCx<'_, '_, '_>) -> PResult<Self> {
        let p = cx.p;
        let lens_v = p.req("const_lengths")?;
        let lens_args = p.kwargs_of(lens_v, "_LinearSolveTuple")?;
        let mut lens = [0usize; 4];
        for (k, n) in SOLVE_FIELDS.iter().zip(lens.iter_mut()) {
            *n = p.usize_of(p.kwarg(lens_args, k, lens_v)?)?;
        }
        let js_v = p.req("jaxprs")?;
        let js_args = p.kwargs_of(js_v, "_LinearSolveTuple")?;
        let mut js: [Option<ClosedJaxpr>; 4] = Default::default();
        for (k, j) in SOLVE_FIELDS.iter().zip(js.iter_mut()) {
            let v = p.kwarg(js_args, k, js_v)?;
            if !Params::is_none(v) {
                *j = Some(cx.b.jaxpr_param(p, v)?);
            }
        }
        let [matvec, vecmat, solve, transpose_solve] = js;
        if matvec.is_none() || solve.is_none() {
            return Err(super::bad(cx, js_v, "`matvec` and `solve` jaxprs"));
        }
        Ok(CustomLinearSolveParams {
            const_lengths: LinearSolveTuple {
                matvec: lens[0],
                vecmat: lens[1],
                solve: lens[2],
                transpose_solve: lens[3],
            },
            jaxprs: LinearSolveTuple {
                matvec,
                vecmat,
                solve,
                transpose_solve,
            },
        })
    }
}
