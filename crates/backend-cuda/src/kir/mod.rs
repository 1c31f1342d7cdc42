//! KIR, the kernel IR: a small typed SIMT language for one CUDA kernel.
//!
//! A [`Kernel`] is what one thread of a launch runs: a body of statements over
//! typed local variables, its parameters (global buffers and scalars), and
//! its statically sized shared-memory arrays. The launch (grid and block
//! sizes) is not part of the kernel; see [`LaunchDims`].
//!
//! Design:
//! - **Structured, not SSA.** Locals are mutable variables ([`Var`]) declared
//!   once with a dtype; control flow is `If`/`For`/`While` trees. This prints
//!   directly as CUDA C and interprets directly in the simulator.
//! - **Expressions are pure**; every effect (memory, barriers, shuffles,
//!   atomics, warp matrix ops) is a [`Stmt`].
//! - **Types are explicit.** No implicit conversions: operands of a binary
//!   op share one dtype; conversions are [`Expr::Cast`] or
//!   [`Expr::Bitcast`]. A cast rounds to nearest even into a float;
//!   truncates toward zero and saturates from a float into an integer, NaN
//!   giving 0 (CUDA's `cvt.rzi.sat`); wraps between integers (keeps the low
//!   bits, then sign- or zero-extends); and gives `x != 0` into `bool` (NaN
//!   gives true). These are Rust's `as` semantics.
//! - **Storage-only dtypes.** `f16` and `bf16` may be loaded, stored, cast,
//!   bitcast, selected, and moved through shuffles, `ldmatrix` and `mma`;
//!   arithmetic, comparisons and math functions on them are rejected by the
//!   verifier.
//!   Lowering computes in `f32` and rounds on the way out, as XLA does on GPUs.
//! - **Memory is indexed in elements** of the buffer's dtype, never bytes.
//!   `bool` is one byte in memory (0 or 1).
//! - **Integer arithmetic wraps** at the operand width; integer division and
//!   remainder truncate toward zero (C semantics); division by zero is a
//!   simulator fault. Shifts take the shift count modulo the bit width.
//! - **Vector accesses** move 1, 2, 4 or 8 consecutive elements of at most
//!   16 bytes in all, at an element index that is a multiple of the width (so
//!   the address is aligned; the simulator checks it).
//! - **Masks are per access**: a masked load reads nothing and yields `other`
//!   in every lane when the mask is false; a masked store writes nothing.
//!
//! Invariant: [`verify::verify`] accepts a kernel only if every expression is
//! well typed, every variable and parameter reference is in range, barriers
//! are not inside thread-divergent code it can see (the simulator checks the
//! rest), and every access has a valid width. The printer and simulator rely
//! on it.

pub mod build;
pub mod display;
pub mod verify;

#[cfg(test)]
mod tests;

use jaxon_ir::DType;

pub use build::KernelBuilder;

/// A local variable: an index into [`Kernel::vars`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Var(pub u32);

/// A kernel parameter: an index into [`Kernel::params`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ParamId(pub u32);

/// A shared-memory array: an index into [`Kernel::shared`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SharedId(pub u32);

/// One kernel: the code one thread runs.
#[derive(Clone, Debug, PartialEq)]
pub struct Kernel {
    /// The kernel's name: a C identifier, unique within a module.
    pub name: String,
    /// Parameters, in launch-argument order.
    pub params: Vec<Param>,
    /// Statically sized shared-memory arrays.
    pub shared: Vec<SharedArray>,
    /// Local variables, indexed by [`Var`].
    pub vars: Vec<VarDecl>,
    /// The body.
    pub body: Vec<Stmt>,
    /// The largest block (threads) the kernel is written for; printed as
    /// `__launch_bounds__`, and checked at launch.
    pub max_threads: u32,
    /// Whether the kernel is a grid-stride loop over `blockIdx.x`: correct
    /// for any number of blocks along x, so the runtime may launch fewer
    /// than a plan's `grid[0]` (see `lower::run::sized`).
    pub grid_stride: bool,
}

/// A parameter of a kernel.
#[derive(Clone, Debug, PartialEq)]
pub struct Param {
    /// A C identifier.
    pub name: String,
    /// What is passed.
    pub kind: ParamKind,
}

/// What a parameter passes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ParamKind {
    /// A pointer to a global buffer of `dtype` elements.
    Global {
        /// The element type.
        dtype: DType,
        /// Whether the kernel stores to it (or runs atomics on it).
        writable: bool,
    },
    /// A scalar passed by value (sizes of dynamic shapes, constants).
    Scalar(DType),
}

/// A statically sized shared-memory array of one block.
#[derive(Clone, Debug, PartialEq)]
pub struct SharedArray {
    /// A C identifier.
    pub name: String,
    /// The element type.
    pub dtype: DType,
    /// The number of elements.
    pub len: u32,
}

/// A local variable's declaration.
#[derive(Clone, Debug, PartialEq)]
pub struct VarDecl {
    /// A hint for printing; the printer makes names unique.
    pub name: String,
    /// The variable's type.
    pub dtype: DType,
}

/// The three axes of thread and block indices.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Axis {
    /// `.x`
    X,
    /// `.y`
    Y,
    /// `.z`
    Z,
}

/// Values that the hardware provides to each thread; all are `u32`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Special {
    /// `threadIdx`
    ThreadIdx(Axis),
    /// `blockIdx`
    BlockIdx(Axis),
    /// `blockDim`
    BlockDim(Axis),
    /// `gridDim`
    GridDim(Axis),
    /// The thread's lane in its warp, `0..32` (linear thread index mod 32).
    LaneId,
}

/// A scalar constant, as the bits of a value of `dtype` (`f32` as its
/// IEEE bits zero-extended, signed integers sign-extended to 64 bits, `bool`
/// as 0 or 1).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Const {
    /// The constant's type.
    pub dtype: DType,
    /// Its bits, as described on the type.
    pub bits: u64,
}

/// Unary operators; all keep the operand's dtype except the predicates
/// [`UnOp::IsNan`] and [`UnOp::IsInf`], which give `bool`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum UnOp {
    /// Arithmetic negation (wrapping for integers).
    Neg,
    /// Logical not on `bool`, bitwise not on integers.
    Not,
    /// Absolute value (wrapping for the most negative integer).
    Abs,
    /// `isnan` on floats.
    IsNan,
    /// `isinf` on floats.
    IsInf,
    /// Count of leading zero bits, on integers.
    Clz,
    /// Count of set bits, on integers.
    Popc,
}

/// Binary operators on two operands of one dtype.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BinOp {
    /// `+`
    Add,
    /// `-`
    Sub,
    /// `*`
    Mul,
    /// `/`: IEEE division on floats, truncating on integers.
    Div,
    /// `%`: `fmod` on floats, truncating remainder on integers.
    Rem,
    /// Minimum; on floats NaN if either operand is NaN (JAX's `min`).
    Min,
    /// Maximum; on floats NaN if either operand is NaN (JAX's `max`).
    Max,
    /// Bitwise and, or logical and on `bool`.
    And,
    /// Bitwise or, or logical or on `bool`.
    Or,
    /// Bitwise xor, or logical xor on `bool`.
    Xor,
    /// Left shift (count modulo the width).
    Shl,
    /// Right shift: arithmetic on signed, logical on unsigned integers.
    Shr,
    /// `==`, giving `bool`.
    Eq,
    /// `!=`, giving `bool`.
    Ne,
    /// `<`, giving `bool`.
    Lt,
    /// `<=`, giving `bool`.
    Le,
    /// `>`, giving `bool`.
    Gt,
    /// `>=`, giving `bool`.
    Ge,
}

impl BinOp {
    /// True for the comparisons, which give `bool`.
    pub fn is_comparison(self) -> bool {
        match self {
            BinOp::Eq | BinOp::Ne | BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge => true,
            BinOp::Add
            | BinOp::Sub
            | BinOp::Mul
            | BinOp::Div
            | BinOp::Rem
            | BinOp::Min
            | BinOp::Max
            | BinOp::And
            | BinOp::Or
            | BinOp::Xor
            | BinOp::Shl
            | BinOp::Shr => false,
        }
    }
}

/// Math functions on `f32` or `f64` (all operands and the result share the
/// dtype). Accuracy is that of CUDA's math library (the simulator uses the
/// host's `f32`/`f64` functions; tests compare with tolerances).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MathFn {
    /// `e^x`
    Exp,
    /// `2^x`
    Exp2,
    /// `e^x - 1`
    Expm1,
    /// natural logarithm
    Log,
    /// `log2`
    Log2,
    /// `log(1 + x)`
    Log1p,
    /// square root
    Sqrt,
    /// `1 / sqrt(x)`
    Rsqrt,
    /// cube root
    Cbrt,
    /// sine
    Sin,
    /// cosine
    Cos,
    /// tangent
    Tan,
    /// arcsine
    Asin,
    /// arccosine
    Acos,
    /// arctangent
    Atan,
    /// hyperbolic sine
    Sinh,
    /// hyperbolic cosine
    Cosh,
    /// hyperbolic tangent
    Tanh,
    /// inverse hyperbolic sine
    Asinh,
    /// inverse hyperbolic cosine
    Acosh,
    /// inverse hyperbolic tangent
    Atanh,
    /// error function
    Erf,
    /// complementary error function
    Erfc,
    /// inverse error function
    ErfInv,
    /// `log(|Γ(x)|)`
    Lgamma,
    /// round toward -∞
    Floor,
    /// round toward +∞
    Ceil,
    /// round to nearest, ties to even
    RoundEven,
    /// round to nearest, ties away from zero
    RoundAway,
    /// round toward zero
    Trunc,
    /// `x^y` (two operands)
    Pow,
    /// `atan2(y, x)` (two operands, `y` first)
    Atan2,
    /// `fmod`-free IEEE copysign (two operands)
    CopySign,
    /// `nextafter(x, y)` (two operands)
    NextAfter,
    /// `a * b + c`, fused (three operands)
    Fma,
}

impl MathFn {
    /// The number of operands.
    pub fn arity(self) -> usize {
        match self {
            MathFn::Pow | MathFn::Atan2 | MathFn::CopySign | MathFn::NextAfter => 2,
            MathFn::Fma => 3,
            MathFn::Exp
            | MathFn::Exp2
            | MathFn::Expm1
            | MathFn::Log
            | MathFn::Log2
            | MathFn::Log1p
            | MathFn::Sqrt
            | MathFn::Rsqrt
            | MathFn::Cbrt
            | MathFn::Sin
            | MathFn::Cos
            | MathFn::Tan
            | MathFn::Asin
            | MathFn::Acos
            | MathFn::Atan
            | MathFn::Sinh
            | MathFn::Cosh
            | MathFn::Tanh
            | MathFn::Asinh
            | MathFn::Acosh
            | MathFn::Atanh
            | MathFn::Erf
            | MathFn::Erfc
            | MathFn::ErfInv
            | MathFn::Lgamma
            | MathFn::Floor
            | MathFn::Ceil
            | MathFn::RoundEven
            | MathFn::RoundAway
            | MathFn::Trunc => 1,
        }
    }
}

/// A pure expression.
#[derive(Clone, Debug, PartialEq)]
pub enum Expr {
    /// A local variable's current value.
    Var(Var),
    /// A scalar parameter's value.
    Param(ParamId),
    /// A constant.
    Const(Const),
    /// A hardware-provided `u32`.
    Special(Special),
    /// A unary operation.
    Unary(UnOp, Box<Expr>),
    /// A binary operation.
    Binary(BinOp, Box<Expr>, Box<Expr>),
    /// `cond ? a : b`, with `cond: bool` and `a`, `b` of one dtype.
    Select(Box<Expr>, Box<Expr>, Box<Expr>),
    /// A value conversion (see the module docs).
    Cast(DType, Box<Expr>),
    /// A reinterpretation of the bits as another dtype of the same width.
    Bitcast(DType, Box<Expr>),
    /// A math function.
    Math(MathFn, Vec<Expr>),
}

/// Where a load, store or atomic goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Space {
    /// A global buffer parameter.
    Global(ParamId),
    /// A shared-memory array.
    Shared(SharedId),
}

/// Read-modify-write operations of [`Stmt::Atomic`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AtomicOp {
    /// `old + v` (integers, `f32`, `f64`).
    Add,
    /// `min(old, v)` (integers; `f32`/`f64` are lowered to CAS loops by the
    /// printer).
    Min,
    /// `max(old, v)`, as `Min`.
    Max,
    /// `v`
    Exch,
}

/// How a shuffle picks its source lane (`__shfl_*_sync` with a full mask).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ShuffleKind {
    /// Lane `lane ^ operand`.
    Xor,
    /// Lane `lane + operand`, or the own value past the segment's end.
    Down,
    /// Lane `lane - operand`, or the own value before the segment's start.
    Up,
    /// Lane `operand` of the segment.
    Idx,
}

/// Shapes and types of warp-level matrix multiply-accumulate ([`Stmt::Mma`]),
/// with the fragment layouts of PTX's `mma.sync.aligned` for that shape.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MmaShape {
    /// `m16n8k16`, `f16` or `bf16` operands, `f32` accumulators: per lane
    /// `a` is 8 halves (4 × b32 registers, as 8 vars of the operand dtype),
    /// `b` 4 halves, `c`/`d` 4 `f32`.
    M16N8K16,
    /// `m16n8k8` with `tf32` operands held in `f32` vars, `f32` accumulators:
    /// per lane `a` is 4 values, `b` 2, `c`/`d` 4.
    M16N8K8Tf32,
}

/// A statement.
#[derive(Clone, Debug, PartialEq)]
pub enum Stmt {
    /// `var = expr`.
    Assign(Var, Expr),
    /// Loads `dst.len()` consecutive elements starting at `index` into `dst`.
    Load {
        /// Destinations, all of the space's dtype; 1, 2, 4 or 8 of them.
        dst: Vec<Var>,
        /// The memory read.
        space: Space,
        /// The first element's index (any integer dtype), a multiple of
        /// `dst.len()`.
        index: Expr,
        /// When false, nothing is read and every `dst` gets `.1`.
        mask: Option<(Expr, Expr)>,
    },
    /// Stores `values` to consecutive elements starting at `index`.
    Store {
        /// The memory written.
        space: Space,
        /// The first element's index, a multiple of `values.len()`.
        index: Expr,
        /// The values, of the space's dtype; 1, 2, 4 or 8 of them.
        values: Vec<Expr>,
        /// When false, nothing is written.
        mask: Option<Expr>,
    },
    /// An atomic read-modify-write of one element; `dst` gets the old value.
    Atomic {
        /// The operation.
        op: AtomicOp,
        /// The memory updated.
        space: Space,
        /// The element's index.
        index: Expr,
        /// The operand, of the space's dtype.
        value: Expr,
        /// Receives the old value, if wanted.
        dst: Option<Var>,
    },
    /// `__syncthreads()`: every thread of the block must reach it.
    Barrier,
    /// A warp shuffle over segments of `width` lanes (a power of two ≤ 32);
    /// every lane of the warp must execute it.
    Shuffle {
        /// Receives the shuffled value.
        dst: Var,
        /// How the source lane is chosen.
        kind: ShuffleKind,
        /// The value each lane offers (32 or 64 bits wide, or 16 for
        /// `f16`/`bf16`).
        value: Expr,
        /// The `u32` operand of `kind`.
        lane: Expr,
        /// The segment width.
        width: u32,
    },
    /// A warp-level matrix multiply-accumulate `d = a · b + c` (see
    /// [`MmaShape`] for the fragments each lane holds).
    Mma {
        /// The shape and types.
        shape: MmaShape,
        /// The accumulator outputs.
        d: Vec<Var>,
        /// The `a` fragment.
        a: Vec<Expr>,
        /// The `b` fragment.
        b: Vec<Expr>,
        /// The accumulator inputs.
        c: Vec<Expr>,
    },
    /// A warp-collective load of 8×8 matrices of 16-bit elements from
    /// shared memory (PTX `ldmatrix.sync.aligned.m8n8`), for `mma`
    /// fragments. With `n = dst.len() / 2` matrices (1, 2 or 4), lane `l`
    /// (of the first `8n`) gives in `index` the element index of row
    /// `l % 8` of matrix `l / 8` (8 consecutive elements, a multiple of 8;
    /// the other lanes' indices are ignored). Lane `l` then receives
    /// elements `(l / 4, 2·(l % 4) + j)` of matrix `i` in `dst[2i + j]`,
    /// or `(2·(l % 4) + j, l / 4)` with `trans`. All 32 lanes of a warp
    /// execute it together.
    LdMatrix {
        /// Destinations, of the array's 16-bit dtype; 2, 4 or 8.
        dst: Vec<Var>,
        /// The shared array read.
        shared: SharedId,
        /// The lane's row index (any integer dtype).
        index: Expr,
        /// Whether each matrix is transposed.
        trans: bool,
    },
    /// `if cond { then } else { otherwise }`.
    If {
        /// A `bool`.
        cond: Expr,
        /// Runs when `cond` is true.
        then: Vec<Stmt>,
        /// Runs when `cond` is false.
        otherwise: Vec<Stmt>,
    },
    /// `for (var = start; var < end; var += step) body`, all of `var`'s
    /// integer dtype; `step` is positive.
    For {
        /// The induction variable.
        var: Var,
        /// The first value.
        start: Expr,
        /// One past the last value.
        end: Expr,
        /// The increment, positive.
        step: Expr,
        /// The loop body.
        body: Vec<Stmt>,
    },
    /// `while (cond) body`.
    While {
        /// A `bool`, evaluated before each iteration.
        cond: Expr,
        /// The loop body.
        body: Vec<Stmt>,
    },
}

/// Grid and block sizes of one launch.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct LaunchDims {
    /// Blocks in the grid, per axis.
    pub grid: [u32; 3],
    /// Threads in a block, per axis.
    pub block: [u32; 3],
}

impl LaunchDims {
    /// A one-dimensional launch.
    pub fn linear(blocks: u32, threads: u32) -> LaunchDims {
        LaunchDims {
            grid: [blocks, 1, 1],
            block: [threads, 1, 1],
        }
    }

    /// Threads per block.
    pub fn threads_per_block(&self) -> u64 {
        self.block.iter().map(|&b| u64::from(b)).product()
    }

    /// Blocks in the grid.
    pub fn blocks(&self) -> u64 {
        self.grid.iter().map(|&g| u64::from(g)).product()
    }
}

impl Kernel {
    /// The dtype of an expression in this kernel; `None` if it is ill typed
    /// (the verifier says why).
    pub fn type_of(&self, e: &Expr) -> Option<DType> {
        verify::type_of(self, e).ok()
    }

    /// Bytes of static shared memory the kernel uses.
    pub fn shared_bytes(&self) -> u64 {
        self.shared
            .iter()
            .map(|s| u64::from(s.len) * s.dtype.size_bytes() as u64)
            .sum()
    }

    /// The dtype of the elements of a memory space.
    pub fn space_dtype(&self, space: Space) -> Option<DType> {
        match space {
            Space::Global(p) => match self.params.get(p.0 as usize)?.kind {
                ParamKind::Global { dtype, .. } => Some(dtype),
                ParamKind::Scalar(_) => None,
            },
            Space::Shared(s) => Some(self.shared.get(s.0 as usize)?.dtype),
        }
    }
}

impl Const {
    /// A constant of `dtype` holding `v`, rounded as a cast would (floats to
    /// nearest, integers truncated toward zero and wrapped, `bool` as `v != 0`).
    pub fn from_f64(dtype: DType, v: f64) -> Const {
        let bits = match dtype {
            DType::Bool => u64::from(v != 0.0),
            DType::I8 => (v as i64 as i8) as i64 as u64,
            DType::I16 => (v as i64 as i16) as i64 as u64,
            DType::I32 => (v as i64 as i32) as i64 as u64,
            DType::I64 => v as i64 as u64,
            DType::U8 => u64::from(v as i64 as u8),
            DType::U16 => u64::from(v as i64 as u16),
            DType::U32 => u64::from(v as i64 as u32),
            DType::U64 => v as u64,
            // Through f32 with round-to-odd: one correct rounding (`half`'s
            // own `from_f64` rounds some values wrongly).
            DType::F16 => u64::from(half::f16::from_f32(f32_round_odd(v)).to_bits()),
            DType::BF16 => u64::from(half::bf16::from_f32(f32_round_odd(v)).to_bits()),
            DType::F32 => u64::from((v as f32).to_bits()),
            DType::F64 => v.to_bits(),
            // Complex dtypes never lower: the real part's f64 bits.
            DType::C64 | DType::C128 | DType::KeyFry => v.to_bits(),
        };
        Const { dtype, bits }
    }

    /// An integer constant of `dtype`, wrapped to its width.
    pub fn int(dtype: DType, v: i64) -> Const {
        let bits = match dtype {
            DType::Bool => u64::from(v != 0),
            DType::I8 => (v as i8) as i64 as u64,
            DType::I16 => (v as i16) as i64 as u64,
            DType::I32 => (v as i32) as i64 as u64,
            DType::I64 => v as u64,
            DType::U8 => u64::from(v as u8),
            DType::U16 => u64::from(v as u16),
            DType::U32 => u64::from(v as u32),
            DType::U64 => v as u64,
            DType::F16
            | DType::BF16
            | DType::F32
            | DType::F64
            | DType::C64
            | DType::C128
            | DType::KeyFry => return Const::from_f64(dtype, v as f64),
        };
        Const { dtype, bits }
    }

    /// The value as an `f64` (exact for every dtype but 64-bit integers
    /// beyond 2^53).
    pub fn to_f64(self) -> f64 {
        match self.dtype {
            DType::Bool => (self.bits != 0) as u8 as f64,
            DType::I8 | DType::I16 | DType::I32 | DType::I64 => self.bits as i64 as f64,
            DType::U8 | DType::U16 | DType::U32 | DType::U64 => self.bits as f64,
            DType::F16 => half::f16::from_bits(self.bits as u16).to_f64(),
            DType::BF16 => half::bf16::from_bits(self.bits as u16).to_f64(),
            DType::F32 => f32::from_bits(self.bits as u32) as f64,
            DType::F64 | DType::C64 | DType::C128 | DType::KeyFry => f64::from_bits(self.bits),
        }
    }
}

/// `x` rounded to `f32` with round-to-odd: truncated toward zero, with the
/// last mantissa bit set when inexact. Rounding this again to a format of
/// at most 11 significant bits (f16, bf16) is correctly rounded, with no
/// double-rounding error.
pub(crate) fn f32_round_odd(x: f64) -> f32 {
    let y = x as f32;
    if y.is_nan() || (y as f64) == x {
        return y;
    }
    let t = if (y as f64).abs() > x.abs() {
        f32::from_bits(y.to_bits() - 1)
    } else {
        y
    };
    f32::from_bits(t.to_bits() | 1)
}
