//! `HostArray`: a dense, row-major array in host memory, of any dtype.
//!
//! Invariant: `data.len() == shape.iter().product()` and the storage variant
//! matches the dtype; constructors check it and return errors otherwise.

use crate::dtype::DType;
use crate::error::IrError;
use half::{bf16, f16};
use num_complex::{Complex32, Complex64};

/// Typed element storage of a [`HostArray`].
#[derive(Clone, Debug, PartialEq)]
pub enum Storage {
    /// `bool`
    Bool(Vec<bool>),
    /// `i8`
    I8(Vec<i8>),
    /// `i16`
    I16(Vec<i16>),
    /// `i32`
    I32(Vec<i32>),
    /// `i64`
    I64(Vec<i64>),
    /// `u8`
    U8(Vec<u8>),
    /// `u16`
    U16(Vec<u16>),
    /// `u32`
    U32(Vec<u32>),
    /// `u64`
    U64(Vec<u64>),
    /// `f16`
    F16(Vec<f16>),
    /// `bf16`
    BF16(Vec<bf16>),
    /// `f32`
    F32(Vec<f32>),
    /// `f64`
    F64(Vec<f64>),
    /// `c64`
    C64(Vec<Complex32>),
    /// `c128`
    C128(Vec<Complex64>),
    /// `key<fry>`: one typed threefry key, its two `u32` words, per element.
    Key(Vec<[u32; 2]>),
}

/// Applies `$body` to the vector inside any `Storage` variant.
#[macro_export]
macro_rules! with_storage {
    ($storage:expr, $v:ident => $body:expr) => {
        match $storage {
            $crate::array::Storage::Bool($v) => $body,
            $crate::array::Storage::I8($v) => $body,
            $crate::array::Storage::I16($v) => $body,
            $crate::array::Storage::I32($v) => $body,
            $crate::array::Storage::I64($v) => $body,
            $crate::array::Storage::U8($v) => $body,
            $crate::array::Storage::U16($v) => $body,
            $crate::array::Storage::U32($v) => $body,
            $crate::array::Storage::U64($v) => $body,
            $crate::array::Storage::F16($v) => $body,
            $crate::array::Storage::BF16($v) => $body,
            $crate::array::Storage::F32($v) => $body,
            $crate::array::Storage::F64($v) => $body,
            $crate::array::Storage::C64($v) => $body,
            $crate::array::Storage::C128($v) => $body,
            $crate::array::Storage::Key($v) => $body,
        }
    };
}

impl Storage {
    /// The dtype of the elements.
    pub fn dtype(&self) -> DType {
        match self {
            Storage::Bool(_) => DType::Bool,
            Storage::I8(_) => DType::I8,
            Storage::I16(_) => DType::I16,
            Storage::I32(_) => DType::I32,
            Storage::I64(_) => DType::I64,
            Storage::U8(_) => DType::U8,
            Storage::U16(_) => DType::U16,
            Storage::U32(_) => DType::U32,
            Storage::U64(_) => DType::U64,
            Storage::F16(_) => DType::F16,
            Storage::BF16(_) => DType::BF16,
            Storage::F32(_) => DType::F32,
            Storage::F64(_) => DType::F64,
            Storage::C64(_) => DType::C64,
            Storage::C128(_) => DType::C128,
            Storage::Key(_) => DType::KeyFry,
        }
    }

    /// Number of elements.
    pub fn len(&self) -> usize {
        with_storage!(self, v => v.len())
    }

    /// True when there are no elements.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Element `i` converted to f64 (bools are 0 or 1; 64-bit integers may
    /// round; complex numbers give their real part).
    pub fn get_f64(&self, i: usize) -> f64 {
        match self {
            Storage::Bool(v) => v[i] as u8 as f64,
            Storage::I8(v) => v[i] as f64,
            Storage::I16(v) => v[i] as f64,
            Storage::I32(v) => v[i] as f64,
            Storage::I64(v) => v[i] as f64,
            Storage::U8(v) => v[i] as f64,
            Storage::U16(v) => v[i] as f64,
            Storage::U32(v) => v[i] as f64,
            Storage::U64(v) => v[i] as f64,
            Storage::F16(v) => v[i].to_f64(),
            Storage::BF16(v) => v[i].to_f64(),
            Storage::F32(v) => v[i] as f64,
            Storage::F64(v) => v[i],
            Storage::C64(v) => v[i].re as f64,
            Storage::C128(v) => v[i].re,
            Storage::Key(v) => v[i][1] as f64,
        }
    }

    /// Element `i` as i64, for integer and bool storage (floats truncate).
    pub fn get_i64(&self, i: usize) -> i64 {
        match self {
            Storage::Bool(v) => v[i] as i64,
            Storage::I8(v) => v[i] as i64,
            Storage::I16(v) => v[i] as i64,
            Storage::I32(v) => v[i] as i64,
            Storage::I64(v) => v[i],
            Storage::U8(v) => v[i] as i64,
            Storage::U16(v) => v[i] as i64,
            Storage::U32(v) => v[i] as i64,
            Storage::U64(v) => v[i] as i64,
            Storage::F16(v) => v[i].to_f64() as i64,
            Storage::BF16(v) => v[i].to_f64() as i64,
            Storage::F32(v) => v[i] as i64,
            Storage::F64(v) => v[i] as i64,
            Storage::C64(v) => v[i].re as i64,
            Storage::C128(v) => v[i].re as i64,
            Storage::Key(v) => v[i][1] as i64,
        }
    }

    /// Element `i` as a `Complex64` (real dtypes give a zero imaginary part).
    pub fn get_c128(&self, i: usize) -> Complex64 {
        match self {
            Storage::C64(v) => Complex64::new(v[i].re as f64, v[i].im as f64),
            Storage::C128(v) => v[i],
            other => Complex64::new(other.get_f64(i), 0.0),
        }
    }

    /// Converts complex values to `dtype` the way a cast does: a real dtype
    /// takes the real part (as JAX's `convert_element_type` does).
    pub fn from_c128(dtype: DType, values: &[Complex64]) -> Storage {
        match dtype {
            DType::C64 => Storage::C64(
                values
                    .iter()
                    .map(|z| Complex32::new(z.re as f32, z.im as f32))
                    .collect(),
            ),
            DType::C128 => Storage::C128(values.to_vec()),
            _ => {
                let re: Vec<f64> = values.iter().map(|z| z.re).collect();
                Storage::from_f64(dtype, &re)
            }
        }
    }

    /// `n` zeros (false for bool) of `dtype`.
    pub fn zeros(dtype: DType, n: usize) -> Storage {
        match dtype {
            DType::Bool => Storage::Bool(vec![false; n]),
            DType::I8 => Storage::I8(vec![0; n]),
            DType::I16 => Storage::I16(vec![0; n]),
            DType::I32 => Storage::I32(vec![0; n]),
            DType::I64 => Storage::I64(vec![0; n]),
            DType::U8 => Storage::U8(vec![0; n]),
            DType::U16 => Storage::U16(vec![0; n]),
            DType::U32 => Storage::U32(vec![0; n]),
            DType::U64 => Storage::U64(vec![0; n]),
            DType::F16 => Storage::F16(vec![f16::ZERO; n]),
            DType::BF16 => Storage::BF16(vec![bf16::ZERO; n]),
            DType::F32 => Storage::F32(vec![0.0; n]),
            DType::F64 => Storage::F64(vec![0.0; n]),
            DType::C64 => Storage::C64(vec![Complex32::new(0.0, 0.0); n]),
            DType::C128 => Storage::C128(vec![Complex64::new(0.0, 0.0); n]),
            DType::KeyFry => Storage::Key(vec![[0, 0]; n]),
        }
    }

    /// Converts f64 values to `dtype` the way a cast does (floats round,
    /// integers truncate toward zero and saturate, bool is `x != 0`).
    pub fn from_f64(dtype: DType, values: &[f64]) -> Storage {
        let it = values.iter().copied();
        match dtype {
            DType::Bool => Storage::Bool(it.map(|x| x != 0.0).collect()),
            DType::I8 => Storage::I8(it.map(|x| x as i8).collect()),
            DType::I16 => Storage::I16(it.map(|x| x as i16).collect()),
            DType::I32 => Storage::I32(it.map(|x| x as i32).collect()),
            DType::I64 => Storage::I64(it.map(|x| x as i64).collect()),
            DType::U8 => Storage::U8(it.map(|x| x as u8).collect()),
            DType::U16 => Storage::U16(it.map(|x| x as u16).collect()),
            DType::U32 => Storage::U32(it.map(|x| x as u32).collect()),
            DType::U64 => Storage::U64(it.map(|x| x as u64).collect()),
            DType::F16 => Storage::F16(it.map(f16::from_f64).collect()),
            DType::BF16 => Storage::BF16(it.map(bf16::from_f64).collect()),
            DType::F32 => Storage::F32(it.map(|x| x as f32).collect()),
            DType::F64 => Storage::F64(it.collect()),
            DType::C64 => Storage::C64(it.map(|x| Complex32::new(x as f32, 0.0)).collect()),
            DType::C128 => Storage::C128(it.map(|x| Complex64::new(x, 0.0)).collect()),
            DType::KeyFry => Storage::Key(it.map(|x| [0, x as u32]).collect()),
        }
    }
}

/// A dense row-major array on the host.
#[derive(Clone, Debug, PartialEq)]
pub struct HostArray {
    shape: Vec<usize>,
    data: Storage,
}

impl HostArray {
    /// Builds an array, checking that the element count matches the shape.
    pub fn new(shape: Vec<usize>, data: Storage) -> Result<HostArray, IrError> {
        let n: usize = shape.iter().product();
        if n != data.len() {
            return Err(IrError::ArrayLength {
                shape,
                len: data.len(),
            });
        }
        Ok(HostArray { shape, data })
    }

    /// A scalar of `dtype` with value `x` (converted like a cast).
    pub fn scalar(dtype: DType, x: f64) -> HostArray {
        HostArray {
            shape: Vec::new(),
            data: Storage::from_f64(dtype, &[x]),
        }
    }

    /// An array of zeros.
    pub fn zeros(dtype: DType, shape: &[usize]) -> HostArray {
        let n = shape.iter().product();
        HostArray {
            shape: shape.to_vec(),
            data: Storage::zeros(dtype, n),
        }
    }

    /// An array of `dtype` from f64 values (converted like a cast).
    pub fn from_f64(dtype: DType, shape: &[usize], values: &[f64]) -> Result<HostArray, IrError> {
        HostArray::new(shape.to_vec(), Storage::from_f64(dtype, values))
    }

    /// The dtype.
    pub fn dtype(&self) -> DType {
        self.data.dtype()
    }

    /// The shape.
    pub fn shape(&self) -> &[usize] {
        &self.shape
    }

    /// Number of dimensions.
    pub fn ndim(&self) -> usize {
        self.shape.len()
    }

    /// Number of elements.
    pub fn len(&self) -> usize {
        self.data.len()
    }

    /// True when the array has no elements.
    pub fn is_empty(&self) -> bool {
        self.data.is_empty()
    }

    /// The storage.
    pub fn into_storage(self) -> Storage {
        self.data
    }

    /// The elements.
    pub fn data(&self) -> &Storage {
        &self.data
    }

    /// The storage, mutably (its length must not change).
    pub fn data_mut(&mut self) -> &mut Storage {
        &mut self.data
    }

    /// Splits into shape and storage.
    pub fn into_parts(self) -> (Vec<usize>, Storage) {
        (self.shape, self.data)
    }

    /// All elements as `Complex64` (real dtypes give zero imaginary parts).
    pub fn to_c128_vec(&self) -> Vec<Complex64> {
        (0..self.len()).map(|i| self.data.get_c128(i)).collect()
    }

    /// An array of `dtype` from complex values (converted like a cast).
    pub fn from_c128(
        dtype: DType,
        shape: &[usize],
        values: &[Complex64],
    ) -> Result<HostArray, IrError> {
        HostArray::new(shape.to_vec(), Storage::from_c128(dtype, values))
    }

    /// All elements as f64.
    pub fn to_f64_vec(&self) -> Vec<f64> {
        (0..self.len()).map(|i| self.data.get_f64(i)).collect()
    }

    /// The array's type.
    pub fn aval(&self) -> crate::aval::ShapedArray {
        crate::aval::ShapedArray::of(self.dtype(), &self.shape)
    }

    /// Same data with a new shape of equal size.
    pub fn reshape(self, shape: Vec<usize>) -> Result<HostArray, IrError> {
        HostArray::new(shape, self.data)
    }
}

impl HostArray {
    /// The elements as little-endian bytes, row-major: `bool` as one byte
    /// (0 or 1), `f16`/`bf16` as their bits, a complex number as its real
    /// then imaginary part, a key as its two words. The layout of
    /// safetensors files and of device buffers.
    pub fn to_le_bytes(&self) -> Vec<u8> {
        fn le<T: Copy, const N: usize>(v: &[T], f: impl Fn(T) -> [u8; N]) -> Vec<u8> {
            v.iter().flat_map(|&x| f(x)).collect()
        }
        match &self.data {
            Storage::Bool(v) => v.iter().map(|&b| u8::from(b)).collect(),
            Storage::I8(v) => le(v, i8::to_le_bytes),
            Storage::I16(v) => le(v, i16::to_le_bytes),
            Storage::I32(v) => le(v, i32::to_le_bytes),
            Storage::I64(v) => le(v, i64::to_le_bytes),
            Storage::U8(v) => v.clone(),
            Storage::U16(v) => le(v, u16::to_le_bytes),
            Storage::U32(v) => le(v, u32::to_le_bytes),
            Storage::U64(v) => le(v, u64::to_le_bytes),
            Storage::F16(v) => le(v, |x: f16| x.to_bits().to_le_bytes()),
            Storage::BF16(v) => le(v, |x: bf16| x.to_bits().to_le_bytes()),
            Storage::F32(v) => le(v, f32::to_le_bytes),
            Storage::F64(v) => le(v, f64::to_le_bytes),
            Storage::C64(v) => v
                .iter()
                .flat_map(|z| [z.re, z.im])
                .flat_map(f32::to_le_bytes)
                .collect(),
            Storage::C128(v) => v
                .iter()
                .flat_map(|z| [z.re, z.im])
                .flat_map(f64::to_le_bytes)
                .collect(),
            Storage::Key(v) => v.iter().flatten().flat_map(|x| x.to_le_bytes()).collect(),
        }
    }

    /// The inverse of [`HostArray::to_le_bytes`]: an array of `dtype` and
    /// `shape` from exactly `size × itemsize` bytes (any nonzero byte is
    /// `true`), else an error naming both lengths.
    pub fn from_le_bytes(
        dtype: DType,
        shape: &[usize],
        bytes: &[u8],
    ) -> Result<HostArray, IrError> {
        fn get<const N: usize, T>(b: &[u8], f: impl Fn([u8; N]) -> T) -> Vec<T> {
            b.chunks_exact(N)
                .map(|c| {
                    let mut a = [0u8; N];
                    a.copy_from_slice(c);
                    f(a)
                })
                .collect()
        }
        let n = shape
            .iter()
            .try_fold(1usize, |acc, &d| acc.checked_mul(d))
            .and_then(|n| n.checked_mul(dtype.size_bytes()));
        if n != Some(bytes.len()) {
            return Err(IrError::Invalid(format!(
                "{} bytes cannot hold a {dtype}{shape:?} array ({} bytes)",
                bytes.len(),
                n.map_or_else(|| "more than usize::MAX".to_string(), |n| n.to_string())
            )));
        }
        let data = match dtype {
            DType::Bool => Storage::Bool(bytes.iter().map(|&b| b != 0).collect()),
            DType::I8 => Storage::I8(get(bytes, i8::from_le_bytes)),
            DType::I16 => Storage::I16(get(bytes, i16::from_le_bytes)),
            DType::I32 => Storage::I32(get(bytes, i32::from_le_bytes)),
            DType::I64 => Storage::I64(get(bytes, i64::from_le_bytes)),
            DType::U8 => Storage::U8(bytes.to_vec()),
            DType::U16 => Storage::U16(get(bytes, u16::from_le_bytes)),
            DType::U32 => Storage::U32(get(bytes, u32::from_le_bytes)),
            DType::U64 => Storage::U64(get(bytes, u64::from_le_bytes)),
            DType::F16 => Storage::F16(get(bytes, |b| f16::from_bits(u16::from_le_bytes(b)))),
            DType::BF16 => Storage::BF16(get(bytes, |b| bf16::from_bits(u16::from_le_bytes(b)))),
            DType::F32 => Storage::F32(get(bytes, f32::from_le_bytes)),
            DType::F64 => Storage::F64(get(bytes, f64::from_le_bytes)),
            DType::C64 => {
                let p = get(bytes, f32::from_le_bytes);
                Storage::C64(
                    p.chunks_exact(2)
                        .map(|z| Complex32::new(z[0], z[1]))
                        .collect(),
                )
            }
            DType::C128 => {
                let p = get(bytes, f64::from_le_bytes);
                Storage::C128(
                    p.chunks_exact(2)
                        .map(|z| Complex64::new(z[0], z[1]))
                        .collect(),
                )
            }
            DType::KeyFry => {
                let w = get(bytes, u32::from_le_bytes);
                Storage::Key(w.chunks_exact(2).map(|k| [k[0], k[1]]).collect())
            }
        };
        HostArray::new(shape.to_vec(), data)
    }
}
