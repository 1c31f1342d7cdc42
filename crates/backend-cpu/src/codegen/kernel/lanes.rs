//! `Lanes`: the lane-wise operations the transcendental approximations
//! (`math.rs`) are written in, so that each algorithm exists once and runs
//! both as emitted Cranelift code ([`Clif`]: scalar, `F32X4`, `F64X2`) and
//! as precompiled AVX2 and AVX-512 code (`wide/ymm.rs`, `wide/zmm.rs`).
//!
//! Invariants every implementation keeps, so that the two give the same
//! bits for the same inputs:
//! - float arithmetic is IEEE with one rounding per operation (`fma` rounds
//!   once), in the default rounding mode, with subnormals kept;
//! - comparisons are the ordered ones except `Ne`, which is true for NaN
//!   (Cranelift's `FloatCC` semantics); a mask is all ones or all zeros;
//! - integers have the width of the float (`i32` lanes for f32, `i64` for
//!   f64) and wrap; shifts are logical except where named otherwise;
//! - [`Lanes::patch`] calls the same scalar function on the same lanes, so
//!   a lane's result never depends on its neighbours or on the width.

use super::emit::Em;
use cranelift_codegen::ir::condcodes::{FloatCC, IntCC};
use cranelift_codegen::ir::types::{F32, F64, I32, I64};
use cranelift_codegen::ir::{AbiParam, InstBuilder, Signature, Value};
use jaxon_ir::DType;

/// A float comparison.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Cmp {
    Lt,
    Gt,
    Ge,
    Eq,
    /// Not equal, or unordered (true when either side is NaN).
    Ne,
}

/// A scalar function of one float, for f32 and for f64: the slow path of
/// an approximation outside its domain (`extern "C"`, so emitted code can
/// call it through its address).
#[derive(Clone, Copy)]
pub(crate) struct Scalar {
    pub f32: extern "C" fn(f32) -> f32,
    pub f64: extern "C" fn(f64) -> f64,
}

/// The element types a [`Scalar`] applies to.
pub(crate) trait ScalarElem: Copy {
    /// `s` at this element type.
    fn through(self, s: Scalar) -> Self;
}

impl ScalarElem for f32 {
    #[inline(always)]
    fn through(self, s: Scalar) -> f32 {
        (s.f32)(self)
    }
}

impl ScalarElem for f64 {
    #[inline(always)]
    fn through(self, s: Scalar) -> f64 {
        (s.f64)(self)
    }
}

/// Lane-wise operations on floats of one dtype and integers as wide.
pub(crate) trait Lanes {
    /// A float value (one lane or a vector).
    type F: Copy;
    /// An integer value of the float's width.
    type I: Copy;
    /// A lane mask.
    type M: Copy;

    /// The float dtype (`F32` or `F64`).
    fn dt(&self) -> DType;
    /// A float constant (rounded to the dtype), in every lane.
    fn f(&mut self, v: f64) -> Self::F;
    /// An integer constant (truncated to the width), in every lane.
    fn i(&mut self, v: i64) -> Self::I;

    fn add(&mut self, a: Self::F, b: Self::F) -> Self::F;
    fn sub(&mut self, a: Self::F, b: Self::F) -> Self::F;
    fn mul(&mut self, a: Self::F, b: Self::F) -> Self::F;
    fn div(&mut self, a: Self::F, b: Self::F) -> Self::F;
    /// `a * b + c`, rounded once.
    fn fma(&mut self, a: Self::F, b: Self::F, c: Self::F) -> Self::F;
    fn neg(&mut self, a: Self::F) -> Self::F;
    fn abs(&mut self, a: Self::F) -> Self::F;

    fn cmp(&mut self, cc: Cmp, a: Self::F, b: Self::F) -> Self::M;
    fn mask_or(&mut self, a: Self::M, b: Self::M) -> Self::M;
    /// Lanes where the integer is not zero.
    fn nonzero(&mut self, a: Self::I) -> Self::M;
    /// `m ? a : b`.
    fn sel(&mut self, m: Self::M, a: Self::F, b: Self::F) -> Self::F;
    /// `m ? a : b` on integers.
    fn sel_i(&mut self, m: Self::M, a: Self::I, b: Self::I) -> Self::I;

    /// The float's bits as an integer.
    fn bits(&mut self, a: Self::F) -> Self::I;
    /// Integer bits as a float.
    fn float_bits(&mut self, a: Self::I) -> Self::F;
    fn iadd(&mut self, a: Self::I, b: Self::I) -> Self::I;
    fn isub(&mut self, a: Self::I, b: Self::I) -> Self::I;
    fn and(&mut self, a: Self::I, b: Self::I) -> Self::I;
    fn or(&mut self, a: Self::I, b: Self::I) -> Self::I;
    fn xor(&mut self, a: Self::I, b: Self::I) -> Self::I;
    /// `a & !b`.
    fn and_not(&mut self, a: Self::I, b: Self::I) -> Self::I;
    fn shl(&mut self, a: Self::I, n: u8) -> Self::I;
    /// Logical shift right.
    fn ushr(&mut self, a: Self::I, n: u8) -> Self::I;

    /// `m ? slow(x) : y` lane by lane, calling `slow` only when some lane of
    /// `m` is set (a branch around a cold path): the fallback of an
    /// approximation for the rare arguments outside its domain.
    fn patch(&mut self, m: Self::M, x: Self::F, y: Self::F, slow: Scalar) -> Self::F;

    /// `x < lo ? lo : x` (NaN stays NaN).
    #[inline(always)]
    fn at_least(&mut self, x: Self::F, lo: Self::F) -> Self::F {
        let below = self.cmp(Cmp::Lt, x, lo);
        self.sel(below, lo, x)
    }

    /// `x > hi ? hi : x` (NaN stays NaN).
    #[inline(always)]
    fn at_most(&mut self, x: Self::F, hi: Self::F) -> Self::F {
        let above = self.cmp(Cmp::Gt, x, hi);
        self.sel(above, hi, x)
    }

    /// `c[0] + c[1] x + ...` by Horner's rule with fused multiply-adds.
    #[inline(always)]
    fn poly(&mut self, x: Self::F, c: &[f64]) -> Self::F {
        let mut acc = self.f(c[c.len() - 1]);
        for &k in c[..c.len() - 1].iter().rev() {
            let kv = self.f(k);
            acc = self.fma(acc, x, kv);
        }
        acc
    }

    /// `|mag|` with the sign of `sgn`, by bit operations.
    #[inline(always)]
    fn copysign(&mut self, mag: Self::F, sgn: Self::F) -> Self::F {
        let sign_bit = if self.dt() == DType::F64 {
            i64::MIN
        } else {
            i32::MIN as i64
        };
        let mask = self.i(sign_bit);
        let m = self.bits(mag);
        let s = self.bits(sgn);
        let m = self.and_not(m, mask);
        let s = self.and(s, mask);
        let r = self.or(m, s);
        self.float_bits(r)
    }
}

/// [`Lanes`] as emitted Cranelift instructions, at the width of the [`Em`].
pub(crate) struct Clif<'e, 'a, 'b> {
    em: &'e mut Em<'a, 'b>,
    dt: DType,
}

impl<'e, 'a, 'b> Clif<'e, 'a, 'b> {
    /// Emission of floats of `dt` through `em`.
    pub fn new(em: &'e mut Em<'a, 'b>, dt: DType) -> Clif<'e, 'a, 'b> {
        Clif { em, dt }
    }
}

impl Lanes for Clif<'_, '_, '_> {
    type F = Value;
    type I = Value;
    type M = Value;

    fn dt(&self) -> DType {
        self.dt
    }
    fn f(&mut self, v: f64) -> Value {
        self.em.fconst(self.dt, v)
    }
    fn i(&mut self, v: i64) -> Value {
        self.em.iconst_for(self.dt, v)
    }
    fn add(&mut self, a: Value, b: Value) -> Value {
        self.em.b.ins().fadd(a, b)
    }
    fn sub(&mut self, a: Value, b: Value) -> Value {
        self.em.b.ins().fsub(a, b)
    }
    fn mul(&mut self, a: Value, b: Value) -> Value {
        self.em.b.ins().fmul(a, b)
    }
    fn div(&mut self, a: Value, b: Value) -> Value {
        self.em.b.ins().fdiv(a, b)
    }
    fn fma(&mut self, a: Value, b: Value, c: Value) -> Value {
        self.em.fma(a, b, c)
    }
    fn neg(&mut self, a: Value) -> Value {
        self.em.b.ins().fneg(a)
    }
    fn abs(&mut self, a: Value) -> Value {
        self.em.b.ins().fabs(a)
    }
    fn cmp(&mut self, cc: Cmp, a: Value, b: Value) -> Value {
        let cc = match cc {
            Cmp::Lt => FloatCC::LessThan,
            Cmp::Gt => FloatCC::GreaterThan,
            Cmp::Ge => FloatCC::GreaterThanOrEqual,
            Cmp::Eq => FloatCC::Equal,
            Cmp::Ne => FloatCC::NotEqual,
        };
        self.em.fcmp(cc, a, b)
    }
    fn mask_or(&mut self, a: Value, b: Value) -> Value {
        self.em.b.ins().bor(a, b)
    }
    fn nonzero(&mut self, a: Value) -> Value {
        if self.em.lanes > 1 {
            let zero = self.em.iconst_for(self.dt, 0);
            self.em.b.ins().icmp(IntCC::NotEqual, a, zero)
        } else {
            self.em.b.ins().icmp_imm_s(IntCC::NotEqual, a, 0)
        }
    }
    fn sel(&mut self, m: Value, a: Value, b: Value) -> Value {
        self.em.sel(m, a, b)
    }
    fn sel_i(&mut self, m: Value, a: Value, b: Value) -> Value {
        self.em.sel(m, a, b)
    }
    fn bits(&mut self, a: Value) -> Value {
        self.em.as_int_bits(self.dt, a)
    }
    fn float_bits(&mut self, a: Value) -> Value {
        self.em.int_bits_as_float(self.dt, a)
    }
    fn iadd(&mut self, a: Value, b: Value) -> Value {
        self.em.b.ins().iadd(a, b)
    }
    fn isub(&mut self, a: Value, b: Value) -> Value {
        self.em.b.ins().isub(a, b)
    }
    fn and(&mut self, a: Value, b: Value) -> Value {
        self.em.b.ins().band(a, b)
    }
    fn or(&mut self, a: Value, b: Value) -> Value {
        self.em.b.ins().bor(a, b)
    }
    fn xor(&mut self, a: Value, b: Value) -> Value {
        self.em.b.ins().bxor(a, b)
    }
    fn and_not(&mut self, a: Value, b: Value) -> Value {
        self.em.b.ins().band_not(a, b)
    }
    fn shl(&mut self, a: Value, n: u8) -> Value {
        let sh = self.em.b.ins().iconst(I32, n as i64);
        self.em.b.ins().ishl(a, sh)
    }
    fn ushr(&mut self, a: Value, n: u8) -> Value {
        let sh = self.em.b.ins().iconst(I32, n as i64);
        self.em.b.ins().ushr(a, sh)
    }
    fn patch(&mut self, m: Value, x: Value, y: Value, slow: Scalar) -> Value {
        let (addr, ty) = if self.dt == DType::F64 {
            (slow.f64 as usize, F64)
        } else {
            (slow.f32 as usize, F32)
        };
        let lanes = self.em.lanes;
        let b = &mut *self.em.b;
        let any = if lanes > 1 { b.ins().vany_true(m) } else { m };
        let cold = b.create_block();
        let join = b.create_block();
        let vty = b.func.dfg.value_type(y);
        let out = b.append_block_param(join, vty);
        b.set_cold_block(cold);
        b.ins().brif(any, cold, &[], join, &[y.into()]);
        b.switch_to_block(cold);
        b.seal_block(cold);
        let mut sig = Signature::new(b.func.signature.call_conv);
        sig.params.push(AbiParam::new(ty));
        sig.returns.push(AbiParam::new(ty));
        let sref = b.import_signature(sig);
        let callee = b.ins().iconst(I64, addr as i64);
        let fixed = if lanes > 1 {
            let mut v = x;
            for lane in 0..lanes {
                let xl = b.ins().extractlane(x, lane);
                let call = b.ins().call_indirect(sref, callee, &[xl]);
                let r = b.inst_results(call)[0];
                v = b.ins().insertlane(v, r, lane);
            }
            v
        } else {
            let call = b.ins().call_indirect(sref, callee, &[x]);
            b.inst_results(call)[0]
        };
        let r = self.em.sel(m, fixed, y);
        self.em.b.ins().jump(join, &[r.into()]);
        self.em.b.switch_to_block(join);
        self.em.b.seal_block(join);
        out
    }
}
