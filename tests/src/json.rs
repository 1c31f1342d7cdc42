//! Decoding the conformance corpus: JSON arrays into `HostArray`s and JSON
//! lines into [`Case`]s (schema: `tests/data/README.md`).

use half::{bf16, f16};
use jaxon_ir::num_complex::Complex64;
use jaxon_ir::{DType, HostArray, Storage};
use serde_json::Value;

/// JAX's grad of a case: `{argnums, jaxpr, consts, outputs}`.
#[derive(Clone, Debug, PartialEq)]
pub struct GradRecord {
    /// The differentiated (floating) argument positions.
    pub argnums: Vec<usize>,
    /// The grad jaxpr as JAX prints it.
    pub jaxpr: String,
    /// One value per constvar binder of `jaxpr`, in text order.
    pub consts: Vec<HostArray>,
    /// The gradients, one per `argnums` entry.
    pub outputs: Vec<HostArray>,
}

/// JAX's jvp of a case. `None` marks a float0 tangent (int/bool value).
#[derive(Clone, Debug, PartialEq)]
pub struct JvpRecord {
    /// Input tangents.
    pub tangents: Vec<Option<HostArray>>,
    /// Output tangents.
    pub out_tangents: Vec<Option<HostArray>>,
}

/// JAX's vmap of a case (batch size 3, `out_axes=0`).
#[derive(Clone, Debug, PartialEq)]
pub struct VmapRecord {
    /// The batch axis of each input, `None` for an unbatched input.
    pub in_axes: Vec<Option<usize>>,
    /// Batched inputs.
    pub inputs: Vec<HostArray>,
    /// Batched outputs (batch axis 0).
    pub outputs: Vec<HostArray>,
}

/// One conformance case: a jaxpr as JAX prints it, its inputs and JAX's
/// outputs, and where they apply JAX's grad, jvp and vmap results.
#[derive(Clone, Debug, PartialEq)]
pub struct Case {
    /// Unique case name.
    pub name: String,
    /// Group (elementwise, dtypes, shapes, ...).
    pub group: String,
    /// `str(jax.make_jaxpr(f)(*args))`.
    pub jaxpr: String,
    /// One value per constvar binder, in text order.
    pub consts: Vec<HostArray>,
    /// Flattened inputs.
    pub inputs: Vec<HostArray>,
    /// Flattened expected outputs.
    pub outputs: Vec<HostArray>,
    /// Relative tolerance for float outputs.
    pub rtol: f64,
    /// Absolute tolerance for float outputs.
    pub atol: f64,
    /// JAX's grad, if it applies.
    pub grad: Option<GradRecord>,
    /// JAX's jvp, if it applies.
    pub jvp: Option<JvpRecord>,
    /// JAX's vmap, if it applies.
    pub vmap: Option<VmapRecord>,
}

/// Decodes an ARRAY object `{"dtype", "shape", "data"}` (row-major data,
/// floats may be `"nan"`, `"inf"`, `"-inf"`; nested data lists are
/// flattened).
pub fn decode_array(v: &Value) -> Result<HostArray, String> {
    let dtype_name = field(v, "dtype")?
        .as_str()
        .ok_or("array: dtype is not a string")?;
    let dtype = DType::from_name(dtype_name).ok_or(format!("array: unknown dtype {dtype_name}"))?;
    let shape = field(v, "shape")?
        .as_array()
        .ok_or("array: shape is not a list")?
        .iter()
        .map(|d| {
            d.as_u64()
                .map(|d| d as usize)
                .ok_or(format!("array: bad dimension {d}"))
        })
        .collect::<Result<Vec<usize>, String>>()?;
    let mut flat = Vec::new();
    flatten(field(v, "data")?, &mut flat)?;
    let storage = decode_storage(dtype, &flat)?;
    HostArray::new(shape, storage).map_err(|e| format!("array: {e}"))
}

fn flatten<'a>(v: &'a Value, out: &mut Vec<&'a Value>) -> Result<(), String> {
    match v {
        Value::Array(items) => {
            for item in items {
                flatten(item, out)?;
            }
            Ok(())
        }
        other => {
            out.push(other);
            Ok(())
        }
    }
}

fn decode_storage(dtype: DType, data: &[&Value]) -> Result<Storage, String> {
    fn all<T>(data: &[&Value], f: impl Fn(&Value) -> Result<T, String>) -> Result<Vec<T>, String> {
        data.iter().map(|v| f(v)).collect()
    }
    Ok(match dtype {
        DType::Bool => Storage::Bool(all(data, decode_bool)?),
        DType::I8 => Storage::I8(all(data, |v| int_as(v, dtype))?),
        DType::I16 => Storage::I16(all(data, |v| int_as(v, dtype))?),
        DType::I32 => Storage::I32(all(data, |v| int_as(v, dtype))?),
        DType::I64 => Storage::I64(all(data, |v| int_as(v, dtype))?),
        DType::U8 => Storage::U8(all(data, |v| uint_as(v, dtype))?),
        DType::U16 => Storage::U16(all(data, |v| uint_as(v, dtype))?),
        DType::U32 => Storage::U32(all(data, |v| uint_as(v, dtype))?),
        DType::U64 => Storage::U64(all(data, |v| uint_as(v, dtype))?),
        DType::F16 => Storage::F16(all(data, |v| decode_float(v).map(f16::from_f64))?),
        DType::BF16 => Storage::BF16(all(data, |v| decode_float(v).map(bf16::from_f64))?),
        DType::F32 => Storage::F32(all(data, |v| decode_float(v).map(|x| x as f32))?),
        DType::F64 => Storage::F64(all(data, decode_float)?),
        DType::C64 | DType::C128 => {
            // Interleaved (real, imaginary) pairs.
            if !data.len().is_multiple_of(2) {
                return Err(format!(
                    "{dtype} data has an odd number {} of parts",
                    data.len()
                ));
            }
            let parts = all(data, decode_float)?;
            let z: Vec<Complex64> = parts
                .chunks_exact(2)
                .map(|p| Complex64::new(p[0], p[1]))
                .collect();
            Storage::from_c128(dtype, &z)
        }
        DType::KeyFry => {
            // Key data: the two u32 words of each key, in order.
            let words: Vec<u32> = all(data, |v| uint_as(v, DType::U32))?;
            if !words.len().is_multiple_of(2) {
                return Err("key data has an odd number of words".into());
            }
            Storage::Key(words.chunks_exact(2).map(|w| [w[0], w[1]]).collect())
        }
    })
}

fn decode_bool(v: &Value) -> Result<bool, String> {
    match v {
        Value::Bool(b) => Ok(*b),
        Value::Number(n) if n.as_u64() == Some(0) => Ok(false),
        Value::Number(n) if n.as_u64() == Some(1) => Ok(true),
        other => Err(format!("bool element expected, found {other}")),
    }
}

/// A float element: a JSON number or `"nan"`, `"inf"`, `"-inf"`.
fn decode_float(v: &Value) -> Result<f64, String> {
    match v {
        Value::Number(n) => n.as_f64().ok_or(format!("bad float {n}")),
        Value::String(s) => match s.as_str() {
            "nan" => Ok(f64::NAN),
            "inf" => Ok(f64::INFINITY),
            "-inf" => Ok(f64::NEG_INFINITY),
            _ => Err(format!("bad float string {s:?}")),
        },
        other => Err(format!("float element expected, found {other}")),
    }
}

fn int_as<T: TryFrom<i64>>(v: &Value, dtype: DType) -> Result<T, String> {
    let i = v
        .as_i64()
        .ok_or(format!("{dtype} element expected, found {v}"))?;
    T::try_from(i).map_err(|_| format!("{i} is out of range for {dtype}"))
}

fn uint_as<T: TryFrom<u64>>(v: &Value, dtype: DType) -> Result<T, String> {
    let u = v
        .as_u64()
        .ok_or(format!("{dtype} element expected, found {v}"))?;
    T::try_from(u).map_err(|_| format!("{u} is out of range for {dtype}"))
}

fn field<'a>(v: &'a Value, key: &str) -> Result<&'a Value, String> {
    v.get(key).ok_or(format!("missing field {key:?}"))
}

fn arrays(v: &Value, what: &str) -> Result<Vec<HostArray>, String> {
    v.as_array()
        .ok_or(format!("{what} is not a list"))?
        .iter()
        .enumerate()
        .map(|(i, a)| decode_array(a).map_err(|e| format!("{what}[{i}]: {e}")))
        .collect()
}

fn optional_arrays(v: &Value, what: &str) -> Result<Vec<Option<HostArray>>, String> {
    v.as_array()
        .ok_or(format!("{what} is not a list"))?
        .iter()
        .enumerate()
        .map(|(i, a)| match a {
            Value::Null => Ok(None),
            a => decode_array(a)
                .map(Some)
                .map_err(|e| format!("{what}[{i}]: {e}")),
        })
        .collect()
}

fn string(v: &Value, key: &str) -> Result<String, String> {
    field(v, key)?
        .as_str()
        .map(str::to_string)
        .ok_or(format!("{key} is not a string"))
}

fn number(v: &Value, key: &str) -> Result<f64, String> {
    field(v, key)?
        .as_f64()
        .ok_or(format!("{key} is not a number"))
}

fn non_null<'a>(v: &'a Value, key: &str) -> Option<&'a Value> {
    v.get(key).filter(|x| !x.is_null())
}

/// The `name` and `group` of a corpus line, for reporting a case whose
/// values cannot be decoded (a dtype this build does not know).
pub fn decode_header(line: &str) -> Result<(String, String), String> {
    let v: Value = serde_json::from_str(line).map_err(|e| format!("bad JSON: {e}"))?;
    Ok((string(&v, "name")?, string(&v, "group")?))
}

/// Decodes one corpus line.
pub fn decode_case(line: &str) -> Result<Case, String> {
    let v: Value = serde_json::from_str(line).map_err(|e| format!("bad JSON: {e}"))?;
    let name = string(&v, "name")?;
    let ctx = |e: String| format!("case {name}: {e}");
    let grad = match non_null(&v, "grad") {
        None => None,
        Some(g) => Some(GradRecord {
            argnums: field(g, "argnums")
                .map_err(ctx)?
                .as_array()
                .ok_or_else(|| ctx("grad.argnums is not a list".into()))?
                .iter()
                .map(|a| a.as_u64().map(|a| a as usize))
                .collect::<Option<Vec<usize>>>()
                .ok_or_else(|| ctx("grad.argnums holds a non-index".into()))?,
            jaxpr: string(g, "jaxpr").map_err(ctx)?,
            consts: match non_null(g, "consts") {
                Some(c) => arrays(c, "grad.consts").map_err(ctx)?,
                None => Vec::new(),
            },
            outputs: arrays(field(g, "outputs").map_err(ctx)?, "grad.outputs").map_err(ctx)?,
        }),
    };
    let jvp = match non_null(&v, "jvp") {
        None => None,
        Some(j) => Some(JvpRecord {
            tangents: optional_arrays(field(j, "tangents").map_err(ctx)?, "jvp.tangents")
                .map_err(ctx)?,
            out_tangents: optional_arrays(
                field(j, "out_tangents").map_err(ctx)?,
                "jvp.out_tangents",
            )
            .map_err(ctx)?,
        }),
    };
    let vmap = match non_null(&v, "vmap") {
        None => None,
        Some(m) => Some(VmapRecord {
            in_axes: field(m, "in_axes")
                .map_err(ctx)?
                .as_array()
                .ok_or_else(|| ctx("vmap.in_axes is not a list".into()))?
                .iter()
                .map(|a| match a {
                    Value::Null => Ok(None),
                    a => a
                        .as_u64()
                        .map(|a| Some(a as usize))
                        .ok_or_else(|| ctx(format!("bad vmap axis {a}"))),
                })
                .collect::<Result<Vec<_>, String>>()?,
            inputs: arrays(field(m, "inputs").map_err(ctx)?, "vmap.inputs").map_err(ctx)?,
            outputs: arrays(field(m, "outputs").map_err(ctx)?, "vmap.outputs").map_err(ctx)?,
        }),
    };
    Ok(Case {
        group: string(&v, "group").map_err(ctx)?,
        jaxpr: string(&v, "jaxpr").map_err(ctx)?,
        consts: match non_null(&v, "consts") {
            Some(c) => arrays(c, "consts").map_err(ctx)?,
            None => Vec::new(),
        },
        inputs: arrays(field(&v, "inputs").map_err(ctx)?, "inputs").map_err(ctx)?,
        outputs: arrays(field(&v, "outputs").map_err(ctx)?, "outputs").map_err(ctx)?,
        rtol: number(&v, "rtol").map_err(ctx)?,
        atol: number(&v, "atol").map_err(ctx)?,
        grad,
        jvp,
        vmap,
        name,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn arr(s: &str) -> Result<HostArray, String> {
        decode_array(&serde_json::from_str(s).unwrap())
    }

    #[test]
    fn decodes_floats_with_special_values() {
        let a = arr(r#"{"dtype":"f32","shape":[2,2],"data":[1.5,"nan","inf","-inf"]}"#).unwrap();
        assert_eq!(a.shape(), &[2, 2]);
        let Storage::F32(v) = a.data() else {
            panic!("not f32: {a:?}")
        };
        assert_eq!(v[0], 1.5);
        assert!(v[1].is_nan());
        assert_eq!((v[2], v[3]), (f32::INFINITY, f32::NEG_INFINITY));
        // f32 data is rounded from the JSON double.
        let b = arr(r#"{"dtype":"f32","shape":[],"data":[0.1]}"#).unwrap();
        assert_eq!(b.data(), &Storage::F32(vec![0.1f32]));
        let c = arr(r#"{"dtype":"f64","shape":[1],"data":[0.1]}"#).unwrap();
        assert_eq!(c.data(), &Storage::F64(vec![0.1f64]));
    }

    #[test]
    fn decodes_half_types_exactly() {
        let a = arr(r#"{"dtype":"f16","shape":[2],"data":[0.0999755859375,65504.0]}"#).unwrap();
        assert_eq!(
            a.data(),
            &Storage::F16(vec![f16::from_f64(0.0999755859375), f16::MAX])
        );
        let b = arr(r#"{"dtype":"bf16","shape":[1],"data":[1.0078125]}"#).unwrap();
        assert_eq!(b.data(), &Storage::BF16(vec![bf16::from_f64(1.0078125)]));
        assert_eq!(b.to_f64_vec(), vec![1.0078125]);
    }

    #[test]
    fn decodes_ints_and_bools_with_range_checks() {
        let a = arr(r#"{"dtype":"u32","shape":[2],"data":[4294967295,7]}"#).unwrap();
        assert_eq!(a.data(), &Storage::U32(vec![u32::MAX, 7]));
        let b = arr(r#"{"dtype":"i64","shape":[1],"data":[-9223372036854775808]}"#).unwrap();
        assert_eq!(b.data(), &Storage::I64(vec![i64::MIN]));
        let c = arr(r#"{"dtype":"bool","shape":[3],"data":[true,false,true]}"#).unwrap();
        assert_eq!(c.data(), &Storage::Bool(vec![true, false, true]));
        let d = arr(r#"{"dtype":"u8","shape":[2],"data":[255,0]}"#).unwrap();
        assert_eq!(d.data(), &Storage::U8(vec![255, 0]));
        assert!(arr(r#"{"dtype":"u8","shape":[1],"data":[256]}"#).is_err());
        assert!(arr(r#"{"dtype":"i32","shape":[1],"data":[1.5]}"#).is_err());
        assert!(arr(r#"{"dtype":"i32","shape":[1],"data":[2147483648]}"#).is_err());
        assert!(arr(r#"{"dtype":"u32","shape":[1],"data":[-1]}"#).is_err());
    }

    #[test]
    fn checks_shape_and_dtype() {
        // Row-major, nested data is flattened.
        let a = arr(r#"{"dtype":"i32","shape":[2,3],"data":[[1,2,3],[4,5,6]]}"#).unwrap();
        assert_eq!(a.data(), &Storage::I32(vec![1, 2, 3, 4, 5, 6]));
        assert!(arr(r#"{"dtype":"i32","shape":[2,3],"data":[1,2]}"#).is_err());
        assert!(arr(r#"{"dtype":"c64","shape":[],"data":[1]}"#).is_err());
        let c = arr(r#"{"dtype":"c64","shape":[2],"data":[1.5,-2,"nan",0.25]}"#).unwrap();
        assert_eq!(c.to_c128_vec()[0], Complex64::new(1.5, -2.0));
        assert!(c.to_c128_vec()[1].re.is_nan());
        assert_eq!(c.to_c128_vec()[1].im, 0.25);
        let z = arr(r#"{"dtype":"f32","shape":[0,4],"data":[]}"#).unwrap();
        assert_eq!((z.shape(), z.len()), (&[0usize, 4][..], 0));
    }

    #[test]
    fn decodes_a_case_with_optional_records() {
        let line = r#"{"name":"n","group":"g","jaxpr":"{ lambda ; a:f32[]. let  in (a,) }",
            "consts":[],"inputs":[{"dtype":"f32","shape":[],"data":[2.0]}],
            "outputs":[{"dtype":"f32","shape":[],"data":[2.0]}],"rtol":1e-05,"atol":1e-06,
            "grad":{"argnums":[0],"jaxpr":"J","consts":[{"dtype":"i32","shape":[1],"data":[3]}],
                    "outputs":[{"dtype":"f32","shape":[],"data":[1.0]}]},
            "jvp":{"tangents":[null],"out_tangents":[{"dtype":"f32","shape":[],"data":[0.5]}]},
            "vmap":{"in_axes":[null],"inputs":[{"dtype":"f32","shape":[],"data":[2.0]}],
                    "outputs":[{"dtype":"f32","shape":[3],"data":[2.0,2.0,2.0]}]}}"#;
        let c = decode_case(&line.replace('\n', " ")).unwrap();
        assert_eq!((c.name.as_str(), c.group.as_str()), ("n", "g"));
        assert_eq!((c.rtol, c.atol), (1e-5, 1e-6));
        let g = c.grad.unwrap();
        assert_eq!((g.argnums, g.jaxpr.as_str()), (vec![0], "J"));
        assert_eq!(g.consts[0].data(), &Storage::I32(vec![3]));
        let j = c.jvp.unwrap();
        assert_eq!(j.tangents, vec![None]);
        assert_eq!(j.out_tangents[0].as_ref().unwrap().to_f64_vec(), vec![0.5]);
        let m = c.vmap.unwrap();
        assert_eq!(m.in_axes, vec![None]);
        assert_eq!(m.outputs[0].shape(), &[3]);
        let no_grad = line
            .replace('\n', " ")
            .replace(r#""grad":{"#, r#""grad":null,"x":{"#);
        assert_eq!(decode_case(&no_grad).unwrap().grad, None);
    }

    #[test]
    fn decodes_the_whole_corpus() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/data/jax-0.10.2-public.jsonl");
        let text = std::fs::read_to_string(path).unwrap();
        let cases: Vec<Case> = text.lines().map(|l| decode_case(l).unwrap()).collect();
        assert_eq!(cases.len(), 141);
        assert_eq!(cases.iter().filter(|c| c.grad.is_some()).count(), 113);
        assert_eq!(cases.iter().filter(|c| c.jvp.is_some()).count(), 122);
        // unary_neg: outputs are the negated inputs.
        let neg = &cases[0];
        assert_eq!(neg.name, "unary_neg");
        let (x, y) = (neg.inputs[0].to_f64_vec(), neg.outputs[0].to_f64_vec());
        assert_eq!(x.len(), 12);
        assert!(x.iter().zip(&y).all(|(a, b)| *a == -*b));
        // Each constvar list decodes, e.g. the scatter rows case has consts.
        let scatter = cases.iter().find(|c| c.name == "scatter_set_rows").unwrap();
        assert!(!scatter.consts.is_empty());
    }
}
