//! Differential tests of `conv_general_dilated` on `cuda-sim` against the
//! reference interpreter: 1-, 2- and 3-d convolutions in several layouts,
//! with strides, positive and negative padding, input and kernel dilation,
//! feature groups (depthwise included) and batch groups, in f32, f64, f16,
//! bf16 with an f32 result, i32 and bool.

mod lowering_util;
use lowering_util::{check, tuple, ty, Dist, Tol};

/// One convolution case in logical (N, C, spatial) / (O, I, spatial) terms.
struct Case {
    n: usize,
    c: usize,
    o: usize,
    in_sp: Vec<usize>,
    k_sp: Vec<usize>,
    strides: Vec<usize>,
    pad: Vec<(i64, i64)>,
    ld: Vec<usize>,
    rd: Vec<usize>,
    groups: usize,
    bgroups: usize,
    /// lhs, rhs, out specs.
    specs: [Vec<usize>; 3],
}

impl Case {
    fn out_sp(&self) -> Vec<usize> {
        (0..self.in_sp.len())
            .map(|d| {
                let dil_in = if self.in_sp[d] == 0 {
                    0
                } else {
                    (self.in_sp[d] as i64 - 1) * self.ld[d] as i64 + 1
                };
                let padded = dil_in + self.pad[d].0 + self.pad[d].1;
                let eff_k = (self.k_sp[d] as i64 - 1) * self.rd[d] as i64 + 1;
                if padded >= eff_k && padded > 0 {
                    ((padded - eff_k) / self.strides[d] as i64 + 1) as usize
                } else {
                    0
                }
            })
            .collect()
    }

    /// A physical shape from logical dims (batch, feature, spatial...).
    fn physical(spec: &[usize], logical: &[usize]) -> Vec<usize> {
        let mut s = vec![0; spec.len()];
        for (q, &d) in spec.iter().enumerate() {
            s[d] = logical[q];
        }
        s
    }

    fn text(&self, dt: &str, out_dt: &str, preferred: &str) -> String {
        let mut l = vec![self.n, self.c];
        l.extend(&self.in_sp);
        let mut r = vec![self.o, self.c / self.groups];
        r.extend(&self.k_sp);
        let mut o = vec![self.n / self.bgroups, self.o];
        o.extend(self.out_sp());
        let [ls, rs, os] = &self.specs;
        let pads: Vec<String> = self
            .pad
            .iter()
            .map(|(a, b)| format!("({a}, {b})"))
            .collect();
        let pads = if pads.len() == 1 {
            format!("({},)", pads[0])
        } else {
            format!("({})", pads.join(", "))
        };
        format!(
            "{{ lambda ; a:{} b:{}. let
    c:{} = conv_general_dilated[
      batch_group_count={}
      dimension_numbers=ConvDimensionNumbers(lhs_spec={}, rhs_spec={}, out_spec={})
      feature_group_count={}
      lhs_dilation={}
      out_sharding=None
      padding={pads}
      precision=None
      preferred_element_type={preferred}
      rhs_dilation={}
      window_strides={}
    ] a b
  in (c,) }}",
            ty(dt, &Self::physical(ls, &l)),
            ty(dt, &Self::physical(rs, &r)),
            ty(out_dt, &Self::physical(os, &o)),
            self.bgroups,
            tuple(ls),
            tuple(rs),
            tuple(os),
            self.groups,
            tuple(&self.ld),
            tuple(&self.rd),
            tuple(&self.strides),
        )
    }
}

fn nchw(r: usize) -> [Vec<usize>; 3] {
    let s: Vec<usize> = (0..r).collect();
    [s.clone(), s.clone(), s]
}

fn cases() -> Vec<Case> {
    let nhwc = [vec![0, 3, 1, 2], vec![3, 2, 0, 1], vec![0, 3, 1, 2]];
    vec![
        // 2-d NCHW, stride, padding, kernel dilation.
        Case {
            n: 2,
            c: 3,
            o: 4,
            in_sp: vec![7, 6],
            k_sp: vec![3, 2],
            strides: vec![2, 1],
            pad: vec![(1, 2), (0, 1)],
            ld: vec![1, 1],
            rd: vec![2, 1],
            groups: 1,
            bgroups: 1,
            specs: nchw(4),
        },
        // 2-d NHWC / HWIO, input dilation (a transposed conv), negative pad.
        Case {
            n: 1,
            c: 2,
            o: 3,
            in_sp: vec![5, 4],
            k_sp: vec![2, 3],
            strides: vec![1, 1],
            pad: vec![(2, -1), (1, 1)],
            ld: vec![2, 3],
            rd: vec![1, 1],
            groups: 1,
            bgroups: 1,
            specs: nhwc,
        },
        // Feature groups: depthwise (groups == channels).
        Case {
            n: 2,
            c: 4,
            o: 8,
            in_sp: vec![6, 5],
            k_sp: vec![3, 3],
            strides: vec![1, 2],
            pad: vec![(1, 1), (1, 1)],
            ld: vec![1, 1],
            rd: vec![1, 1],
            groups: 4,
            bgroups: 1,
            specs: nchw(4),
        },
        // Batch groups (a weight gradient's shape).
        Case {
            n: 6,
            c: 2,
            o: 3,
            in_sp: vec![5],
            k_sp: vec![2],
            strides: vec![1],
            pad: vec![(0, 1)],
            ld: vec![1],
            rd: vec![2],
            groups: 1,
            bgroups: 3,
            specs: nchw(3),
        },
        // 1-d NWC with a window larger than the input: empty output.
        Case {
            n: 2,
            c: 3,
            o: 2,
            in_sp: vec![2],
            k_sp: vec![4],
            strides: vec![1],
            pad: vec![(0, 0)],
            ld: vec![1],
            rd: vec![1],
            groups: 1,
            bgroups: 1,
            specs: [vec![0, 2, 1], vec![2, 1, 0], vec![0, 2, 1]],
        },
        // 3-d, strides and padding everywhere, two feature groups.
        Case {
            n: 1,
            c: 4,
            o: 2,
            in_sp: vec![4, 3, 5],
            k_sp: vec![2, 2, 3],
            strides: vec![2, 1, 2],
            pad: vec![(1, 0), (0, 1), (2, 2)],
            ld: vec![1, 1, 1],
            rd: vec![1, 2, 1],
            groups: 2,
            bgroups: 1,
            specs: nchw(5),
        },
    ]
}

#[test]
fn convolutions_in_every_layout_and_grouping() {
    for (i, case) in cases().iter().enumerate() {
        let seed = 90 + i as u64;
        check(
            &case.text("f32", "f32", "None"),
            seed,
            Dist::Uniform(2.0),
            Tol::Rel(1e-5),
        );
        check(
            &case.text("f64", "f64", "None"),
            seed,
            Dist::Uniform(2.0),
            Tol::Rel(1e-12),
        );
        check(
            &case.text("i32", "i32", "None"),
            seed,
            Dist::Uniform(5.0),
            Tol::Exact,
        );
        check(
            &case.text("f16", "f16", "None"),
            seed,
            Dist::Uniform(2.0),
            Tol::Ulp(1),
        );
        check(
            &case.text("bf16", "f32", "float32"),
            seed,
            Dist::Uniform(2.0),
            Tol::Rel(1e-5),
        );
        check(
            &case.text("bool", "bool", "None"),
            seed,
            Dist::Uniform(1.0),
            Tol::Exact,
        );
    }
}
