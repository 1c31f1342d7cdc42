//! `jnp.einsum`: subscripts parsed once, then lowered as JAX does —
//! repeated letters within an operand through an `iota`/`eq` mask and a
//! sum, letters unique to one operand summed away, pairs of operands
//! contracted with `dot_general` in opt_einsum's greedy order, a final
//! `transpose`.

use super::promote::result_type;
use crate::array::Array;
use crate::error::{Error, Result};
use crate::lax;
use jaxon_ir::primitive::{DotDimensionNumbers, ReduceOp};
use jaxon_ir::DType;

fn bad(spec: &str, why: &str) -> Error {
    Error::InvalidArgument(format!("einsum {spec:?}: {why}"))
}

/// Parses `"ij,jk->ik"` into per-operand letters and output letters
/// (implicit mode: the letters used once, sorted).
fn parse(spec: &str, n: usize) -> Result<(Vec<Vec<char>>, Vec<char>)> {
    let compact: String = spec.chars().filter(|c| !c.is_whitespace()).collect();
    let (lhs, out) = match compact.split_once("->") {
        Some((l, r)) => (l.to_string(), Some(r.to_string())),
        None => (compact.clone(), None),
    };
    let inputs: Vec<Vec<char>> = lhs.split(',').map(|s| s.chars().collect()).collect();
    if inputs.len() != n {
        return Err(bad(
            spec,
            &format!("{} operand specs for {n} operands", inputs.len()),
        ));
    }
    if compact
        .chars()
        .any(|c| !(c.is_ascii_alphabetic() || matches!(c, ',' | '-' | '>')))
    {
        return Err(bad(spec, "only letters are supported (no ellipsis)"));
    }
    let out: Vec<char> = match out {
        Some(o) => o.chars().collect(),
        None => {
            let mut once: Vec<char> = inputs
                .iter()
                .flatten()
                .copied()
                .filter(|c| inputs.iter().flatten().filter(|d| *d == c).count() == 1)
                .collect();
            once.sort_unstable();
            once
        }
    };
    for (i, c) in out.iter().enumerate() {
        if out[..i].contains(c) || !inputs.iter().flatten().any(|d| d == c) {
            return Err(bad(spec, &format!("bad output letter {c:?}")));
        }
    }
    Ok((inputs, out))
}

/// Removes repeated letters of one operand (diagonals) and sums letters
/// no one else needs, with one masked `reduce_sum` as JAX does.
fn reduce_operand(
    x: Array,
    letters: Vec<char>,
    keep: impl Fn(char) -> bool,
) -> Result<(Array, Vec<char>)> {
    let shape = x.try_shape()?;
    let mut x = x;
    let mut sum_axes = Vec::new();
    // Diagonals: mask off-diagonal entries, then sum all but the last copy.
    for (i, &c) in letters.iter().enumerate() {
        let first = letters.iter().position(|&d| d == c).expect("present");
        if first != i {
            let a = lax::broadcasted_iota(DType::U32, &shape, first)?;
            let b = lax::broadcasted_iota(DType::U32, &shape, i)?;
            let mask = lax::eq(&a, &b)?;
            let zeros = super::zeros_like(&x)?;
            x = lax::select_n(&mask, &[zeros, x])?;
        }
        if letters[i + 1..].contains(&c) {
            sum_axes.push(i);
        }
    }
    let mut kept = Vec::new();
    for (i, &c) in letters.iter().enumerate() {
        if sum_axes.contains(&i) {
            continue;
        }
        if keep(c) {
            kept.push(c);
        } else {
            // A letter summed here; its diagonal copies were summed too.
            sum_axes.push(i);
        }
    }
    sum_axes.sort_unstable();
    if sum_axes.is_empty() {
        return Ok((x, kept));
    }
    let x = lax::reduce(ReduceOp::Sum, &x, &sum_axes)?;
    Ok((x, kept))
}

/// `jnp.einsum(subscripts, *operands)` (letters only; operands promote to
/// a common dtype, which is also the accumulation dtype).
pub fn einsum(spec: &str, operands: &[Array]) -> Result<Array> {
    let (inputs, out) = parse(spec, operands.len())?;
    for (x, l) in operands.iter().zip(&inputs) {
        if x.ndim() != l.len() {
            return Err(bad(
                spec,
                &format!("operand of rank {} for {:?}", x.ndim(), l),
            ));
        }
    }
    // Operands keep their dtypes: `dot_general` accumulates in the promoted
    // dtype through `preferred_element_type`, as JAX emits it.
    let refs: Vec<&Array> = operands.iter().collect();
    let (result_dtype, _) = result_type("einsum", &refs)?;
    let ops: Vec<Array> = operands.to_vec();
    let dtype = Some(result_dtype);
    // Check that each letter has one size.
    let mut sizes: Vec<(char, usize)> = Vec::new();
    for (x, l) in ops.iter().zip(&inputs) {
        for (&c, &n) in l.iter().zip(&x.try_shape()?) {
            match sizes.iter().find(|(d, _)| *d == c) {
                Some(&(_, m)) if m != n => {
                    return Err(bad(spec, &format!("letter {c:?} has sizes {m} and {n}")))
                }
                Some(_) => {}
                None => sizes.push((c, n)),
            }
        }
    }
    let mut rest: Vec<(Array, Vec<char>)> = ops.into_iter().zip(inputs).collect();
    // Reduce each operand on its own first.
    for k in 0..rest.len() {
        let (x, l) = rest[k].clone();
        let others: Vec<char> = rest
            .iter()
            .enumerate()
            .filter(|&(j, _)| j != k)
            .flat_map(|(_, (_, l))| l.clone())
            .collect();
        let out_ref = &out;
        rest[k] = reduce_operand(x, l, |c| out_ref.contains(&c) || others.contains(&c))?;
    }
    let size_of = |c: char| sizes.iter().find(|(d, _)| *d == c).map_or(1, |&(_, n)| n);
    let footprint = |l: &[char]| l.iter().map(|&c| size_of(c)).product::<usize>() as i64;
    // Contract pairs in opt_einsum's greedy order (JAX's default path):
    // the pair whose result shrinks memory most, ties to the oldest.
    let mut list: Vec<(usize, Array, Vec<char>)> = rest
        .into_iter()
        .enumerate()
        .map(|(i, (a, l))| (i, a, l))
        .collect();
    let mut next_id = list.len();
    while list.len() > 1 {
        let kept = |i: usize, j: usize| -> Vec<char> {
            let mut k: Vec<char> = Vec::new();
            for &c in list[i].2.iter().chain(&list[j].2) {
                let elsewhere = list
                    .iter()
                    .enumerate()
                    .any(|(m, t)| m != i && m != j && t.2.contains(&c));
                if (out.contains(&c) || elsewhere) && !k.contains(&c) {
                    k.push(c);
                }
            }
            k
        };
        let mut best: Option<(i64, usize, usize, usize, usize)> = None;
        for i in 0..list.len() {
            for j in i + 1..list.len() {
                if !list[i].2.iter().any(|c| list[j].2.contains(c)) {
                    continue;
                }
                let cost = footprint(&kept(i, j)) - footprint(&list[i].2) - footprint(&list[j].2);
                let ids = (list[i].0.min(list[j].0), list[i].0.max(list[j].0));
                if best.is_none_or(|b| (cost, ids.0, ids.1) < (b.0, b.1, b.2)) {
                    best = Some((cost, ids.0, ids.1, i, j));
                }
            }
        }
        let (i, j) = best.map_or((0, 1), |b| (b.3, b.4));
        let last = list.len() == 2;
        let mut result = kept(i, j);
        // JAX pops the later operand first and calls it the lhs.
        let (_, lhs, ll) = list.remove(j);
        let (_, rhs, rl) = list.remove(i);
        if last {
            result = out.clone();
        } else {
            // opt_einsum orders an intermediate by first appearance in
            // the inputs (tensordot order).
            let all: Vec<char> = ll.iter().chain(&rl).copied().collect();
            result.sort_by_key(|c| all.iter().position(|d| d == c));
        }
        let batch: Vec<char> = result
            .iter()
            .filter(|c| ll.contains(c) && rl.contains(c))
            .copied()
            .collect();
        let contracted: Vec<char> = ll
            .iter()
            .filter(|c| rl.contains(c) && !result.contains(c))
            .copied()
            .collect();
        let pos = |l: &[char], c: &char| l.iter().position(|d| d == c).expect("letter");
        let rem = |l: &[char]| -> Vec<char> {
            l.iter()
                .filter(|c| !batch.contains(c) && !contracted.contains(c))
                .copied()
                .collect()
        };
        let (rem_l, rem_r) = (rem(&ll), rem(&rl));
        let dims = |a: &[char], b: &[char]| DotDimensionNumbers {
            lhs_contracting: contracted.iter().map(|c| pos(a, c)).collect(),
            rhs_contracting: contracted.iter().map(|c| pos(b, c)).collect(),
            lhs_batch: batch.iter().map(|c| pos(a, c)).collect(),
            rhs_batch: batch.iter().map(|c| pos(b, c)).collect(),
        };
        // Try (rhs, lhs) first, as JAX does, to avoid a transpose.
        let names_rl: Vec<char> = batch.iter().chain(&rem_r).chain(&rem_l).copied().collect();
        let (mut arr, names) = if names_rl == result {
            (
                lax::dot_general(&rhs, &lhs, dims(&rl, &ll), dtype)?,
                names_rl,
            )
        } else {
            let names: Vec<char> = batch.iter().chain(&rem_l).chain(&rem_r).copied().collect();
            (lax::dot_general(&lhs, &rhs, dims(&ll, &rl), dtype)?, names)
        };
        if names != result {
            let perm: Vec<usize> = result.iter().map(|c| pos(&names, c)).collect();
            arr = lax::transpose(&arr, &perm)?;
        }
        list.push((next_id, arr, result));
        next_id += 1;
    }
    let (_, mut acc, mut acc_l) = list.pop().ok_or_else(|| bad(spec, "no operands"))?;
    // Letters the output does not name are summed (single operand case).
    let extra: Vec<usize> = (0..acc_l.len())
        .filter(|&i| !out.contains(&acc_l[i]))
        .collect();
    if !extra.is_empty() {
        acc = lax::reduce(ReduceOp::Sum, &acc, &extra)?;
        acc_l.retain(|c| out.contains(c));
    }
    let perm: Vec<usize> = out
        .iter()
        .map(|c| {
            acc_l
                .iter()
                .position(|d| d == c)
                .expect("every output letter is kept")
        })
        .collect();
    let acc = lax::transpose(&acc, &perm)?;
    lax::convert_element_type(&acc, result_dtype, false)
}
