//! `jnp.einsum`: subscripts parsed once, then lowered as JAX does —
//! repeated letters within an operand through an `iota`/`eq` mask and a
//! sum, letters unique to one operand summed away, pairs of operands
//! contracted left to right with `dot_general`, a final `transpose`.

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
    let mut iter = rest.into_iter();
    let (mut acc, mut acc_l) = iter.next().ok_or_else(|| bad(spec, "no operands"))?;
    let remaining: Vec<(Array, Vec<char>)> = iter.collect();
    for (k, (y, yl)) in remaining.iter().enumerate() {
        let later: Vec<char> = remaining[k + 1..]
            .iter()
            .flat_map(|(_, l)| l.clone())
            .collect();
        let needed = |c: &char| out.contains(c) || later.contains(c);
        let mut dn = DotDimensionNumbers::default();
        let mut batch_l: Vec<char> = Vec::new();
        for (i, c) in acc_l.iter().enumerate() {
            if let Some(j) = yl.iter().position(|d| d == c) {
                if needed(c) {
                    batch_l.push(*c);
                } else {
                    dn.lhs_contracting.push(i);
                    dn.rhs_contracting.push(j);
                }
            }
        }
        // Batch dims in output order, as JAX lists them.
        batch_l.sort_by_key(|c| out.iter().position(|d| d == c).unwrap_or(usize::MAX));
        for c in &batch_l {
            dn.lhs_batch
                .push(acc_l.iter().position(|d| d == c).expect("batch"));
            dn.rhs_batch
                .push(yl.iter().position(|d| d == c).expect("batch"));
        }
        let lfree: Vec<char> = acc_l.iter().filter(|c| !yl.contains(c)).copied().collect();
        let rfree: Vec<char> = yl.iter().filter(|c| !acc_l.contains(c)).copied().collect();
        let forward: Vec<char> = batch_l
            .iter()
            .chain(&lfree)
            .chain(&rfree)
            .copied()
            .collect();
        let swapped: Vec<char> = batch_l
            .iter()
            .chain(&rfree)
            .chain(&lfree)
            .copied()
            .collect();
        // Like JAX, take the operand order that needs no final transpose.
        if later.is_empty() && forward != out && swapped == out {
            let dn = DotDimensionNumbers {
                lhs_contracting: dn.rhs_contracting,
                rhs_contracting: dn.lhs_contracting,
                lhs_batch: dn.rhs_batch,
                rhs_batch: dn.lhs_batch,
            };
            acc = lax::dot_general(y, &acc, dn, dtype)?;
            acc_l = swapped;
        } else {
            acc = lax::dot_general(&acc, y, dn, dtype)?;
            acc_l = forward;
        }
    }
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
