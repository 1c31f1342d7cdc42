//! jvp and vmap of the state primitives `get`, `swap` and `addupdate` on
//! parsed jaxprs with `Ref` inputs (see `table_kit` for the checks).

use crate::table_kit;
use jaxon_ir::primitive::{GetParams, State};

use jaxon_ir::primitive::IndexEntry;
use jaxon_ir::{ClosedJaxpr, Primitive};
use jaxon_transforms::batch::batch_jaxpr;
use jaxon_transforms::jvp_jaxpr;
use table_kit::{check_all_vmaps, check_jvp, check_vmap_axes, parse};

const GETS: &[&str] = &[
    "{ lambda ; a:Ref<default>{f64[3,4]}. let b:f64[3,4] <- a[...] in (b,) }",
    "{ lambda ; a:Ref<default>{f64[3,4]}. let b:f64[4] <- a[1] in (b,) }",
    "{ lambda ; a:Ref<default>{f64[3,4]}. let b:f64[2] <- a[2,1:3] in (b,) }",
    "{ lambda ; a:Ref<default>{f64[3,4]} c:i32[]. let b:f64[3] <- a[:,c] in (b,) }",
    "{ lambda ; a:Ref<default>{f64[3,4]} c:i32[]. let b:f64[2,4] <- a[c:c+2,:] in (b,) }",
    "{ lambda ; a:Ref<default>{f64[3,4]} c:i32[5]. let b:f64[3,5] <- a[:,c] in (b,) }",
    "{ lambda ; a:Ref<default>{f64[3,4,2]} c:i32[] d:i32[]. let b:f64[4] <- a[c,:,d] in (b,) }",
    "{ lambda ; a:Ref<default>{f64[1]}. let b:f64[] <- a[0] in (b,) }",
    "{ lambda ; a:Ref<default>{f64[]}. let b:f64[] <- a[...] in (b,) }",
    "{ lambda ; a:Ref<default>{f64[3,4]}. let b:f64[2] <- a[1:3,:][:,2] in (b,) }",
];

#[test]
fn get_jvp_and_vmap() {
    for (i, text) in GETS.iter().enumerate() {
        let j = parse(text);
        check_jvp(&j, 10 + i as u64);
        check_all_vmaps(&j, 100 + 10 * i as u64, true);
    }
}

const WRITES: &[&str] = &[
    "{ lambda ; a:Ref<default>{f64[3,4]} v:f64[3,4]. let b:f64[3,4], a[...] <- a[...], v in (b,) }",
    "{ lambda ; a:Ref<default>{f64[3,4]} v:f64[4]. let b:f64[4], a[1] <- a[1], v in (b,) }",
    "{ lambda ; a:Ref<default>{f64[3,4]} c:i32[] v:f64[3]. let b:f64[3], a[:,c] <- a[:,c], v in (b,) }",
    "{ lambda ; a:Ref<default>{f64[3,4]} c:i32[] v:f64[2,4]. let a[c:c+2,:] += v in () }",
    "{ lambda ; a:Ref<default>{f64[3,4,2]} c:i32[] d:i32[] v:f64[4]. let a[c,:,d] += v; b:f64[4], a[d,:,c] <- a[d,:,c], v in (b,) }",
    "{ lambda ; a:Ref<default>{f64[]} v:f64[]. let a[...] += v; b:f64[] <- a[...] in (b,) }",
    "{ lambda ; a:Ref<default>{f64[3,4]} v:f64[4]. let b:f64[4], a[1:3,:][1] <- a[1:3,:][1], v; a[0:2,:][0] += b in (b,) }",
];

#[test]
fn swap_addupdate_jvp_and_vmap() {
    for (i, text) in WRITES.iter().enumerate() {
        let j = parse(text);
        check_jvp(&j, 20 + i as u64);
        check_all_vmaps(&j, 200 + 10 * i as u64, false);
    }
}

#[test]
fn strided_get_vmap() {
    let mut j = parse(
        "{ lambda ; a:Ref<default>{f64[3,7]} c:i32[]. let b:f64[3,3] <- a[:,c:c+3] in (b,) }",
    );
    let eqn = &mut j.eqns[0];
    if let Primitive::State(State::Get(GetParams { indexers })) = &mut eqn.primitive {
        if let IndexEntry::Slice { stride, .. } = &mut indexers[0].entries[1] {
            *stride = 2;
        }
    }
    check_jvp(&j, 5);
    check_all_vmaps(&j, 7, true);
}

#[test]
fn writes_into_unbatched_ref_are_rejected() {
    let j = parse(WRITES[1]);
    let closed = ClosedJaxpr::without_consts(j);
    let e = batch_jaxpr(&closed, &[false, true], 2, &[true]).unwrap_err();
    assert!(e.to_string().contains("unbatched Ref"), "{e}");
}

#[test]
fn tangent_written_into_ref_without_tangent_is_rejected() {
    let j = parse(WRITES[1]);
    let closed = ClosedJaxpr::without_consts(j);
    let e = jvp_jaxpr(&closed, &[false, true], &[true]).unwrap_err();
    assert!(e.to_string().contains("without a tangent Ref"), "{e}");
}

/// Refs batched at their last axis (or a middle one), values and indices
/// batched at theirs or not.
#[test]
fn vmap_with_batch_dims_off_the_front() {
    for (i, text) in GETS.iter().chain(WRITES).enumerate() {
        let j = parse(text);
        let n = j.invars.len();
        let last: Vec<Option<usize>> = j
            .invars
            .iter()
            .map(|v| Some(j.aval(*v).array().shape.len()))
            .collect();
        check_vmap_axes(&j, &last, 500 + i as u64);
        // Ref at its last axis, the rest absent.
        let mut first_only = vec![None; n];
        first_only[0] = last[0];
        check_vmap_axes(&j, &first_only, 600 + i as u64);
        // Ref at axis 0, other inputs at their last axis.
        let mut mixed = last.clone();
        mixed[0] = Some(0);
        check_vmap_axes(&j, &mixed, 700 + i as u64);
    }
}
