//! Field codecs: one param value's printed form and its parse, for each
//! kind of value the params tables use; and the Python reprs they print
//! (`True`, tuples with `(1,)`, `np.int64(3)`).

use super::{bad, ParseCx, Src};
use crate::dtype::DType;
use crate::jaxpr::ClosedJaxpr;
use crate::parse::params::{PValue, Params};
use crate::parse::syntax::PResult;
use crate::primitive::Ints;
use crate::print::PV;

/// How a value of type `T` prints and parses as one param.
pub(crate) trait Codec<T> {
    /// The printed value.
    fn print(v: &T) -> PV<'_>;
    /// The value read back.
    fn parse(cx: &mut ParseCx<'_, '_, '_>, v: &Src) -> PResult<T>;
}

fn text(s: impl Into<String>) -> PV<'static> {
    PV::Text(s.into())
}

/// A Python bool: `True` / `False`.
pub(crate) fn py_bool(b: bool) -> &'static str {
    if b {
        "True"
    } else {
        "False"
    }
}

/// A Python tuple of already-formatted items: `()`, `(1,)`, `(1, 2)`.
pub(crate) fn tuple(items: Vec<String>) -> String {
    match items.len() {
        0 => "()".to_string(),
        1 => format!("({},)", items[0]),
        _ => format!("({})", items.join(", ")),
    }
}

/// A Python list of ints: `[0, 1]`.
pub(crate) fn list(xs: &[usize]) -> String {
    let items: Vec<String> = xs.iter().map(|x| x.to_string()).collect();
    format!("[{}]", items.join(", "))
}

/// A Python tuple of ints: `(0, 1)`.
pub(crate) fn usizes(xs: &[usize]) -> String {
    tuple(xs.iter().map(|x| x.to_string()).collect())
}

/// A tuple of ints, with those JAX wrote as `np.int64(..)` written so.
pub(crate) fn ints(xs: &Ints) -> String {
    tuple(
        xs.values
            .iter()
            .enumerate()
            .map(|(i, v)| {
                if xs.np_int64.get(i).copied().unwrap_or(false) {
                    format!("np.int64({v})")
                } else {
                    v.to_string()
                }
            })
            .collect(),
    )
}

/// A shape whose dynamic sizes print as `None`: `(3, None)`.
pub(crate) fn shape(xs: &[Option<usize>]) -> String {
    tuple(
        xs.iter()
            .map(|x| match x {
                Some(n) => n.to_string(),
                None => "None".to_string(),
            })
            .collect(),
    )
}

/// A Python int: `3`.
pub(crate) struct Num;

impl Codec<usize> for Num {
    fn print(v: &usize) -> PV<'_> {
        text(v.to_string())
    }
    fn parse(cx: &mut ParseCx<'_, '_, '_>, v: &Src) -> PResult<usize> {
        cx.p.usize_of(v)
    }
}

impl Codec<i64> for Num {
    fn print(v: &i64) -> PV<'_> {
        text(v.to_string())
    }
    fn parse(cx: &mut ParseCx<'_, '_, '_>, v: &Src) -> PResult<i64> {
        cx.p.int_of(v)
    }
}

impl Codec<u32> for Num {
    fn print(v: &u32) -> PV<'_> {
        text(v.to_string())
    }
    fn parse(cx: &mut ParseCx<'_, '_, '_>, v: &Src) -> PResult<u32> {
        let n = cx.p.usize_of(v)?;
        u32::try_from(n).map_err(|_| bad(cx, v, "an int below 2**32"))
    }
}

/// `True` / `False`.
pub(crate) struct Bool;

impl Codec<bool> for Bool {
    fn print(v: &bool) -> PV<'_> {
        text(py_bool(*v))
    }
    fn parse(cx: &mut ParseCx<'_, '_, '_>, v: &Src) -> PResult<bool> {
        cx.p.bool_of(v)
    }
}

/// A numpy dtype name: `float32`.
pub(crate) struct Dt;

impl Codec<DType> for Dt {
    fn print(v: &DType) -> PV<'_> {
        text(v.numpy_name())
    }
    fn parse(cx: &mut ParseCx<'_, '_, '_>, v: &Src) -> PResult<DType> {
        cx.p.dtype_of(v)
    }
}

/// A tuple of ints, each remembering whether JAX wrote it as `np.int64(..)`.
pub(crate) struct IntsT;

impl Codec<Ints> for IntsT {
    fn print(v: &Ints) -> PV<'_> {
        text(ints(v))
    }
    fn parse(cx: &mut ParseCx<'_, '_, '_>, v: &Src) -> PResult<Ints> {
        cx.p.ints_of(v)
    }
}

/// A tuple of int tuples: `((0, 0, 0), (1, 1, 0))`.
pub(crate) struct IntsTuples;

impl Codec<Vec<Ints>> for IntsTuples {
    fn print(v: &Vec<Ints>) -> PV<'_> {
        text(tuple(v.iter().map(ints).collect()))
    }
    fn parse(cx: &mut ParseCx<'_, '_, '_>, v: &Src) -> PResult<Vec<Ints>> {
        let p = cx.p;
        p.items_of(v)?.iter().map(|t| p.ints_of(t)).collect()
    }
}

/// Int tuple or `None`.
pub(crate) struct OptIntsT;

impl Codec<Option<Ints>> for OptIntsT {
    fn print(v: &Option<Ints>) -> PV<'_> {
        text(v.as_ref().map(ints).unwrap_or_else(|| "None".into()))
    }
    fn parse(cx: &mut ParseCx<'_, '_, '_>, v: &Src) -> PResult<Option<Ints>> {
        if Params::is_none(v) {
            Ok(None)
        } else {
            cx.p.ints_of(v).map(Some)
        }
    }
}

/// A tuple of axes: `(0, 2)`.
pub(crate) struct Axes;

impl Codec<Vec<usize>> for Axes {
    fn print(v: &Vec<usize>) -> PV<'_> {
        text(usizes(v))
    }
    fn parse(cx: &mut ParseCx<'_, '_, '_>, v: &Src) -> PResult<Vec<usize>> {
        cx.p.usizes_of(v)
    }
}

/// Axes or `None`.
pub(crate) struct OptAxes;

impl Codec<Option<Vec<usize>>> for OptAxes {
    fn print(v: &Option<Vec<usize>>) -> PV<'_> {
        text(v.as_deref().map(usizes).unwrap_or_else(|| "None".into()))
    }
    fn parse(cx: &mut ParseCx<'_, '_, '_>, v: &Src) -> PResult<Option<Vec<usize>>> {
        if Params::is_none(v) {
            Ok(None)
        } else {
            cx.p.usizes_of(v).map(Some)
        }
    }
}

/// A shape whose dynamic sizes print as `None`: `(3, None)`.
pub(crate) struct Shape;

impl Codec<Vec<Option<usize>>> for Shape {
    fn print(v: &Vec<Option<usize>>) -> PV<'_> {
        text(shape(v))
    }
    fn parse(cx: &mut ParseCx<'_, '_, '_>, v: &Src) -> PResult<Vec<Option<usize>>> {
        cx.p.opt_sizes_of(v)
    }
}

/// A word kept as written: a function name, `<lambda>`.
pub(crate) struct Word;

impl Codec<String> for Word {
    fn print(v: &String) -> PV<'_> {
        text(v.clone())
    }
    fn parse(cx: &mut ParseCx<'_, '_, '_>, v: &Src) -> PResult<String> {
        Ok(cx.p.src(v))
    }
}

/// A closed jaxpr: `{ lambda ... }` or the name of a `let`-bound one.
pub(crate) struct Closed;

impl Codec<ClosedJaxpr> for Closed {
    fn print(v: &ClosedJaxpr) -> PV<'_> {
        PV::Jaxpr(&v.jaxpr)
    }
    fn parse(cx: &mut ParseCx<'_, '_, '_>, v: &Src) -> PResult<ClosedJaxpr> {
        cx.b.jaxpr_param(cx.p, v)
    }
}

/// A tuple of closed jaxprs (`branches=( {..} {..} )`).
pub(crate) struct ClosedTuple;

impl Codec<Vec<ClosedJaxpr>> for ClosedTuple {
    fn print(v: &Vec<ClosedJaxpr>) -> PV<'_> {
        PV::Jaxprs(v.iter().map(|b| &*b.jaxpr).collect())
    }
    fn parse(cx: &mut ParseCx<'_, '_, '_>, v: &Src) -> PResult<Vec<ClosedJaxpr>> {
        let p = cx.p;
        let mut out = Vec::new();
        for br in p.items_of(v)? {
            out.push(cx.b.jaxpr_param(p, br)?);
        }
        Ok(out)
    }
}

/// Whether a param value is the word `w`.
pub(crate) fn is_word(v: &Src, w: &str) -> bool {
    matches!(&v.v, PValue::Word(x) if x == w)
}
