//! Comparing computed arrays with expected ones within tolerances, and
//! describing the first difference.
//!
//! Floats match when `abs(got - exp) <= atol + rtol * abs(exp)`; NaN matches
//! only NaN and ±inf only the same infinity. Integers and bools must match
//! exactly. Shapes and dtypes must match.

use jaxon_ir::num_complex::Complex64;
use jaxon_ir::{HostArray, Storage};

/// Relative and absolute tolerances for float comparisons.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Tolerance {
    /// Relative tolerance.
    pub rtol: f64,
    /// Absolute tolerance.
    pub atol: f64,
}

impl Tolerance {
    /// Exact comparison.
    pub const EXACT: Tolerance = Tolerance {
        rtol: 0.0,
        atol: 0.0,
    };

    /// Whether a computed float matches an expected one.
    pub fn float_matches(self, got: f64, exp: f64) -> bool {
        if exp.is_nan() || got.is_nan() {
            return exp.is_nan() && got.is_nan();
        }
        if exp.is_infinite() || got.is_infinite() {
            return got == exp;
        }
        (got - exp).abs() <= self.atol + self.rtol * exp.abs()
    }

    /// Whether a computed complex number matches an expected one: as NumPy's
    /// `allclose` on complex values (moduli), part by part where a part is
    /// NaN or infinite.
    pub fn complex_matches(self, got: Complex64, exp: Complex64) -> bool {
        let finite = |z: Complex64| z.re.is_finite() && z.im.is_finite();
        if !finite(got) || !finite(exp) {
            return self.float_matches(got.re, exp.re) && self.float_matches(got.im, exp.im);
        }
        (got - exp).norm() <= self.atol + self.rtol * exp.norm()
    }
}

/// Formats element `i` of a storage in its own type.
fn element(s: &Storage, i: usize) -> String {
    match s {
        Storage::Bool(v) => v[i].to_string(),
        Storage::I8(v) => v[i].to_string(),
        Storage::I16(v) => v[i].to_string(),
        Storage::I32(v) => v[i].to_string(),
        Storage::I64(v) => v[i].to_string(),
        Storage::U8(v) => v[i].to_string(),
        Storage::U16(v) => v[i].to_string(),
        Storage::U32(v) => v[i].to_string(),
        Storage::U64(v) => v[i].to_string(),
        Storage::F16(v) => format!("{:?}", v[i].to_f64()),
        Storage::BF16(v) => format!("{:?}", v[i].to_f64()),
        Storage::F32(v) => format!("{:?}", v[i]),
        Storage::F64(v) => format!("{:?}", v[i]),
        Storage::C64(v) => format!("{:?}", v[i]),
        Storage::C128(v) => format!("{:?}", v[i]),
        Storage::Key(v) => format!("{:?}", v[i]),
    }
}

/// Whether element `i` matches: floats within `tol`, others exactly.
fn element_matches(got: &Storage, exp: &Storage, i: usize, tol: Tolerance) -> bool {
    match (got, exp) {
        (Storage::Bool(a), Storage::Bool(b)) => a[i] == b[i],
        (Storage::I8(a), Storage::I8(b)) => a[i] == b[i],
        (Storage::I16(a), Storage::I16(b)) => a[i] == b[i],
        (Storage::I32(a), Storage::I32(b)) => a[i] == b[i],
        (Storage::I64(a), Storage::I64(b)) => a[i] == b[i],
        (Storage::U8(a), Storage::U8(b)) => a[i] == b[i],
        (Storage::U16(a), Storage::U16(b)) => a[i] == b[i],
        (Storage::U32(a), Storage::U32(b)) => a[i] == b[i],
        (Storage::U64(a), Storage::U64(b)) => a[i] == b[i],
        (Storage::Key(a), Storage::Key(b)) => a[i] == b[i],
        (Storage::F16(_), Storage::F16(_))
        | (Storage::BF16(_), Storage::BF16(_))
        | (Storage::F32(_), Storage::F32(_))
        | (Storage::F64(_), Storage::F64(_)) => tol.float_matches(got.get_f64(i), exp.get_f64(i)),
        (Storage::C64(_), Storage::C64(_)) | (Storage::C128(_), Storage::C128(_)) => {
            tol.complex_matches(got.get_c128(i), exp.get_c128(i))
        }
        _ => false,
    }
}

/// The multi-index of flat (row-major) position `i` in `shape`.
fn unravel(mut i: usize, shape: &[usize]) -> Vec<usize> {
    let mut idx = vec![0; shape.len()];
    for (k, &d) in shape.iter().enumerate().rev() {
        if d > 0 {
            idx[k] = i % d;
            i /= d;
        }
    }
    idx
}

/// Compares one array; on mismatch describes the first difference (dtype,
/// shape, or the first element out of tolerance and how many are).
pub fn compare_arrays(got: &HostArray, exp: &HostArray, tol: Tolerance) -> Result<(), String> {
    if got.dtype() != exp.dtype() {
        return Err(format!(
            "dtype: got {}{:?}, expected {}{:?}",
            got.dtype(),
            got.shape(),
            exp.dtype(),
            exp.shape()
        ));
    }
    if got.shape() != exp.shape() {
        return Err(format!(
            "shape: got {}{:?}, expected {}{:?}",
            got.dtype(),
            got.shape(),
            exp.dtype(),
            exp.shape()
        ));
    }
    let (g, e) = (got.data(), exp.data());
    let bad: Vec<usize> = (0..exp.len())
        .filter(|&i| !element_matches(g, e, i, tol))
        .collect();
    match bad.first() {
        None => Ok(()),
        Some(&i) => Err(format!(
            "index {:?}: got {}, expected {} ({} of {} elements differ, rtol={:e} atol={:e})",
            unravel(i, exp.shape()),
            element(g, i),
            element(e, i),
            bad.len(),
            exp.len(),
            tol.rtol,
            tol.atol
        )),
    }
}

/// Compares lists of outputs: the count, then each array, naming the first
/// output that differs.
pub fn compare_outputs(got: &[HostArray], exp: &[HostArray], tol: Tolerance) -> Result<(), String> {
    if got.len() != exp.len() {
        return Err(format!("got {} outputs, expected {}", got.len(), exp.len()));
    }
    for (k, (g, e)) in got.iter().zip(exp).enumerate() {
        compare_arrays(g, e, tol).map_err(|m| format!("output {k}: {m}"))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use half::bf16;
    use jaxon_ir::DType;

    const TOL: Tolerance = Tolerance {
        rtol: 1e-5,
        atol: 1e-6,
    };

    fn f32s(shape: &[usize], v: &[f32]) -> HostArray {
        HostArray::new(shape.to_vec(), Storage::F32(v.to_vec())).unwrap()
    }

    #[test]
    fn float_tolerance_is_atol_plus_rtol_times_expected() {
        // Bound at exp = 100: 1e-6 + 1e-3 = 0.001001.
        assert!(TOL.float_matches(100.001, 100.0));
        assert!(!TOL.float_matches(100.0011, 100.0));
        // Relative to the expected value, not the computed one.
        let t = Tolerance {
            rtol: 0.5,
            atol: 0.0,
        };
        assert!(t.float_matches(1.5, 1.0));
        assert!(t.float_matches(1.0, 2.0));
        assert!(!t.float_matches(2.0, 1.0));
        assert!(!t.float_matches(1.5 + 1e-9, 1.0));
        assert!(TOL.float_matches(1e-7, 0.0));
        assert!(!TOL.float_matches(2e-6, 0.0));
    }

    #[test]
    fn nan_and_infinities() {
        assert!(TOL.float_matches(f64::NAN, f64::NAN));
        assert!(!TOL.float_matches(f64::NAN, 1.0));
        assert!(!TOL.float_matches(1.0, f64::NAN));
        assert!(TOL.float_matches(f64::INFINITY, f64::INFINITY));
        assert!(!TOL.float_matches(f64::NEG_INFINITY, f64::INFINITY));
        // A huge finite value never matches inf, even with a loose rtol.
        let loose = Tolerance {
            rtol: 1.0,
            atol: 1.0,
        };
        assert!(!loose.float_matches(f64::MAX, f64::INFINITY));
        assert!(!loose.float_matches(f64::INFINITY, f64::MAX));
    }

    #[test]
    fn reports_first_difference_with_index() {
        let exp = f32s(&[2, 3], &[0.0, 1.0, 2.0, 3.0, f32::NAN, 5.0]);
        let got = f32s(&[2, 3], &[0.0, 1.0, 2.0, 3.5, f32::NAN, 5.5]);
        assert_eq!(compare_arrays(&exp, &exp, TOL), Ok(()));
        let err = compare_arrays(&got, &exp, TOL).unwrap_err();
        assert!(
            err.starts_with("index [1, 0]: got 3.5, expected 3.0 (2 of 6 elements differ"),
            "{err}"
        );
        let err = compare_outputs(&[exp.clone(), got], &[exp.clone(), exp.clone()], TOL);
        assert!(err.unwrap_err().starts_with("output 1: index [1, 0]"));
        assert_eq!(
            compare_outputs(std::slice::from_ref(&exp), &[exp.clone(), exp.clone()], TOL),
            Err("got 1 outputs, expected 2".into())
        );
    }

    #[test]
    fn shape_and_dtype_must_match() {
        let a = f32s(&[2, 3], &[0.0; 6]);
        let b = f32s(&[3, 2], &[0.0; 6]);
        assert_eq!(
            compare_arrays(&a, &b, TOL),
            Err("shape: got f32[2, 3], expected f32[3, 2]".into())
        );
        let c = HostArray::from_f64(DType::F64, &[2, 3], &[0.0; 6]).unwrap();
        assert!(compare_arrays(&a, &c, TOL)
            .unwrap_err()
            .starts_with("dtype:"));
        // Same values, different int dtype.
        let i = HostArray::from_f64(DType::I32, &[2], &[1.0, 2.0]).unwrap();
        let u = HostArray::from_f64(DType::U32, &[2], &[1.0, 2.0]).unwrap();
        assert!(compare_arrays(&i, &u, TOL).is_err());
    }

    #[test]
    fn ints_and_bools_are_exact() {
        let loose = Tolerance {
            rtol: 1.0,
            atol: 10.0,
        };
        let a = HostArray::new(vec![2], Storage::I64(vec![i64::MAX, 3])).unwrap();
        let b = HostArray::new(vec![2], Storage::I64(vec![i64::MAX - 1, 3])).unwrap();
        assert_eq!(
            compare_arrays(&b, &a, loose).unwrap_err(),
            "index [0]: got 9223372036854775806, expected 9223372036854775807 (1 of 2 elements differ, rtol=1e0 atol=1e1)"
        );
        let t = HostArray::new(vec![1], Storage::Bool(vec![true])).unwrap();
        let f = HostArray::new(vec![1], Storage::Bool(vec![false])).unwrap();
        assert!(compare_arrays(&t, &f, loose).is_err());
        assert_eq!(compare_arrays(&t, &t.clone(), Tolerance::EXACT), Ok(()));
    }

    #[test]
    fn half_floats_use_tolerance() {
        let e = HostArray::new(vec![1], Storage::BF16(vec![bf16::from_f64(1.0)])).unwrap();
        let g = HostArray::new(vec![1], Storage::BF16(vec![bf16::from_f64(1.0078125)])).unwrap();
        let loose = Tolerance {
            rtol: 0.01,
            atol: 0.0,
        };
        assert_eq!(compare_arrays(&g, &e, loose), Ok(()));
        assert!(compare_arrays(&g, &e, TOL).is_err());
    }

    #[test]
    fn empty_and_scalar_arrays() {
        let z = f32s(&[0, 3], &[]);
        assert_eq!(compare_arrays(&z, &z.clone(), TOL), Ok(()));
        let s = f32s(&[], &[1.0]);
        let t = f32s(&[], &[2.0]);
        assert!(compare_arrays(&s, &t, TOL)
            .unwrap_err()
            .starts_with("index []: got 1.0"));
    }
}
