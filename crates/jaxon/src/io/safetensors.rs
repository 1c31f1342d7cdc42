//! Pytrees of arrays as safetensors files, through the `safetensors` crate.
//!
//! Invariants: every failure (I/O, a malformed file, a missing or extra
//! tensor, a shape or dtype that does not match the template) is an
//! `Error` naming the file and the tensor, never a panic; arrays are
//! written and read in the file's little-endian layout, bit for bit.

use crate::pytree::{leaf_paths, Pytree};
use crate::{Array, DType, Error, Result};
use jaxon_ir::HostArray;
use safetensors::tensor::{Dtype, TensorView};
use safetensors::SafeTensors;
use std::collections::BTreeMap;
use std::path::Path;

fn io_error(path: &Path, what: impl std::fmt::Display) -> Error {
    Error::InvalidArgument(format!("{}: {what}", path.display()))
}

/// The safetensors dtype of `d`, or an error for one the format lacks.
fn to_st(d: DType) -> Result<Dtype> {
    Ok(match d {
        DType::Bool => Dtype::BOOL,
        DType::I8 => Dtype::I8,
        DType::I16 => Dtype::I16,
        DType::I32 => Dtype::I32,
        DType::I64 => Dtype::I64,
        DType::U8 => Dtype::U8,
        DType::U16 => Dtype::U16,
        DType::U32 => Dtype::U32,
        DType::U64 => Dtype::U64,
        DType::F16 => Dtype::F16,
        DType::BF16 => Dtype::BF16,
        DType::F32 => Dtype::F32,
        DType::F64 => Dtype::F64,
        DType::C64 => Dtype::C64,
        DType::C128 | DType::KeyFry => {
            return Err(Error::Unsupported(format!(
                "safetensors has no {d} dtype (store complex128 as its real and imaginary \
                 parts, and keys through random::key_data)"
            )))
        }
    })
}

/// jaxon's dtype for a safetensors one, or an error naming it.
fn from_st(d: Dtype) -> Result<DType> {
    Ok(match d {
        Dtype::BOOL => DType::Bool,
        Dtype::I8 => DType::I8,
        Dtype::I16 => DType::I16,
        Dtype::I32 => DType::I32,
        Dtype::I64 => DType::I64,
        Dtype::U8 => DType::U8,
        Dtype::U16 => DType::U16,
        Dtype::U32 => DType::U32,
        Dtype::U64 => DType::U64,
        Dtype::F16 => DType::F16,
        Dtype::BF16 => DType::BF16,
        Dtype::F32 => DType::F32,
        Dtype::F64 => DType::F64,
        Dtype::C64 => DType::C64,
        other => {
            return Err(Error::Unsupported(format!(
                "safetensors dtype {other:?} has no jaxon dtype"
            )))
        }
    })
}

/// Writes `tensors` (name, array) to `path` as a safetensors file. Names
/// must be distinct; arrays must be concrete (not tracers).
pub fn write_safetensors<'a>(
    path: impl AsRef<Path>,
    tensors: impl IntoIterator<Item = (&'a str, &'a Array)>,
) -> Result<()> {
    let path = path.as_ref();
    let mut named: BTreeMap<String, (Dtype, Vec<usize>, Vec<u8>)> = BTreeMap::new();
    for (name, a) in tensors {
        let host = a.try_to_host("write_safetensors")?;
        let entry = (
            to_st(host.dtype())?,
            host.shape().to_vec(),
            host.to_le_bytes(),
        );
        if named.insert(name.to_string(), entry).is_some() {
            return Err(io_error(path, format!("two tensors are named {name:?}")));
        }
    }
    let views = named
        .iter()
        .map(|(n, (d, s, b))| {
            TensorView::new(*d, s.clone(), b)
                .map(|v| (n.clone(), v))
                .map_err(|e| io_error(path, format!("tensor {n:?}: {e}")))
        })
        .collect::<Result<Vec<_>>>()?;
    safetensors::serialize_to_file(views, None, path).map_err(|e| io_error(path, e))
}

/// Every tensor of the safetensors file at `path`, by name.
pub fn read_safetensors(path: impl AsRef<Path>) -> Result<BTreeMap<String, Array>> {
    let path = path.as_ref();
    let bytes = std::fs::read(path).map_err(|e| io_error(path, e))?;
    let file = SafeTensors::deserialize(&bytes).map_err(|e| io_error(path, e))?;
    let mut out = BTreeMap::new();
    for (name, view) in file.iter() {
        let dtype = from_st(view.dtype()).map_err(|e| io_error(path, format!("{name:?}: {e}")))?;
        let host = HostArray::from_le_bytes(dtype, view.shape(), view.data())
            .map_err(|e| io_error(path, format!("tensor {name:?}: {e}")))?;
        out.insert(name.to_string(), Array::from_host(host));
    }
    Ok(out)
}

/// Saves the array leaves of `tree` to `path`, each under its key path
/// (see the module doc). A tree with one bare array stores it as `""`.
///
/// ```
/// # fn main() -> jaxon::Result<()> {
/// use jaxon::io::{load_safetensors, save_safetensors};
/// use jaxon::Array;
///
/// #[derive(jaxon::Pytree, Clone)]
/// struct Dense { w: Array, b: Array }
///
/// let layer = Dense { w: Array::from_vec(vec![1f32, 2., 3., 4.], &[2, 2]), b: Array::from_vec(vec![0.5f32, -0.5], &[2]) };
/// let path = std::env::temp_dir().join(format!("jaxon-doc-{}.safetensors", std::process::id()));
/// save_safetensors(&path, &layer)?;
/// let back = load_safetensors(&path, &layer)?;
/// assert_eq!(back.w.to_vec::<f32>(), [1., 2., 3., 4.]);
/// # std::fs::remove_file(&path).ok();
/// # Ok(())
/// # }
/// ```
pub fn save_safetensors<T: Pytree>(path: impl AsRef<Path>, tree: &T) -> Result<()> {
    let (leaves, def) = tree.flatten();
    let names = leaf_paths(&def);
    write_safetensors(path, names.iter().map(String::as_str).zip(&leaves))
}

/// Loads the safetensors file at `path` into the structure of `like`: each
/// leaf is read from the tensor under its key path and must have the
/// template leaf's shape and dtype (only those are used, not its values).
/// A missing tensor, an extra one, or a mismatch is an error naming it.
pub fn load_safetensors<T: Pytree>(path: impl AsRef<Path>, like: &T) -> Result<T> {
    let path = path.as_ref();
    let (template, def) = like.flatten();
    let mut tensors = read_safetensors(path)?;
    let mut leaves = Vec::with_capacity(template.len());
    for (name, t) in leaf_paths(&def).iter().zip(&template) {
        let a = tensors
            .remove(name)
            .ok_or_else(|| io_error(path, format!("no tensor named {name:?}")))?;
        if a.dtype() != t.dtype() || a.shape() != t.shape() {
            return Err(io_error(
                path,
                format!(
                    "tensor {name:?} is {}{:?}, but the template's leaf is {}{:?}",
                    a.dtype(),
                    a.shape(),
                    t.dtype(),
                    t.shape()
                ),
            ));
        }
        leaves.push(a);
    }
    if let Some(extra) = tensors.keys().next() {
        return Err(io_error(
            path,
            format!(
                "tensor {extra:?} (and {} more) has no place in the template",
                tensors.len() - 1
            ),
        ));
    }
    T::unflatten(&def, leaves)
}
