//! Abstract values: `ShapedArray`, `AbstractRef`, and dimensions that are
//! constants or variables.
//!
//! Invariant: a `Dim::Var` names a scalar integer variable of the jaxpr whose
//! variable table holds this aval; avals are only meaningful inside that table.

use crate::dtype::DType;
use crate::jaxpr::Var;
use std::fmt;

/// One dimension of a shape: a constant, or the runtime value of a scalar
/// integer variable (`f32[a,4]`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Dim {
    /// A static size.
    Const(usize),
    /// The value of a scalar integer variable of the enclosing jaxpr.
    Var(Var),
}

impl Dim {
    /// The static size, if this dimension is a constant.
    pub fn as_const(self) -> Option<usize> {
        match self {
            Dim::Const(n) => Some(n),
            Dim::Var(_) => None,
        }
    }
}

impl From<usize> for Dim {
    fn from(n: usize) -> Dim {
        Dim::Const(n)
    }
}

/// A shape: a list of dimensions.
pub type Shape = Vec<Dim>;

/// Converts static sizes to a shape.
pub fn static_shape(sizes: &[usize]) -> Shape {
    sizes.iter().map(|&n| Dim::Const(n)).collect()
}

/// The static sizes of a shape, or `None` if any dimension is a variable.
pub fn static_sizes(shape: &[Dim]) -> Option<Vec<usize>> {
    shape.iter().map(|d| d.as_const()).collect()
}

/// An array type: dtype, shape and JAX's weak-type flag.
///
/// The weak flag is not printed (JAX prints `a:f32[]` for a weak `f32[]`).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ShapedArray {
    /// Element type.
    pub dtype: DType,
    /// Dimensions.
    pub shape: Shape,
    /// Whether the type is weak (came from a Python/Rust scalar).
    pub weak_type: bool,
}

impl ShapedArray {
    /// A strongly typed array aval.
    pub fn new(dtype: DType, shape: Shape) -> ShapedArray {
        ShapedArray {
            dtype,
            shape,
            weak_type: false,
        }
    }

    /// A strongly typed array aval with static sizes.
    pub fn of(dtype: DType, sizes: &[usize]) -> ShapedArray {
        ShapedArray::new(dtype, static_shape(sizes))
    }

    /// A strongly typed scalar aval.
    pub fn scalar(dtype: DType) -> ShapedArray {
        ShapedArray::new(dtype, Vec::new())
    }

    /// Number of dimensions.
    pub fn ndim(&self) -> usize {
        self.shape.len()
    }

    /// The static sizes, or `None` if a dimension is dynamic.
    pub fn static_sizes(&self) -> Option<Vec<usize>> {
        static_sizes(&self.shape)
    }

    /// Same type with another weak flag.
    pub fn with_weak(mut self, weak_type: bool) -> ShapedArray {
        self.weak_type = weak_type;
        self
    }
}

/// Where a `Ref` lives. JAX prints the default space as `Ref<default>{..}`.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Default)]
pub enum MemorySpace {
    /// The default memory space.
    #[default]
    Default,
    /// A named memory space (`Ref<smem>{...}` and the like).
    Named(String),
}

impl fmt::Display for MemorySpace {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MemorySpace::Default => f.write_str("default"),
            MemorySpace::Named(s) => f.write_str(s),
        }
    }
}

/// The type of a mutable reference to an array (a Pallas or state `Ref`).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct AbstractRef {
    /// The type of the referenced array.
    pub inner: ShapedArray,
    /// The memory space.
    pub memory_space: MemorySpace,
}

/// An abstract value: the type of a jaxpr variable.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Aval {
    /// An immutable array.
    Array(ShapedArray),
    /// A mutable reference.
    Ref(AbstractRef),
}

impl Aval {
    /// The array type, or the referenced array type for a `Ref`.
    pub fn array(&self) -> &ShapedArray {
        match self {
            Aval::Array(a) => a,
            Aval::Ref(r) => &r.inner,
        }
    }

    /// The array type, if this is not a `Ref`.
    pub fn as_array(&self) -> Option<&ShapedArray> {
        match self {
            Aval::Array(a) => Some(a),
            Aval::Ref(_) => None,
        }
    }

    /// The element type.
    pub fn dtype(&self) -> DType {
        self.array().dtype
    }

    /// The shape.
    pub fn shape(&self) -> &[Dim] {
        &self.array().shape
    }

    /// True for `Ref` types.
    pub fn is_ref(&self) -> bool {
        matches!(self, Aval::Ref(_))
    }
}

impl From<ShapedArray> for Aval {
    fn from(a: ShapedArray) -> Aval {
        Aval::Array(a)
    }
}
