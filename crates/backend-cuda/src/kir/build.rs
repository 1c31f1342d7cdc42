//! Building kernels: [`KernelBuilder`] appends statements to nested bodies,
//! and `Expr`'s operators and methods build expressions that read like C.
//!
//! ```
//! use jaxon_backend_cuda::kir::{KernelBuilder, Expr, Special, Axis};
//! use jaxon_ir::DType;
//! // y[i] = 2 * x[i] for i < n
//! let mut k = KernelBuilder::new("scale", 256);
//! let x = k.global("x", DType::F32, false);
//! let y = k.global("y", DType::F32, true);
//! let n = k.scalar("n", DType::U32);
//! let i = k.var("i", DType::U32);
//! k.assign(i, Expr::global_thread_id_x());
//! k.if_(Expr::var(i).lt(Expr::param(n)), |k| {
//!     let v = k.var("v", DType::F32);
//!     k.load(&[v], x.into(), Expr::var(i), None);
//!     k.store(y.into(), Expr::var(i), vec![Expr::f32(2.0) * Expr::var(v)], None);
//! });
//! let kernel = k.finish().unwrap();
//! assert_eq!(kernel.params.len(), 3);
//! ```

use super::{
    verify, AtomicOp, Axis, BinOp, Const, Expr, Kernel, MathFn, MmaShape, Param, ParamId,
    ParamKind, SharedArray, SharedId, ShuffleKind, Space, Special, Stmt, UnOp, Var, VarDecl,
};
use crate::error::Result;
use jaxon_ir::DType;

/// Builds a [`Kernel`] statement by statement.
pub struct KernelBuilder {
    kernel: Kernel,
    /// The bodies being built, innermost last; the first is the kernel body.
    bodies: Vec<Vec<Stmt>>,
}

impl KernelBuilder {
    /// A kernel named `name` for blocks of at most `max_threads` threads.
    pub fn new(name: &str, max_threads: u32) -> KernelBuilder {
        KernelBuilder {
            kernel: Kernel {
                name: name.to_string(),
                params: Vec::new(),
                shared: Vec::new(),
                vars: Vec::new(),
                body: Vec::new(),
                max_threads,
                grid_stride: false,
            },
            bodies: vec![Vec::new()],
        }
    }

    /// Marks the kernel a grid-stride loop over `blockIdx.x` (correct for
    /// any number of blocks along x; see [`Kernel::grid_stride`]).
    pub fn grid_stride(&mut self) {
        self.kernel.grid_stride = true;
    }

    /// Adds a global-buffer parameter.
    pub fn global(&mut self, name: &str, dtype: DType, writable: bool) -> ParamId {
        self.param(name, ParamKind::Global { dtype, writable })
    }

    /// Adds a scalar parameter.
    pub fn scalar(&mut self, name: &str, dtype: DType) -> ParamId {
        self.param(name, ParamKind::Scalar(dtype))
    }

    fn param(&mut self, name: &str, kind: ParamKind) -> ParamId {
        self.kernel.params.push(Param {
            name: name.to_string(),
            kind,
        });
        ParamId(self.kernel.params.len() as u32 - 1)
    }

    /// Adds a shared-memory array of `len` elements.
    pub fn shared(&mut self, name: &str, dtype: DType, len: u32) -> SharedId {
        self.kernel.shared.push(SharedArray {
            name: name.to_string(),
            dtype,
            len,
        });
        SharedId(self.kernel.shared.len() as u32 - 1)
    }

    /// Declares a local variable.
    pub fn var(&mut self, name: &str, dtype: DType) -> Var {
        self.kernel.vars.push(VarDecl {
            name: name.to_string(),
            dtype,
        });
        Var(self.kernel.vars.len() as u32 - 1)
    }

    /// Declares a local variable and assigns it.
    pub fn let_(&mut self, name: &str, dtype: DType, value: Expr) -> Var {
        let v = self.var(name, dtype);
        self.assign(v, value);
        v
    }

    /// The dtype a variable was declared with.
    pub fn var_dtype(&self, v: Var) -> DType {
        self.kernel.vars[v.0 as usize].dtype
    }

    /// Appends any statement.
    pub fn push(&mut self, s: Stmt) {
        self.bodies
            .last_mut()
            .expect("the kernel body is never popped")
            .push(s);
    }

    /// `var = value`.
    pub fn assign(&mut self, var: Var, value: Expr) {
        self.push(Stmt::Assign(var, value));
    }

    /// Loads `dst.len()` consecutive elements at `index`.
    pub fn load(&mut self, dst: &[Var], space: Space, index: Expr, mask: Option<(Expr, Expr)>) {
        self.push(Stmt::Load {
            dst: dst.to_vec(),
            space,
            index,
            mask,
        });
    }

    /// Stores `values` to consecutive elements at `index`.
    pub fn store(&mut self, space: Space, index: Expr, values: Vec<Expr>, mask: Option<Expr>) {
        self.push(Stmt::Store {
            space,
            index,
            values,
            mask,
        });
    }

    /// An atomic update; returns nothing (use [`Stmt::Atomic`] for the old
    /// value).
    pub fn atomic(&mut self, op: AtomicOp, space: Space, index: Expr, value: Expr) {
        self.push(Stmt::Atomic {
            op,
            space,
            index,
            value,
            dst: None,
        });
    }

    /// `__syncthreads()`.
    pub fn barrier(&mut self) {
        self.push(Stmt::Barrier);
    }

    /// `dst = __shfl_<kind>_sync(FULL, value, lane, width)`.
    pub fn shuffle(&mut self, dst: Var, kind: ShuffleKind, value: Expr, lane: Expr, width: u32) {
        self.push(Stmt::Shuffle {
            dst,
            kind,
            value,
            lane,
            width,
        });
    }

    /// A warp matrix multiply-accumulate.
    pub fn mma(&mut self, shape: MmaShape, d: Vec<Var>, a: Vec<Expr>, b: Vec<Expr>, c: Vec<Expr>) {
        self.push(Stmt::Mma { shape, d, a, b, c });
    }

    /// A warp-collective `ldmatrix` (see [`Stmt::LdMatrix`]).
    pub fn ldmatrix(&mut self, dst: &[Var], shared: SharedId, index: Expr, trans: bool) {
        self.push(Stmt::LdMatrix {
            dst: dst.to_vec(),
            shared,
            index,
            trans,
        });
    }

    fn nested(&mut self, f: impl FnOnce(&mut Self)) -> Vec<Stmt> {
        self.bodies.push(Vec::new());
        f(self);
        self.bodies.pop().expect("pushed above")
    }

    /// Sets the length of shared array `s`, for builders that learn it only
    /// after the code that indexes it (a pool handed out piece by piece).
    pub fn set_shared_len(&mut self, s: SharedId, len: u32) {
        if let Some(a) = self.kernel.shared.get_mut(s.0 as usize) {
            a.len = len;
        }
    }

    /// Starts a nested body for a builder that cannot use the closure forms
    /// (its body builder needs more than the `KernelBuilder`); the
    /// statements pushed until [`KernelBuilder::end_body`] form the body.
    pub fn begin_body(&mut self) {
        self.bodies.push(Vec::new());
    }

    /// Ends the body begun by [`KernelBuilder::begin_body`] and returns it
    /// (empty if none was begun).
    pub fn end_body(&mut self) -> Vec<Stmt> {
        if self.bodies.len() > 1 {
            self.bodies.pop().unwrap_or_default()
        } else {
            Vec::new()
        }
    }

    /// `if cond { then }`.
    pub fn if_(&mut self, cond: Expr, then: impl FnOnce(&mut Self)) {
        let then = self.nested(then);
        self.push(Stmt::If {
            cond,
            then,
            otherwise: Vec::new(),
        });
    }

    /// `if cond { then } else { otherwise }`.
    pub fn if_else(
        &mut self,
        cond: Expr,
        then: impl FnOnce(&mut Self),
        otherwise: impl FnOnce(&mut Self),
    ) {
        let then = self.nested(then);
        let otherwise = self.nested(otherwise);
        self.push(Stmt::If {
            cond,
            then,
            otherwise,
        });
    }

    /// `for (var = start; var < end; var += step) body`.
    pub fn for_(
        &mut self,
        var: Var,
        start: Expr,
        end: Expr,
        step: Expr,
        body: impl FnOnce(&mut Self),
    ) {
        let body = self.nested(body);
        self.push(Stmt::For {
            var,
            start,
            end,
            step,
            body,
        });
    }

    /// `while (cond) body`.
    pub fn while_(&mut self, cond: Expr, body: impl FnOnce(&mut Self)) {
        let body = self.nested(body);
        self.push(Stmt::While { cond, body });
    }

    /// The kernel, verified.
    pub fn finish(mut self) -> Result<Kernel> {
        self.kernel.body = self.bodies.swap_remove(0);
        verify::verify(&self.kernel)?;
        Ok(self.kernel)
    }
}

impl From<ParamId> for Space {
    fn from(p: ParamId) -> Space {
        Space::Global(p)
    }
}

impl From<SharedId> for Space {
    fn from(s: SharedId) -> Space {
        Space::Shared(s)
    }
}

impl Expr {
    /// A variable's value.
    pub fn var(v: Var) -> Expr {
        Expr::Var(v)
    }
    /// A scalar parameter's value.
    pub fn param(p: ParamId) -> Expr {
        Expr::Param(p)
    }
    /// A constant of `dtype`, rounded from `v`.
    pub fn constant(dtype: DType, v: f64) -> Expr {
        Expr::Const(Const::from_f64(dtype, v))
    }
    /// An integer constant of `dtype`.
    pub fn int(dtype: DType, v: i64) -> Expr {
        Expr::Const(Const::int(dtype, v))
    }
    /// An `f32` constant.
    pub fn f32(v: f32) -> Expr {
        Expr::Const(Const {
            dtype: DType::F32,
            bits: u64::from(v.to_bits()),
        })
    }
    /// A `u32` constant.
    pub fn u32(v: u32) -> Expr {
        Expr::int(DType::U32, i64::from(v))
    }
    /// An `i32` constant.
    pub fn i32(v: i32) -> Expr {
        Expr::int(DType::I32, i64::from(v))
    }
    /// A `bool` constant.
    pub fn bool(v: bool) -> Expr {
        Expr::int(DType::Bool, i64::from(v))
    }
    /// `threadIdx.x`.
    pub fn thread_x() -> Expr {
        Expr::Special(Special::ThreadIdx(Axis::X))
    }
    /// `blockIdx.x`.
    pub fn block_x() -> Expr {
        Expr::Special(Special::BlockIdx(Axis::X))
    }
    /// `blockDim.x`.
    pub fn block_dim_x() -> Expr {
        Expr::Special(Special::BlockDim(Axis::X))
    }
    /// `gridDim.x`.
    pub fn grid_dim_x() -> Expr {
        Expr::Special(Special::GridDim(Axis::X))
    }
    /// The lane in the warp.
    pub fn lane() -> Expr {
        Expr::Special(Special::LaneId)
    }
    /// `blockIdx.x * blockDim.x + threadIdx.x`, as `u32`.
    pub fn global_thread_id_x() -> Expr {
        Expr::block_x() * Expr::block_dim_x() + Expr::thread_x()
    }

    fn bin(op: BinOp, a: Expr, b: Expr) -> Expr {
        Expr::Binary(op, Box::new(a), Box::new(b))
    }
    /// `min(self, o)`.
    pub fn min(self, o: Expr) -> Expr {
        Expr::bin(BinOp::Min, self, o)
    }
    /// `max(self, o)`.
    pub fn max(self, o: Expr) -> Expr {
        Expr::bin(BinOp::Max, self, o)
    }
    /// `self == o`.
    pub fn eq(self, o: Expr) -> Expr {
        Expr::bin(BinOp::Eq, self, o)
    }
    /// `self != o`.
    pub fn ne(self, o: Expr) -> Expr {
        Expr::bin(BinOp::Ne, self, o)
    }
    /// `self < o`.
    pub fn lt(self, o: Expr) -> Expr {
        Expr::bin(BinOp::Lt, self, o)
    }
    /// `self <= o`.
    pub fn le(self, o: Expr) -> Expr {
        Expr::bin(BinOp::Le, self, o)
    }
    /// `self > o`.
    pub fn gt(self, o: Expr) -> Expr {
        Expr::bin(BinOp::Gt, self, o)
    }
    /// `self >= o`.
    pub fn ge(self, o: Expr) -> Expr {
        Expr::bin(BinOp::Ge, self, o)
    }
    /// Logical/bitwise and.
    pub fn and(self, o: Expr) -> Expr {
        Expr::bin(BinOp::And, self, o)
    }
    /// Logical/bitwise or.
    pub fn or(self, o: Expr) -> Expr {
        Expr::bin(BinOp::Or, self, o)
    }
    /// A value conversion to `dtype`.
    pub fn cast(self, dtype: DType) -> Expr {
        Expr::Cast(dtype, Box::new(self))
    }
    /// A reinterpretation of the bits as `dtype`.
    pub fn bitcast(self, dtype: DType) -> Expr {
        Expr::Bitcast(dtype, Box::new(self))
    }
    /// A unary operation.
    pub fn unary(self, op: UnOp) -> Expr {
        Expr::Unary(op, Box::new(self))
    }
    /// A one-operand math function.
    pub fn math(self, f: MathFn) -> Expr {
        Expr::Math(f, vec![self])
    }
    /// `cond ? a : b`.
    pub fn select(cond: Expr, a: Expr, b: Expr) -> Expr {
        Expr::Select(Box::new(cond), Box::new(a), Box::new(b))
    }
}

macro_rules! expr_operator {
    ($trait:ident, $method:ident, $op:expr) => {
        impl std::ops::$trait for Expr {
            type Output = Expr;
            fn $method(self, o: Expr) -> Expr {
                Expr::bin($op, self, o)
            }
        }
    };
}
expr_operator!(Add, add, BinOp::Add);
expr_operator!(Sub, sub, BinOp::Sub);
expr_operator!(Mul, mul, BinOp::Mul);
expr_operator!(Div, div, BinOp::Div);
expr_operator!(Rem, rem, BinOp::Rem);
expr_operator!(BitAnd, bitand, BinOp::And);
expr_operator!(BitOr, bitor, BinOp::Or);
expr_operator!(BitXor, bitxor, BinOp::Xor);
expr_operator!(Shl, shl, BinOp::Shl);
expr_operator!(Shr, shr, BinOp::Shr);

impl std::ops::Neg for Expr {
    type Output = Expr;
    fn neg(self) -> Expr {
        Expr::Unary(UnOp::Neg, Box::new(self))
    }
}
