//! Lowering of collectives over positional axes only (JAX's batched form of
//! a named collective, `psum[axes=(0,)]`) to the plain reductions they are
//! (`reduce_sum[axes=(0,)]`), so backends need no rule of their own.
//! Collectives that still name an axis are left alone: they are an error
//! wherever they are evaluated.

use crate::jaxpr::Jaxpr;
use crate::primitive::{AllReduceParams, ReduceParams, Reduction};
use crate::primitive::{AxisRef, CollectiveOp, Primitive, ReduceOp};

/// `jaxpr` with every positional-only `psum`/`pmax`/`pmin` (here and in
/// nested jaxprs) replaced by the matching reduction.
pub fn lower_positional_collectives(jaxpr: &Jaxpr) -> Jaxpr {
    let mut out = jaxpr.clone();
    for eqn in &mut out.eqns {
        if let Some(p) = positional_reduce(&eqn.primitive) {
            eqn.primitive = p;
        } else if !eqn.primitive.sub_jaxprs().is_empty() {
            eqn.primitive = eqn
                .primitive
                .map_sub_jaxprs(&mut |j| lower_positional_collectives(j));
        }
    }
    out
}

fn positional_reduce(p: &Primitive) -> Option<Primitive> {
    let AllReduceParams { op, axes } = p.params::<AllReduceParams>()?;
    let axes = axes
        .iter()
        .map(|a| match a {
            AxisRef::Pos(p) => Some(*p),
            AxisRef::Name(_) => None,
        })
        .collect::<Option<Vec<usize>>>()?;
    let op = match op {
        CollectiveOp::Sum => ReduceOp::Sum,
        CollectiveOp::Max => ReduceOp::Max,
        CollectiveOp::Min => ReduceOp::Min,
    };
    Some(Primitive::Reduction(Reduction::Reduce(ReduceParams::new(
        op, axes,
    ))))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{eval_closed_jaxpr, parse_jaxpr, ClosedJaxpr, HostArray, Storage};

    #[test]
    fn positional_collectives_become_reductions_with_equal_values() {
        let text = "{ lambda ; a:f32[4,3]. let \
            b:f32[3] = psum[axes=(0,) axis_index_groups=None] a ; \
            c:f32[4] = pmax[axes=(1,) axis_index_groups=None] a ; \
            d:f32[] = pmin[axes=(0, 1) axis_index_groups=None] a ; \
            e:i32[] = add 0:i32[] 1:i32[] ; \
            f:f32[3] = cond[branches=(\
              { lambda ; g:f32[4,3]. let h:f32[3] = psum[axes=(0,) axis_index_groups=None] g in (h,) }\
              { lambda ; i:f32[4,3]. let j:f32[3] = pmin[axes=(0,) axis_index_groups=None] i in (j,) }\
            )] e a \
            in (b, c, d, f) }";
        let j = parse_jaxpr(text).unwrap();
        let lowered = lower_positional_collectives(&j);
        crate::check_jaxpr(&lowered).unwrap();
        let printed = lowered.to_string();
        assert!(
            !printed.contains("psum") && !printed.contains("pmin"),
            "{printed}"
        );
        assert!(printed.contains("reduce_sum[axes=(0,)"), "{printed}");
        let vals: Vec<f32> = (0..12).map(|k| ((k * 7) % 11) as f32 - 4.5).collect();
        let x = HostArray::new(vec![4, 3], Storage::F32(vals)).unwrap();
        let eval = |j: &Jaxpr, x: &HostArray| {
            eval_closed_jaxpr(
                &ClosedJaxpr::without_consts(j.clone()),
                std::slice::from_ref(x),
            )
            .unwrap()
        };
        let (want, got) = (eval(&j, &x), eval(&lowered, &x));
        assert_eq!(format!("{want:?}"), format!("{got:?}"));
        // A named collective stays.
        let named = parse_jaxpr(
            "{ lambda ; a:f32[3]. let b:f32[3] = psum[axes=('i',) axis_index_groups=None] a in (b,) }",
        )
        .unwrap();
        assert_eq!(lower_positional_collectives(&named), named);
    }
}
