//! Bit-level and structural native steps: `bitcast_convert_type`,
//! `reduce_precision`, `tile`, `stack` and transposing reshapes.

use super::{map_same, next_index, strides, NativeOp};
use half::{bf16, f16};
use jaxon_ir::{DType, HostArray, IrError, Storage};

fn to_bytes(s: &Storage) -> Vec<u8> {
    macro_rules! le {
        ($v:expr) => {
            $v.iter().flat_map(|x| x.to_le_bytes()).collect()
        };
    }
    match s {
        Storage::Bool(v) => v.iter().map(|&b| b as u8).collect(),
        Storage::I8(v) => le!(v),
        Storage::U8(v) => v.clone(),
        Storage::I16(v) => le!(v),
        Storage::U16(v) => le!(v),
        Storage::F16(v) => le!(v),
        Storage::BF16(v) => le!(v),
        Storage::I32(v) => le!(v),
        Storage::U32(v) => le!(v),
        Storage::F32(v) => le!(v),
        Storage::I64(v) => le!(v),
        Storage::U64(v) => le!(v),
        Storage::F64(v) => le!(v),
    }
}

fn from_bytes(b: &[u8], dt: DType) -> Storage {
    macro_rules! chunks {
        ($t:ty, $n:expr) => {
            b.chunks_exact($n)
                .map(|c| {
                    let mut a = [0u8; $n];
                    a.copy_from_slice(c);
                    <$t>::from_le_bytes(a)
                })
                .collect()
        };
    }
    match dt {
        DType::Bool => Storage::Bool(b.iter().map(|&x| x != 0).collect()),
        DType::I8 => Storage::I8(chunks!(i8, 1)),
        DType::U8 => Storage::U8(b.to_vec()),
        DType::I16 => Storage::I16(chunks!(i16, 2)),
        DType::U16 => Storage::U16(chunks!(u16, 2)),
        DType::F16 => Storage::F16(chunks!(f16, 2)),
        DType::BF16 => Storage::BF16(chunks!(bf16, 2)),
        DType::I32 => Storage::I32(chunks!(i32, 4)),
        DType::U32 => Storage::U32(chunks!(u32, 4)),
        DType::F32 => Storage::F32(chunks!(f32, 4)),
        DType::I64 => Storage::I64(chunks!(i64, 8)),
        DType::U64 => Storage::U64(chunks!(u64, 8)),
        DType::F64 => Storage::F64(chunks!(f64, 8)),
    }
}

/// `bitcast_convert_type[new_dtype]` (little-endian lanes when widths
/// differ, as XLA on x86).
#[derive(Debug)]
pub(crate) struct Bitcast {
    to: DType,
    shape: Vec<usize>,
}

impl Bitcast {
    pub(crate) fn new(to: DType, outs: &[(DType, Vec<usize>)]) -> Result<Bitcast, String> {
        match outs {
            [(d, s)] if *d == to => Ok(Bitcast {
                to,
                shape: s.clone(),
            }),
            _ => Err("bitcast_convert_type has one result of the new dtype".into()),
        }
    }
}

impl NativeOp for Bitcast {
    fn run(&self, inputs: &[&HostArray], _: usize) -> Result<Vec<HostArray>, IrError> {
        let [x] = inputs else {
            return Err(IrError::Eval(
                "cpu backend: bitcast takes one operand".into(),
            ));
        };
        let data = from_bytes(&to_bytes(x.data()), self.to);
        Ok(vec![HostArray::new(self.shape.clone(), data)?])
    }
}

/// XLA's reduce-precision on the raw bits of a float with `src_exp`
/// exponent and `src_mant` mantissa bits (round to nearest even, overflow
/// to infinity, underflow to signed zero).
fn reduce_bits(bits: u64, nbits: u32, src_exp: u32, src_mant: u32, exp: u32, mant: u32) -> u64 {
    let mut x = bits;
    if mant < src_mant {
        let shift = src_mant - mant;
        let last_bit_mask = 1u64 << shift;
        let base_bias = (last_bit_mask >> 1) - 1;
        let last_bit = (x & last_bit_mask) >> shift;
        let trunc_mask = !(last_bit_mask - 1);
        x = x.wrapping_add(last_bit + base_bias) & trunc_mask;
    }
    if exp < src_exp {
        let sign_mask = 1u64 << (nbits - 1);
        let exp_mask = ((1u64 << src_exp) - 1) << src_mant;
        let bias = (1i64 << (src_exp - 1)) - 1;
        let reduced_bias = (1i64 << (exp.max(1) - 1)) - 1;
        let max_exp = (bias + reduced_bias) as u64;
        let min_exp = (bias - reduced_bias) as u64;
        let x_exp = x & exp_mask;
        let signed_zero = x & sign_mask;
        if x_exp > (max_exp << src_mant) {
            x = signed_zero | exp_mask;
        } else if x_exp <= (min_exp << src_mant) {
            x = signed_zero;
        }
    }
    x & if nbits == 64 {
        u64::MAX
    } else {
        (1u64 << nbits) - 1
    }
}

/// `reduce_precision[exponent_bits mantissa_bits]` (f16/bf16 in f32, then
/// rounded back).
#[derive(Debug)]
pub(crate) struct ReducePrecision {
    exp: u32,
    mant: u32,
}

impl ReducePrecision {
    pub(crate) fn new(exp: u32, mant: u32) -> ReducePrecision {
        ReducePrecision { exp, mant }
    }

    fn f32(&self, a: f32) -> f32 {
        if a.is_nan() {
            a
        } else {
            f32::from_bits(reduce_bits(a.to_bits() as u64, 32, 8, 23, self.exp, self.mant) as u32)
        }
    }
}

impl NativeOp for ReducePrecision {
    fn run(&self, inputs: &[&HostArray], _: usize) -> Result<Vec<HostArray>, IrError> {
        let [x] = inputs else {
            return Err(IrError::Eval(
                "cpu backend: reduce_precision operand".into(),
            ));
        };
        let data = match x.data() {
            Storage::F32(v) => Storage::F32(v.iter().map(|&a| self.f32(a)).collect()),
            Storage::F64(v) => Storage::F64(
                v.iter()
                    .map(|&a| {
                        if a.is_nan() {
                            a
                        } else {
                            f64::from_bits(reduce_bits(
                                a.to_bits(),
                                64,
                                11,
                                52,
                                self.exp,
                                self.mant,
                            ))
                        }
                    })
                    .collect(),
            ),
            Storage::F16(v) => Storage::F16(
                v.iter()
                    .map(|&a| f16::from_f32(self.f32(a.to_f32())))
                    .collect(),
            ),
            Storage::BF16(v) => Storage::BF16(
                v.iter()
                    .map(|&a| bf16::from_f32(self.f32(a.to_f32())))
                    .collect(),
            ),
            other => {
                return Err(IrError::UnsupportedDType {
                    primitive: "reduce_precision".into(),
                    dtype: other.dtype(),
                })
            }
        };
        Ok(vec![HostArray::new(x.shape().to_vec(), data)?])
    }
}

/// `tile`, and `reshape` with a `dimensions` transpose: every output
/// element reads the input at a flat index fixed at compile time.
#[derive(Debug)]
pub(crate) struct Take {
    src: Vec<usize>,
    shape: Vec<usize>,
}

impl Take {
    /// `reshape[dimensions=perm]`: transpose by `perm`, then reshape.
    pub(crate) fn transpose_reshape(
        ins: &[Vec<usize>],
        perm: &[usize],
        outs: &[(DType, Vec<usize>)],
    ) -> Result<Take, String> {
        let (Some(x), [(_, shape)]) = (ins.first(), outs) else {
            return Err("reshape takes one operand".into());
        };
        let mut seen = vec![false; x.len()];
        if perm.len() != x.len()
            || perm
                .iter()
                .any(|&p| p >= x.len() || std::mem::replace(&mut seen[p], true))
            || x.iter().product::<usize>() != shape.iter().product::<usize>()
        {
            return Err(format!("reshape of {x:?} by {perm:?} to {shape:?}"));
        }
        let xs = strides(x);
        let tshape: Vec<usize> = perm.iter().map(|&p| x[p]).collect();
        let n: usize = tshape.iter().product();
        let mut o = vec![0usize; tshape.len()];
        let mut src = Vec::with_capacity(n);
        for _ in 0..n {
            src.push(perm.iter().zip(&o).map(|(&p, &i)| i * xs[p]).sum());
            next_index(&mut o, &tshape);
        }
        Ok(Take {
            src,
            shape: shape.clone(),
        })
    }

    /// `tile[reps]`.
    pub(crate) fn tile(ins: &[Vec<usize>], outs: &[(DType, Vec<usize>)]) -> Result<Take, String> {
        let ([x], [(_, shape)]) = (ins, outs) else {
            return Err("tile takes one operand".into());
        };
        if x.len() != shape.len() || x.iter().zip(shape).any(|(a, b)| *a == 0 && *b != 0) {
            return Err(format!("tile of {x:?} to {shape:?}"));
        }
        let n: usize = shape.iter().product();
        let xs = strides(x);
        let mut o = vec![0usize; shape.len()];
        let mut src = Vec::with_capacity(n);
        for _ in 0..n {
            src.push((0..shape.len()).map(|d| (o[d] % x[d]) * xs[d]).sum());
            next_index(&mut o, shape);
        }
        Ok(Take {
            src,
            shape: shape.clone(),
        })
    }
}

impl NativeOp for Take {
    fn run(&self, inputs: &[&HostArray], _: usize) -> Result<Vec<HostArray>, IrError> {
        let [x] = inputs else {
            return Err(IrError::Eval("cpu backend: takes one operand".into()));
        };
        let data = map_same!(x.data(), v => self.src.iter().map(|&i| v[i]).collect());
        Ok(vec![HostArray::new(self.shape.clone(), data)?])
    }
}

/// `stack[axis]`: a concatenation along a new unit axis.
#[derive(Debug)]
pub(crate) struct Stack {
    axis: usize,
    shape: Vec<usize>,
}

impl Stack {
    pub(crate) fn new(
        axis: usize,
        ins: &[Vec<usize>],
        outs: &[(DType, Vec<usize>)],
    ) -> Result<Stack, String> {
        let (Some(x), [(_, shape)]) = (ins.first(), outs) else {
            return Err("stack needs operands".into());
        };
        if axis > x.len() || ins.iter().any(|s| s != x) || shape.len() != x.len() + 1 {
            return Err("stack of unequal shapes".into());
        }
        Ok(Stack {
            axis,
            shape: shape.clone(),
        })
    }
}

impl NativeOp for Stack {
    fn run(&self, inputs: &[&HostArray], _: usize) -> Result<Vec<HostArray>, IrError> {
        let expanded = inputs
            .iter()
            .map(|a| {
                let mut s = a.shape().to_vec();
                s.insert(self.axis.min(s.len()), 1);
                (*a).clone().reshape(s)
            })
            .collect::<Result<Vec<_>, _>>()?;
        let refs: Vec<&HostArray> = expanded.iter().collect();
        Ok(vec![crate::copy::concatenate(
            &refs,
            self.axis,
            &self.shape,
        )?])
    }
}
