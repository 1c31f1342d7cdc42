//! Test helpers: a small jaxpr builder, array constructors and a seeded RNG.

use crate::array::HostArray;
use crate::aval::{AbstractRef, Aval, MemorySpace, ShapedArray};
use crate::dtype::DType;
use crate::jaxpr::{Atom, Binder, ClosedJaxpr, Eqn, Jaxpr, Var};
use crate::literal::Literal;
use crate::primitive::Primitive;
use crate::Value;

/// Builds a jaxpr equation by equation.
#[derive(Default)]
pub(crate) struct Builder {
    pub j: Jaxpr,
}

/// An array type.
pub(crate) fn sa(dtype: DType, shape: &[usize]) -> Aval {
    Aval::Array(ShapedArray::of(dtype, shape))
}

/// A `Ref` type.
pub(crate) fn rf(dtype: DType, shape: &[usize]) -> Aval {
    Aval::Ref(AbstractRef {
        inner: ShapedArray::of(dtype, shape),
        memory_space: MemorySpace::Default,
    })
}

/// A literal atom.
pub(crate) fn lit(v: f64, dtype: DType) -> Atom {
    Atom::Lit(Literal::new(v, dtype))
}

impl Builder {
    pub(crate) fn new() -> Builder {
        Builder::default()
    }

    /// A new invar.
    pub(crate) fn arg(&mut self, aval: Aval) -> Var {
        let v = self.j.new_var(aval);
        self.j.invars.push(v);
        v
    }

    /// A new constvar.
    pub(crate) fn constvar(&mut self, aval: Aval) -> Var {
        let v = self.j.new_var(aval);
        self.j.constvars.push(v);
        v
    }

    /// An equation with fresh output variables of the given types.
    pub(crate) fn eqn(
        &mut self,
        primitive: Primitive,
        inputs: Vec<Atom>,
        outs: Vec<Aval>,
    ) -> Vec<Var> {
        let vars: Vec<Var> = outs.into_iter().map(|a| self.j.new_var(a)).collect();
        self.j.eqns.push(Eqn {
            primitive,
            inputs,
            outputs: vars.iter().map(|v| Binder::Var(*v)).collect(),
        });
        vars
    }

    /// An equation whose single output is dropped (or that has none).
    pub(crate) fn eqn_drop(&mut self, primitive: Primitive, inputs: Vec<Atom>, outs: Vec<Aval>) {
        self.j.eqns.push(Eqn {
            primitive,
            inputs,
            outputs: outs.into_iter().map(Binder::Drop).collect(),
        });
    }

    /// Finishes with the given outvars.
    pub(crate) fn finish(mut self, outs: Vec<Atom>) -> Jaxpr {
        self.j.outvars = outs;
        self.j
    }
}

/// Closes a jaxpr without consts.
pub(crate) fn closed(j: Jaxpr) -> ClosedJaxpr {
    ClosedJaxpr::without_consts(j)
}

/// An array from f64 values.
pub(crate) fn arr(dtype: DType, shape: &[usize], v: &[f64]) -> HostArray {
    HostArray::from_f64(dtype, shape, v).expect("test array")
}

/// A value array from f64 values.
pub(crate) fn val(dtype: DType, shape: &[usize], v: &[f64]) -> Value {
    Value::Array(arr(dtype, shape, v))
}

/// The array inside a value.
pub(crate) fn unwrap(v: &Value) -> HostArray {
    match v {
        Value::Array(a) => a.clone(),
        Value::Ref(r) => r.lock().expect("lock").clone(),
    }
}

/// A deterministic generator of test values (xorshift64*).
pub(crate) struct Rng(u64);

impl Rng {
    pub(crate) fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }

    /// Uniform in [lo, hi).
    pub(crate) fn uniform(&mut self, lo: f64, hi: f64) -> f64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        let x = (self.0.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 11) as f64 / (1u64 << 53) as f64;
        lo + (hi - lo) * x
    }

    /// `n` values in [lo, hi), rounded to f32.
    pub(crate) fn f32s(&mut self, n: usize, lo: f64, hi: f64) -> Vec<f64> {
        (0..n).map(|_| self.uniform(lo, hi) as f32 as f64).collect()
    }
}
