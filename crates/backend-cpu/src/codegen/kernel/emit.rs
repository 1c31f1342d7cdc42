//! `Em`: typed helpers over a Cranelift `FunctionBuilder` that emit the same
//! operation as a scalar or as a SIMD vector (`F32X4`, `F64X2`), so that
//! every elementwise rule is written once for both widths.
//!
//! Representation of values: a float of dtype `d` is `F32`/`F64` (scalar) or
//! `F32X4`/`F64X2` (vector); a boolean is `I8` 0/1 in scalar code and a lane
//! mask (`I32X4`/`I64X2`, all ones for true) in vector code.

use cranelift_codegen::ir::types::{F32, F32X4, F64, F64X2, I16, I32, I32X4, I64, I64X2, I8};
use cranelift_codegen::ir::{
    condcodes::FloatCC, Endianness, InstBuilder, MemFlagsData, Type, Value,
};
use cranelift_frontend::FunctionBuilder;
use jaxon_ir::DType;

/// An emission context: a builder and the vector width (1 for scalar code).
pub(crate) struct Em<'a, 'b> {
    /// The function builder.
    pub b: &'a mut FunctionBuilder<'b>,
    /// Lanes per value: 1 (scalar), 4 (f32) or 2 (f64).
    pub lanes: u8,
}

/// The scalar Cranelift type holding a dtype, if it can be compiled.
pub(crate) fn scalar_type(dt: DType) -> Option<Type> {
    Some(match dt {
        DType::Bool | DType::I8 | DType::U8 => I8,
        DType::I16 | DType::U16 => I16,
        DType::I32 | DType::U32 => I32,
        DType::I64 | DType::U64 => I64,
        DType::F32 => F32,
        DType::F64 => F64,
        DType::F16 | DType::BF16 | DType::C64 | DType::C128 | DType::KeyFry => return None,
    })
}

/// An integer constant of scalar type `ty`, given as a signed value (the
/// bits above the type's width are cleared, as Cranelift requires).
pub(crate) fn iconst(b: &mut FunctionBuilder<'_>, ty: Type, v: i64) -> Value {
    let bits = ty.bits();
    let masked = if bits >= 64 {
        v
    } else {
        (v as u64 & ((1u64 << bits) - 1)) as i64
    };
    b.ins().iconst(ty, masked)
}

/// Flags for vector bit reinterpretation (Cranelift requires an explicit
/// byte order for lane-type changing bitcasts).
fn le() -> MemFlagsData {
    MemFlagsData::new().with_endianness(Endianness::Little)
}

impl Em<'_, '_> {
    /// The float type of `dt` at this width.
    pub fn fty(&self, dt: DType) -> Type {
        match (dt, self.lanes) {
            (DType::F64, 1) => F64,
            (DType::F64, _) => F64X2,
            (_, 1) => F32,
            _ => F32X4,
        }
    }

    /// The integer type as wide as the float `dt` at this width.
    pub fn ity(&self, dt: DType) -> Type {
        match (dt, self.lanes) {
            (DType::F64, 1) => I64,
            (DType::F64, _) => I64X2,
            (_, 1) => I32,
            _ => I32X4,
        }
    }

    /// A float constant of `dt`, splatted in vector code.
    pub fn fconst(&mut self, dt: DType, v: f64) -> Value {
        let s = if dt == DType::F64 {
            self.b.ins().f64const(v)
        } else {
            self.b.ins().f32const(v as f32)
        };
        self.splat(s, self.fty(dt))
    }

    /// An integer constant as wide as the float `dt`, splatted in vector code.
    pub fn iconst_for(&mut self, dt: DType, v: i64) -> Value {
        let st = if dt == DType::F64 { I64 } else { I32 };
        let s = iconst(self.b, st, v);
        self.splat(s, self.ity(dt))
    }

    /// Splats a scalar to `ty` when `ty` is a vector.
    pub fn splat(&mut self, s: Value, ty: Type) -> Value {
        if ty.is_vector() {
            self.b.ins().splat(ty, s)
        } else {
            s
        }
    }

    /// Reinterprets a float value as the integer of the same width.
    pub fn as_int_bits(&mut self, dt: DType, x: Value) -> Value {
        let ty = self.ity(dt);
        let flags = if self.lanes > 1 {
            le()
        } else {
            MemFlagsData::new()
        };
        self.b.ins().bitcast(ty, flags, x)
    }

    /// Reinterprets integer bits as the float `dt`.
    pub fn int_bits_as_float(&mut self, dt: DType, x: Value) -> Value {
        let ty = self.fty(dt);
        let flags = if self.lanes > 1 {
            le()
        } else {
            MemFlagsData::new()
        };
        self.b.ins().bitcast(ty, flags, x)
    }

    /// `mask ? a : b` for a boolean of this width (see the module docs).
    pub fn sel(&mut self, mask: Value, a: Value, b: Value) -> Value {
        if self.lanes == 1 {
            self.b.ins().select(mask, a, b)
        } else {
            let ty = self.b.func.dfg.value_type(a);
            let m = if self.b.func.dfg.value_type(mask) == ty {
                mask
            } else {
                self.b.ins().bitcast(ty, le(), mask)
            };
            self.b.ins().bitselect(m, a, b)
        }
    }

    /// A float comparison giving a boolean of this width.
    pub fn fcmp(&mut self, cc: FloatCC, x: Value, y: Value) -> Value {
        self.b.ins().fcmp(cc, x, y)
    }

    /// `x * y + z` with one rounding.
    pub fn fma(&mut self, x: Value, y: Value, z: Value) -> Value {
        self.b.ins().fma(x, y, z)
    }

    /// Evaluates a polynomial with coefficients `c[0] + c[1] x + ...` by
    /// Horner's rule with fused multiply-adds.
    pub fn poly(&mut self, dt: DType, x: Value, c: &[f64]) -> Value {
        let mut acc = self.fconst(dt, c[c.len() - 1]);
        for &k in c[..c.len() - 1].iter().rev() {
            let kv = self.fconst(dt, k);
            acc = self.fma(acc, x, kv);
        }
        acc
    }

    /// `|mag|` with the sign of `sgn` (bit operations: x86 has no vector
    /// `fcopysign` in Cranelift).
    pub fn copysign(&mut self, dt: DType, mag: Value, sgn: Value) -> Value {
        let sign_bit = if dt == DType::F64 {
            i64::MIN
        } else {
            i32::MIN as i64
        };
        let mask = self.iconst_for(dt, sign_bit);
        let m = self.as_int_bits(dt, mag);
        let s = self.as_int_bits(dt, sgn);
        let m = self.b.ins().band_not(m, mask);
        let s = self.b.ins().band(s, mask);
        let r = self.b.ins().bor(m, s);
        self.int_bits_as_float(dt, r)
    }

    /// A boolean constant of this width, shaped for floats of `dt`.
    pub fn bconst(&mut self, dt: DType, v: bool) -> Value {
        if self.lanes == 1 {
            self.b.ins().iconst(I8, v as i64)
        } else {
            self.iconst_for(dt, if v { -1 } else { 0 })
        }
    }
}
