//! `Array`, the user's value: a concrete buffer on a backend, or a tracer of
//! some trace on the interpreter stack.
//!
//! Invariants: an `Array` is immutable and cheap to clone (one `Arc`). A
//! concrete array's `aval` agrees with its buffer in dtype and shape and adds
//! the weak-type flag. A tracer's payload is owned by its main's trace,
//! which alone downcasts it.

use crate::error::{raise, Error, Result};
use half::{bf16, f16};
use jaxon_ir::interp::HostBuffer;
use jaxon_ir::shape::fmt_aval;
use jaxon_ir::{Aval, Buffer, DType, HostArray, Literal, ShapedArray, Storage};
use std::any::Any;
use std::fmt;
use std::sync::Arc;

use crate::core::MainTrace;

/// An n-dimensional array: concrete, or a tracer standing for one.
#[derive(Clone)]
pub struct Array(Repr);

#[derive(Clone)]
enum Repr {
    Concrete(Arc<Concrete>),
    Tracer(Arc<TracerRef>),
}

/// A concrete array: a buffer and its type (with the weak flag).
pub struct Concrete {
    aval: Aval,
    buffer: Arc<dyn Buffer>,
    /// The value of a scalar made from a Rust number, so staging can turn
    /// it into a literal without reading the buffer back.
    scalar: Option<Literal>,
    /// The Rust float a weak scalar was made from, unrounded: promoting it
    /// to another float dtype starts from this value (JAX converts a Python
    /// float straight to the array's dtype: `x_f64 * 0.1` multiplies by
    /// the f64 nearest 0.1, not by the f32 one).
    exact: Option<f64>,
}

/// A tracer: its main, its type, and its trace's private data.
pub struct TracerRef {
    main: Arc<MainTrace>,
    aval: Aval,
    payload: Box<dyn Any + Send + Sync>,
    /// One scalar integer array per `Dim::Var` of `aval`'s shape, in order:
    /// the values of the dynamic dimensions (empty for static shapes).
    dims: Vec<Array>,
}

impl TracerRef {
    /// The main whose trace owns this tracer.
    pub fn main(&self) -> &Arc<MainTrace> {
        &self.main
    }

    /// The tracer's type.
    pub fn aval(&self) -> &Aval {
        &self.aval
    }

    /// The trace's data, downcast to its type.
    pub fn payload<T: Any>(&self) -> Option<&T> {
        self.payload.downcast_ref()
    }

    /// The arrays holding the dynamic dimensions, one per `Dim::Var` of the
    /// shape in order.
    pub fn dim_tracers(&self) -> &[Array] {
        &self.dims
    }
}

impl Array {
    /// A tracer of `main` with type `aval`; `payload` is the trace's data.
    pub fn new_tracer(main: Arc<MainTrace>, aval: Aval, payload: impl Any + Send + Sync) -> Array {
        Array::new_tracer_with_dims(main, aval, payload, Vec::new())
    }

    /// A tracer with dynamic dimensions: `dims[k]` is the scalar integer
    /// array whose value is the `k`-th `Dim::Var` of `aval`'s shape.
    pub fn new_tracer_with_dims(
        main: Arc<MainTrace>,
        aval: Aval,
        payload: impl Any + Send + Sync,
        dims: Vec<Array>,
    ) -> Array {
        Array(Repr::Tracer(Arc::new(TracerRef {
            main,
            aval,
            payload: Box::new(payload),
            dims,
        })))
    }

    /// A concrete array from a buffer, with the buffer's (strong) type.
    pub fn from_buffer(buffer: Arc<dyn Buffer>) -> Array {
        let aval = Aval::Array(buffer.aval());
        Array(Repr::Concrete(Arc::new(Concrete {
            aval,
            buffer,
            scalar: None,
            exact: None,
        })))
    }

    /// A concrete array from a buffer, marked weakly typed or not.
    pub fn from_buffer_weak(buffer: Arc<dyn Buffer>, weak_type: bool) -> Array {
        let aval = Aval::Array(buffer.aval().with_weak(weak_type));
        Array(Repr::Concrete(Arc::new(Concrete {
            aval,
            buffer,
            scalar: None,
            exact: None,
        })))
    }

    /// A concrete array holding a host array (in host memory, usable by
    /// every host backend).
    pub fn from_host(array: HostArray) -> Array {
        Array::from_buffer(Arc::new(HostBuffer { array }))
    }

    /// A concrete array from elements and a shape.
    pub fn try_from_vec<T: Element>(data: Vec<T>, shape: &[usize]) -> Result<Array> {
        Ok(Array::from_host(HostArray::new(
            shape.to_vec(),
            T::into_storage(data),
        )?))
    }

    /// A concrete array from elements and a shape; raises on a length
    /// mismatch.
    #[track_caller]
    pub fn from_vec<T: Element>(data: Vec<T>, shape: &[usize]) -> Array {
        crate::error::ok_or_raise(Array::try_from_vec(data, shape))
    }

    /// A strongly typed scalar of `T`'s dtype.
    pub fn scalar<T: Element>(x: T) -> Array {
        Array::from_host(HostArray::new(Vec::new(), T::into_storage(vec![x])).expect("one element"))
    }

    /// A weakly typed scalar, as a Rust literal is: floats are weak `f32`,
    /// integers weak `i32`, bools strong `bool` (JAX's Python scalars).
    pub fn weak<T: WeakScalar>(x: T) -> Array {
        let (dtype, value, weak) = x.weak_parts();
        Array::scalar_of(dtype, value, weak)
    }

    /// A scalar of `dtype` from a Rust number (rounded to the dtype), weak
    /// or not; a weak float keeps the unrounded value for promotion.
    pub(crate) fn scalar_of(dtype: DType, value: f64, weak: bool) -> Array {
        let host = HostArray::scalar(dtype, value);
        Array(Repr::Concrete(Arc::new(Concrete {
            aval: Aval::Array(ShapedArray::scalar(dtype).with_weak(weak)),
            buffer: Arc::new(HostBuffer { array: host }),
            scalar: Some(Literal::new(value, dtype)),
            exact: (weak && dtype.is_float()).then_some(value),
        })))
    }

    /// The unrounded Rust float a weak scalar was made from.
    pub(crate) fn exact_float(&self) -> Option<f64> {
        match &self.0 {
            Repr::Concrete(c) => c.exact,
            Repr::Tracer(_) => None,
        }
    }

    /// The literal value of a scalar made from a Rust number.
    pub fn known_scalar(&self) -> Option<Literal> {
        match &self.0 {
            Repr::Concrete(c) => c.scalar,
            Repr::Tracer(_) => None,
        }
    }

    /// The same concrete value with another weak flag (`None` for a tracer).
    pub fn rewrap_weak(&self, weak_type: bool) -> Option<Array> {
        match &self.0 {
            Repr::Concrete(c) => {
                let mut aval = c.aval.clone();
                if let Aval::Array(a) = &mut aval {
                    a.weak_type = weak_type;
                }
                Some(Array(Repr::Concrete(Arc::new(Concrete {
                    aval,
                    buffer: c.buffer.clone(),
                    scalar: c.scalar,
                    // A strongly typed scalar has its dtype's value only.
                    exact: c.exact.filter(|_| weak_type),
                }))))
            }
            Repr::Tracer(_) => None,
        }
    }

    /// The tracer behind this array, if it is one.
    pub fn as_tracer(&self) -> Option<&TracerRef> {
        match &self.0 {
            Repr::Tracer(t) => Some(t),
            Repr::Concrete(_) => None,
        }
    }

    /// True for tracers.
    pub fn is_tracer(&self) -> bool {
        matches!(self.0, Repr::Tracer(_))
    }

    /// The buffer of a concrete array.
    pub fn buffer(&self) -> Option<&Arc<dyn Buffer>> {
        match &self.0 {
            Repr::Concrete(c) => Some(&c.buffer),
            Repr::Tracer(_) => None,
        }
    }

    /// `x.block_until_ready()`: waits until a concrete array's value has
    /// been computed on its device (GPU work runs asynchronously) and
    /// reports the first error of that work; a tracer is a concretization
    /// error.
    pub fn block_until_ready(&self) -> Result<&Array> {
        match &self.0 {
            Repr::Concrete(c) => {
                c.buffer.block_until_ready()?;
                Ok(self)
            }
            Repr::Tracer(_) => Err(self.concretization_error("block_until_ready")),
        }
    }

    /// An address identifying this array's shared representation, so traces
    /// can recognise the same captured value twice.
    pub fn identity(&self) -> usize {
        match &self.0 {
            Repr::Concrete(c) => Arc::as_ptr(c) as *const () as usize,
            Repr::Tracer(t) => Arc::as_ptr(t) as *const () as usize,
        }
    }

    /// The abstract value (type) of this array.
    pub fn aval(&self) -> &Aval {
        match &self.0 {
            Repr::Concrete(c) => &c.aval,
            Repr::Tracer(t) => &t.aval,
        }
    }

    /// The array type (for a `Ref`, the referenced array's type).
    pub fn ty(&self) -> &ShapedArray {
        self.aval().array()
    }

    /// The element type.
    pub fn dtype(&self) -> DType {
        self.ty().dtype
    }

    /// Whether the array is weakly typed (came from a Rust scalar).
    pub fn weak_type(&self) -> bool {
        self.ty().weak_type
    }

    /// The number of dimensions.
    pub fn ndim(&self) -> usize {
        self.ty().shape.len()
    }

    /// The static shape; raises a concretization error for a dynamic one.
    #[track_caller]
    pub fn shape(&self) -> Vec<usize> {
        crate::error::ok_or_raise(self.try_shape())
    }

    /// The static shape, or a concretization error for a dynamic one.
    pub fn try_shape(&self) -> Result<Vec<usize>> {
        self.ty()
            .static_sizes()
            .ok_or_else(|| self.concretization_error("shape (of a dynamic-shape array)"))
    }

    /// The number of elements (static shapes).
    pub fn size(&self) -> usize {
        self.shape().iter().product()
    }

    /// The error for needing the value of this tracer in `op`.
    pub fn concretization_error(&self, op: &str) -> Error {
        Error::Concretization {
            op: op.to_string(),
            aval: fmt_aval(self.aval()),
        }
    }

    /// The value on the host; a concretization error for a tracer.
    pub fn try_to_host(&self, op: &str) -> Result<HostArray> {
        match &self.0 {
            Repr::Concrete(c) => Ok(c.buffer.to_host()?),
            Repr::Tracer(t) => {
                crate::core::check_live(t)?;
                Err(self.concretization_error(op))
            }
        }
    }

    /// The elements in row-major order.
    pub fn try_to_vec<T: Element>(&self) -> Result<Vec<T>> {
        let host = self.try_to_host("to_vec")?;
        T::from_storage(host.data())
            .map(|s| s.to_vec())
            .ok_or_else(|| Error::DTypeMismatch {
                op: "to_vec".into(),
                lhs: fmt_aval(self.aval()),
                rhs: T::DTYPE.short_name().into(),
            })
    }

    /// The elements in row-major order; raises for a tracer or wrong `T`.
    #[track_caller]
    pub fn to_vec<T: Element>(&self) -> Vec<T> {
        crate::error::ok_or_raise(self.try_to_vec())
    }

    /// The single element of a size-1 array.
    pub fn try_item<T: Element>(&self) -> Result<T> {
        let v = self.try_to_vec::<T>()?;
        match v.as_slice() {
            [x] => Ok(*x),
            _ => Err(Error::InvalidArgument(format!(
                "item() needs an array of size 1, got {}",
                fmt_aval(self.aval())
            ))),
        }
    }

    /// The single element of a size-1 array; raises otherwise.
    #[track_caller]
    pub fn item<T: Element>(&self) -> T {
        crate::error::ok_or_raise(self.try_item())
    }

    /// The single value of a size-1 array as f64, whatever its dtype.
    pub fn try_scalar_f64(&self, op: &str) -> Result<f64> {
        let host = self.try_to_host(op)?;
        if host.len() != 1 {
            return Err(Error::InvalidArgument(format!(
                "{op} needs an array of size 1, got {}",
                fmt_aval(self.aval())
            )));
        }
        Ok(host.data().get_f64(0))
    }
}

impl fmt::Debug for Array {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.0 {
            Repr::Concrete(c) => match c.buffer.to_host() {
                Ok(h) => write!(f, "Array({}, {:?})", fmt_aval(&c.aval), h.data()),
                Err(e) => write!(f, "Array({}, <{e}>)", fmt_aval(&c.aval)),
            },
            Repr::Tracer(t) => write!(
                f,
                "Traced<{}>with<{}>",
                fmt_aval(&t.aval),
                t.main.trace().name()
            ),
        }
    }
}

impl fmt::Display for Array {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self, f)
    }
}

/// A Rust element type with a jaxon dtype.
pub trait Element: Copy + Send + Sync + 'static {
    /// The dtype.
    const DTYPE: DType;
    /// Wraps elements as typed storage.
    fn into_storage(v: Vec<Self>) -> Storage;
    /// The elements of storage of this type.
    fn from_storage(s: &Storage) -> Option<&[Self]>;
}

macro_rules! element {
    ($($t:ty => $d:ident, $s:ident;)*) => {$(
        impl Element for $t {
            const DTYPE: DType = DType::$d;
            fn into_storage(v: Vec<Self>) -> Storage {
                Storage::$s(v)
            }
            fn from_storage(s: &Storage) -> Option<&[Self]> {
                match s {
                    Storage::$s(v) => Some(v),
                    _ => None,
                }
            }
        }
    )*};
}

element! {
    bool => Bool, Bool;
    i8 => I8, I8;
    i16 => I16, I16;
    i32 => I32, I32;
    i64 => I64, I64;
    u8 => U8, U8;
    u16 => U16, U16;
    u32 => U32, U32;
    u64 => U64, U64;
    f16 => F16, F16;
    bf16 => BF16, BF16;
    f32 => F32, F32;
    f64 => F64, F64;
    jaxon_ir::num_complex::Complex32 => C64, C64;
    jaxon_ir::num_complex::Complex64 => C128, C128;
}

/// A Rust scalar that becomes a weakly typed array, like a Python scalar.
pub trait WeakScalar: Copy {
    /// `(dtype, value, weak)`.
    fn weak_parts(self) -> (DType, f64, bool);
}

macro_rules! weak_scalar {
    ($($t:ty => $d:ident;)*) => {$(
        impl WeakScalar for $t {
            fn weak_parts(self) -> (DType, f64, bool) {
                (DType::$d, self as f64, true)
            }
        }
    )*};
}

weak_scalar! {
    f32 => F32;
    f64 => F32;
    i32 => I32;
    i64 => I32;
    usize => I32;
}

impl WeakScalar for bool {
    fn weak_parts(self) -> (DType, f64, bool) {
        (DType::Bool, self as u8 as f64, false)
    }
}

impl From<HostArray> for Array {
    fn from(h: HostArray) -> Array {
        Array::from_host(h)
    }
}

/// Raises the concretization error of `x` for `op` (used by operators that
/// must return a Rust value).
#[track_caller]
pub(crate) fn raise_concretization(x: &Array, op: &str) -> ! {
    raise(x.concretization_error(op))
}
