//! Row-major copies of an operand with its dimensions permuted, for the
//! layouts no strided GEMM reads in place.

use jaxon_ir::{HostArray, IrError, Storage};

/// `a` transposed by `perm` (`None` when `perm` is the identity).
pub(super) fn permuted(a: &HostArray, perm: &[usize]) -> Result<Option<HostArray>, IrError> {
    if perm.iter().enumerate().all(|(i, &p)| i == p) {
        return Ok(None);
    }
    let shape = a.shape();
    let out_shape: Vec<usize> = perm.iter().map(|&p| shape[p]).collect();
    let mut st = vec![1usize; shape.len()];
    for d in (0..shape.len().saturating_sub(1)).rev() {
        st[d] = st[d + 1] * shape[d + 1];
    }
    let pst: Vec<usize> = perm.iter().map(|&p| st[p]).collect();
    let n: usize = out_shape.iter().product();
    // Source offset of each destination element, in destination order.
    let mut idx = vec![0usize; out_shape.len()];
    let mut offs = Vec::with_capacity(n);
    let mut off = 0usize;
    for _ in 0..n {
        offs.push(off);
        for d in (0..out_shape.len()).rev() {
            idx[d] += 1;
            off += pst[d];
            if idx[d] < out_shape[d] {
                break;
            }
            off -= pst[d] * out_shape[d];
            idx[d] = 0;
        }
    }
    macro_rules! gather {
        ($v:expr, $variant:ident) => {
            Storage::$variant(offs.iter().map(|&o| $v[o]).collect())
        };
    }
    let data = match a.data() {
        Storage::Bool(v) => gather!(v, Bool),
        Storage::I8(v) => gather!(v, I8),
        Storage::I16(v) => gather!(v, I16),
        Storage::I32(v) => gather!(v, I32),
        Storage::I64(v) => gather!(v, I64),
        Storage::U8(v) => gather!(v, U8),
        Storage::U16(v) => gather!(v, U16),
        Storage::U32(v) => gather!(v, U32),
        Storage::U64(v) => gather!(v, U64),
        Storage::F16(v) => gather!(v, F16),
        Storage::BF16(v) => gather!(v, BF16),
        Storage::F32(v) => gather!(v, F32),
        Storage::F64(v) => gather!(v, F64),
        Storage::C64(v) => gather!(v, C64),
        Storage::C128(v) => gather!(v, C128),
        Storage::Key(v) => gather!(v, Key),
    };
    HostArray::new(out_shape, data).map(Some)
}
