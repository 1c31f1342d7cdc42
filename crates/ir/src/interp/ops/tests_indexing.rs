//! Golden tests (indexing): values produced by JAX 0.10.2 on the CPU, embedded.

#![allow(clippy::approx_constant, clippy::excessive_precision)]

use crate::primitive::{GatherParams, ScatterParams};
use super::testutil::{arr, check};
#[allow(unused_imports)]
use crate::dtype::DType;
#[allow(unused_imports)]
use crate::primitive::*;

#[test]
fn gather_1d_clip() {
    let p = Primitive::from(GatherParams { dimension_numbers: GatherDimensionNumbers { offset_dims: Ints::new(vec![]), collapsed_slice_dims: Ints::new(vec![0]), start_index_map: Ints::new(vec![0]), operand_batching_dims: Ints::new(vec![]), start_indices_batching_dims: Ints::new(vec![]) }, fill_value: None, indices_are_sorted: false, mode: GatherScatterMode::Clip, slice_sizes: Ints::new(vec![1]), unique_indices: false });
    check(&p, &[arr(DType::F32, &[5], &[2.860198497772217, -0.7188255786895752, 2.5394773483276367, -1.4298454523086548, -1.085417628288269]), arr(DType::I32, &[6, 1], &[0.0, 4.0, 5.0, -1.0, 2.0, 100.0])], &[(DType::F32, &[6][..], &[2.860198497772217, -1.085417628288269, -1.085417628288269, 2.860198497772217, 2.5394773483276367, -1.085417628288269][..])], 0.0);
}

#[test]
fn gather_1d_fill() {
    let p = Primitive::from(GatherParams { dimension_numbers: GatherDimensionNumbers { offset_dims: Ints::new(vec![]), collapsed_slice_dims: Ints::new(vec![0]), start_index_map: Ints::new(vec![0]), operand_batching_dims: Ints::new(vec![]), start_indices_batching_dims: Ints::new(vec![]) }, fill_value: Some(FillValue::Float(f64::NAN)), indices_are_sorted: false, mode: GatherScatterMode::FillOrDrop, slice_sizes: Ints::new(vec![1]), unique_indices: false });
    check(&p, &[arr(DType::F32, &[5], &[2.860198497772217, -0.7188255786895752, 2.5394773483276367, -1.4298454523086548, -1.085417628288269]), arr(DType::I32, &[6, 1], &[0.0, 4.0, 5.0, -1.0, 2.0, 100.0])], &[(DType::F32, &[6][..], &[2.860198497772217, -1.085417628288269, f64::NAN, f64::NAN, 2.5394773483276367, f64::NAN][..])], 0.0);
}

#[test]
fn gather_1d_promise() {
    let p = Primitive::from(GatherParams { dimension_numbers: GatherDimensionNumbers { offset_dims: Ints::new(vec![]), collapsed_slice_dims: Ints::new(vec![0]), start_index_map: Ints::new(vec![0]), operand_batching_dims: Ints::new(vec![]), start_indices_batching_dims: Ints::new(vec![]) }, fill_value: None, indices_are_sorted: false, mode: GatherScatterMode::PromiseInBounds, slice_sizes: Ints::new(vec![1]), unique_indices: false });
    check(&p, &[arr(DType::F32, &[5], &[2.860198497772217, -0.7188255786895752, 2.5394773483276367, -1.4298454523086548, -1.085417628288269]), arr(DType::I32, &[6, 1], &[0.0, 4.0, 5.0, -1.0, 2.0, 100.0])], &[(DType::F32, &[6][..], &[2.860198497772217, -1.085417628288269, -1.085417628288269, 2.860198497772217, 2.5394773483276367, -1.085417628288269][..])], 0.0);
}

#[test]
fn gather_1d_fill_int_default() {
    let p = Primitive::from(GatherParams { dimension_numbers: GatherDimensionNumbers { offset_dims: Ints::new(vec![]), collapsed_slice_dims: Ints::new(vec![0]), start_index_map: Ints::new(vec![0]), operand_batching_dims: Ints::new(vec![]), start_indices_batching_dims: Ints::new(vec![]) }, fill_value: Some(FillValue::Int(-2147483648)), indices_are_sorted: false, mode: GatherScatterMode::FillOrDrop, slice_sizes: Ints::new(vec![1]), unique_indices: false });
    check(&p, &[arr(DType::I32, &[5], &[1.0, 2.0, 3.0, 4.0, 5.0]), arr(DType::I32, &[6, 1], &[0.0, 4.0, 5.0, -1.0, 2.0, 100.0])], &[(DType::I32, &[6][..], &[1.0, 5.0, -2147483648.0, -2147483648.0, 3.0, -2147483648.0][..])], 0.0);
}

#[test]
fn gather_1d_fill_u8_default() {
    let p = Primitive::from(GatherParams { dimension_numbers: GatherDimensionNumbers { offset_dims: Ints::new(vec![]), collapsed_slice_dims: Ints::new(vec![0]), start_index_map: Ints::new(vec![0]), operand_batching_dims: Ints::new(vec![]), start_indices_batching_dims: Ints::new(vec![]) }, fill_value: Some(FillValue::Int(255)), indices_are_sorted: false, mode: GatherScatterMode::FillOrDrop, slice_sizes: Ints::new(vec![1]), unique_indices: false });
    check(&p, &[arr(DType::U8, &[5], &[1.0, 2.0, 3.0, 4.0, 5.0]), arr(DType::I32, &[6, 1], &[0.0, 4.0, 5.0, -1.0, 2.0, 100.0])], &[(DType::U8, &[6][..], &[1.0, 5.0, 255.0, 255.0, 3.0, 255.0][..])], 0.0);
}

#[test]
fn gather_1d_fill_value() {
    let p = Primitive::from(GatherParams { dimension_numbers: GatherDimensionNumbers { offset_dims: Ints::new(vec![]), collapsed_slice_dims: Ints::new(vec![0]), start_index_map: Ints::new(vec![0]), operand_batching_dims: Ints::new(vec![]), start_indices_batching_dims: Ints::new(vec![]) }, fill_value: Some(FillValue::Int(-7)), indices_are_sorted: false, mode: GatherScatterMode::FillOrDrop, slice_sizes: Ints::new(vec![1]), unique_indices: false });
    check(&p, &[arr(DType::I32, &[5], &[1.0, 2.0, 3.0, 4.0, 5.0]), arr(DType::I32, &[6, 1], &[0.0, 4.0, 5.0, -1.0, 2.0, 100.0])], &[(DType::I32, &[6][..], &[1.0, 5.0, -7.0, -7.0, 3.0, -7.0][..])], 0.0);
}

#[test]
fn gather_2d_window_clip() {
    let p = Primitive::from(GatherParams { dimension_numbers: GatherDimensionNumbers { offset_dims: Ints::new(vec![1]), collapsed_slice_dims: Ints::new(vec![0]), start_index_map: Ints::new(vec![0, 1]), operand_batching_dims: Ints::new(vec![]), start_indices_batching_dims: Ints::new(vec![]) }, fill_value: None, indices_are_sorted: false, mode: GatherScatterMode::Clip, slice_sizes: Ints::new(vec![1, 3]), unique_indices: false });
    check(&p, &[arr(DType::F32, &[4, 5], &[-2.291452646255493, -1.5494022369384766, -1.0887963771820068, 2.784475564956665, -1.418101191520691, -0.3539632558822632, 0.6592248678207397, 2.181727886199951, 2.1825461387634277, 1.0492879152297974, 0.9592460989952087, 1.4145461320877075, -1.6634780168533325, -1.9676028490066528, 2.222489833831787, -2.6391680240631104, 1.1021335124969482, 1.027428150177002, 0.6661078929901123, -2.6391761302948]), arr(DType::I32, &[5, 2], &[0.0, 0.0, 3.0, 2.0, 1.0, 3.0, 2.0, -1.0, 4.0, 1.0])], &[(DType::F32, &[5, 3][..], &[-2.291452646255493, -1.5494022369384766, -1.0887963771820068, 1.027428150177002, 0.6661078929901123, -2.6391761302948, 2.181727886199951, 2.1825461387634277, 1.0492879152297974, 0.9592460989952087, 1.4145461320877075, -1.6634780168533325, 1.1021335124969482, 1.027428150177002, 0.6661078929901123][..])], 0.0);
}

#[test]
fn gather_2d_window_fill() {
    let p = Primitive::from(GatherParams { dimension_numbers: GatherDimensionNumbers { offset_dims: Ints::new(vec![1]), collapsed_slice_dims: Ints::new(vec![0]), start_index_map: Ints::new(vec![0, 1]), operand_batching_dims: Ints::new(vec![]), start_indices_batching_dims: Ints::new(vec![]) }, fill_value: Some(FillValue::Float(f64::NAN)), indices_are_sorted: false, mode: GatherScatterMode::FillOrDrop, slice_sizes: Ints::new(vec![1, 3]), unique_indices: false });
    check(&p, &[arr(DType::F32, &[4, 5], &[-2.291452646255493, -1.5494022369384766, -1.0887963771820068, 2.784475564956665, -1.418101191520691, -0.3539632558822632, 0.6592248678207397, 2.181727886199951, 2.1825461387634277, 1.0492879152297974, 0.9592460989952087, 1.4145461320877075, -1.6634780168533325, -1.9676028490066528, 2.222489833831787, -2.6391680240631104, 1.1021335124969482, 1.027428150177002, 0.6661078929901123, -2.6391761302948]), arr(DType::I32, &[5, 2], &[0.0, 0.0, 3.0, 2.0, 1.0, 3.0, 2.0, -1.0, 4.0, 1.0])], &[(DType::F32, &[5, 3][..], &[-2.291452646255493, -1.5494022369384766, -1.0887963771820068, 1.027428150177002, 0.6661078929901123, -2.6391761302948, f64::NAN, f64::NAN, f64::NAN, f64::NAN, f64::NAN, f64::NAN, f64::NAN, f64::NAN, f64::NAN][..])], 0.0);
}

#[test]
fn gather_offset_first() {
    let p = Primitive::from(GatherParams { dimension_numbers: GatherDimensionNumbers { offset_dims: Ints::new(vec![0]), collapsed_slice_dims: Ints::new(vec![1]), start_index_map: Ints::new(vec![1]), operand_batching_dims: Ints::new(vec![]), start_indices_batching_dims: Ints::new(vec![]) }, fill_value: None, indices_are_sorted: false, mode: GatherScatterMode::Clip, slice_sizes: Ints::new(vec![2, 1]), unique_indices: false });
    check(&p, &[arr(DType::F32, &[4, 5], &[-2.291452646255493, -1.5494022369384766, -1.0887963771820068, 2.784475564956665, -1.418101191520691, -0.3539632558822632, 0.6592248678207397, 2.181727886199951, 2.1825461387634277, 1.0492879152297974, 0.9592460989952087, 1.4145461320877075, -1.6634780168533325, -1.9676028490066528, 2.222489833831787, -2.6391680240631104, 1.1021335124969482, 1.027428150177002, 0.6661078929901123, -2.6391761302948]), arr(DType::I32, &[3, 1], &[1.0, 4.0, 0.0])], &[(DType::F32, &[2, 3][..], &[-1.5494022369384766, -1.418101191520691, -2.291452646255493, 0.6592248678207397, 1.0492879152297974, -0.3539632558822632][..])], 0.0);
}

#[test]
fn gather_batching() {
    let p = Primitive::from(GatherParams { dimension_numbers: GatherDimensionNumbers { offset_dims: Ints::new(vec![]), collapsed_slice_dims: Ints::new(vec![1]), start_index_map: Ints::new(vec![1]), operand_batching_dims: Ints::new(vec![0]), start_indices_batching_dims: Ints::new(vec![0]) }, fill_value: None, indices_are_sorted: false, mode: GatherScatterMode::Clip, slice_sizes: Ints::new(vec![1, 1]), unique_indices: false });
    check(&p, &[arr(DType::F32, &[3, 5], &[2.8666155338287354, -0.36629024147987366, 0.19557012617588043, -2.981206178665161, -1.4923973083496094, 2.15094256401062, -0.44820988178253174, 1.4149140119552612, 2.532259225845337, -2.0791549682617188, 2.9535553455352783, -1.906009316444397, 2.6406774520874023, -2.478701591491699, -0.19073571264743805]), arr(DType::I32, &[3, 2, 1], &[1.0, 4.0, 0.0, 2.0, 3.0, 9.0])], &[(DType::F32, &[3, 2][..], &[-0.36629024147987366, -1.4923973083496094, 2.15094256401062, 1.4149140119552612, -2.478701591491699, -0.19073571264743805][..])], 0.0);
}

#[test]
fn gather_batching_window() {
    let p = Primitive::from(GatherParams { dimension_numbers: GatherDimensionNumbers { offset_dims: Ints::new(vec![2]), collapsed_slice_dims: Ints::new(vec![]), start_index_map: Ints::new(vec![1]), operand_batching_dims: Ints::new(vec![0]), start_indices_batching_dims: Ints::new(vec![1]) }, fill_value: Some(FillValue::Float(f64::NAN)), indices_are_sorted: false, mode: GatherScatterMode::FillOrDrop, slice_sizes: Ints::new(vec![1, 2]), unique_indices: false });
    check(&p, &[arr(DType::F32, &[2, 5], &[1.9739352464675903, -1.3136863708496094, 2.2145490646362305, 2.858499526977539, 2.0502820014953613, -0.30675840377807617, -0.776949405670166, -0.10398337990045547, -2.4469106197357178, -1.6399013996124268]), arr(DType::I32, &[3, 2, 1], &[1.0, 4.0, 0.0, 3.0, 2.0, 2.0])], &[(DType::F32, &[3, 2, 2][..], &[-1.3136863708496094, 2.2145490646362305, f64::NAN, f64::NAN, 1.9739352464675903, -1.3136863708496094, -2.4469106197357178, -1.6399013996124268, 2.2145490646362305, 2.858499526977539, -0.10398337990045547, -2.4469106197357178][..])], 0.0);
}

#[test]
fn scatter_add_1d_clip() {
    let p = Primitive::from(ScatterParams { kind: ScatterKind::Add, dimension_numbers: ScatterDimensionNumbers { update_window_dims: Ints::new(vec![]), inserted_window_dims: Ints::new(vec![0]), scatter_dims_to_operand_dims: Ints::new(vec![0]), operand_batching_dims: Ints::new(vec![]), scatter_indices_batching_dims: Ints::new(vec![]) }, indices_are_sorted: false, mode: GatherScatterMode::Clip, unique_indices: false, update_jaxpr: None });
    check(&p, &[arr(DType::F32, &[5], &[0.2193974256515503, 1.3993898630142212, -0.3065352737903595, -1.1669954061508179, 2.684157609939575]), arr(DType::I32, &[7, 1], &[1.0, 3.0, 1.0, 5.0, -1.0, 1.0, 4.0]), arr(DType::F32, &[7], &[1.506203055381775, -0.16770924627780914, -0.256344735622406, 1.4780268669128418, 2.132399320602417, -1.2389906644821167, 1.399886965751648])], &[(DType::F32, &[5][..], &[2.3517966270446777, 1.4102574586868286, -0.3065352737903595, -1.3347046375274658, 5.562071800231934][..])], 1e-06);
}

#[test]
fn scatter_add_1d_fill() {
    let p = Primitive::from(ScatterParams { kind: ScatterKind::Add, dimension_numbers: ScatterDimensionNumbers { update_window_dims: Ints::new(vec![]), inserted_window_dims: Ints::new(vec![0]), scatter_dims_to_operand_dims: Ints::new(vec![0]), operand_batching_dims: Ints::new(vec![]), scatter_indices_batching_dims: Ints::new(vec![]) }, indices_are_sorted: false, mode: GatherScatterMode::FillOrDrop, unique_indices: false, update_jaxpr: None });
    check(&p, &[arr(DType::F32, &[5], &[0.2193974256515503, 1.3993898630142212, -0.3065352737903595, -1.1669954061508179, 2.684157609939575]), arr(DType::I32, &[7, 1], &[1.0, 3.0, 1.0, 5.0, -1.0, 1.0, 4.0]), arr(DType::F32, &[7], &[1.506203055381775, -0.16770924627780914, -0.256344735622406, 1.4780268669128418, 2.132399320602417, -1.2389906644821167, 1.399886965751648])], &[(DType::F32, &[5][..], &[0.2193974256515503, 1.4102574586868286, -0.3065352737903595, -1.3347046375274658, 4.084044456481934][..])], 1e-06);
}

#[test]
fn scatter_add_1d_promise() {
    let p = Primitive::from(ScatterParams { kind: ScatterKind::Add, dimension_numbers: ScatterDimensionNumbers { update_window_dims: Ints::new(vec![]), inserted_window_dims: Ints::new(vec![0]), scatter_dims_to_operand_dims: Ints::new(vec![0]), operand_batching_dims: Ints::new(vec![]), scatter_indices_batching_dims: Ints::new(vec![]) }, indices_are_sorted: false, mode: GatherScatterMode::PromiseInBounds, unique_indices: false, update_jaxpr: None });
    check(&p, &[arr(DType::F32, &[5], &[0.2193974256515503, 1.3993898630142212, -0.3065352737903595, -1.1669954061508179, 2.684157609939575]), arr(DType::I32, &[7, 1], &[1.0, 3.0, 1.0, 5.0, -1.0, 1.0, 4.0]), arr(DType::F32, &[7], &[1.506203055381775, -0.16770924627780914, -0.256344735622406, 1.4780268669128418, 2.132399320602417, -1.2389906644821167, 1.399886965751648])], &[(DType::F32, &[5][..], &[0.2193974256515503, 1.4102574586868286, -0.3065352737903595, -1.3347046375274658, 4.084044456481934][..])], 1e-06);
}

#[test]
fn scatter_mul_1d_clip() {
    let p = Primitive::from(ScatterParams { kind: ScatterKind::Mul, dimension_numbers: ScatterDimensionNumbers { update_window_dims: Ints::new(vec![]), inserted_window_dims: Ints::new(vec![0]), scatter_dims_to_operand_dims: Ints::new(vec![0]), operand_batching_dims: Ints::new(vec![]), scatter_indices_batching_dims: Ints::new(vec![]) }, indices_are_sorted: false, mode: GatherScatterMode::Clip, unique_indices: false, update_jaxpr: None });
    check(&p, &[arr(DType::F32, &[5], &[0.2193974256515503, 1.3993898630142212, -0.3065352737903595, -1.1669954061508179, 2.684157609939575]), arr(DType::I32, &[7, 1], &[1.0, 3.0, 1.0, 5.0, -1.0, 1.0, 4.0]), arr(DType::F32, &[7], &[1.506203055381775, -0.16770924627780914, -0.256344735622406, 1.4780268669128418, 2.132399320602417, -1.2389906644821167, 1.399886965751648])], &[(DType::F32, &[5][..], &[0.4678429067134857, 0.6694446206092834, -0.3065352737903595, 0.19571591913700104, 5.553711414337158][..])], 1e-06);
}

#[test]
fn scatter_mul_1d_fill() {
    let p = Primitive::from(ScatterParams { kind: ScatterKind::Mul, dimension_numbers: ScatterDimensionNumbers { update_window_dims: Ints::new(vec![]), inserted_window_dims: Ints::new(vec![0]), scatter_dims_to_operand_dims: Ints::new(vec![0]), operand_batching_dims: Ints::new(vec![]), scatter_indices_batching_dims: Ints::new(vec![]) }, indices_are_sorted: false, mode: GatherScatterMode::FillOrDrop, unique_indices: false, update_jaxpr: None });
    check(&p, &[arr(DType::F32, &[5], &[0.2193974256515503, 1.3993898630142212, -0.3065352737903595, -1.1669954061508179, 2.684157609939575]), arr(DType::I32, &[7, 1], &[1.0, 3.0, 1.0, 5.0, -1.0, 1.0, 4.0]), arr(DType::F32, &[7], &[1.506203055381775, -0.16770924627780914, -0.256344735622406, 1.4780268669128418, 2.132399320602417, -1.2389906644821167, 1.399886965751648])], &[(DType::F32, &[5][..], &[0.2193974256515503, 0.6694446206092834, -0.3065352737903595, 0.19571591913700104, 3.7575173377990723][..])], 1e-06);
}

#[test]
fn scatter_mul_1d_promise() {
    let p = Primitive::from(ScatterParams { kind: ScatterKind::Mul, dimension_numbers: ScatterDimensionNumbers { update_window_dims: Ints::new(vec![]), inserted_window_dims: Ints::new(vec![0]), scatter_dims_to_operand_dims: Ints::new(vec![0]), operand_batching_dims: Ints::new(vec![]), scatter_indices_batching_dims: Ints::new(vec![]) }, indices_are_sorted: false, mode: GatherScatterMode::PromiseInBounds, unique_indices: false, update_jaxpr: None });
    check(&p, &[arr(DType::F32, &[5], &[0.2193974256515503, 1.3993898630142212, -0.3065352737903595, -1.1669954061508179, 2.684157609939575]), arr(DType::I32, &[7, 1], &[1.0, 3.0, 1.0, 5.0, -1.0, 1.0, 4.0]), arr(DType::F32, &[7], &[1.506203055381775, -0.16770924627780914, -0.256344735622406, 1.4780268669128418, 2.132399320602417, -1.2389906644821167, 1.399886965751648])], &[(DType::F32, &[5][..], &[0.2193974256515503, 0.6694446206092834, -0.3065352737903595, 0.19571591913700104, 3.7575173377990723][..])], 1e-06);
}

#[test]
fn scatter_min_1d_clip() {
    let p = Primitive::from(ScatterParams { kind: ScatterKind::Min, dimension_numbers: ScatterDimensionNumbers { update_window_dims: Ints::new(vec![]), inserted_window_dims: Ints::new(vec![0]), scatter_dims_to_operand_dims: Ints::new(vec![0]), operand_batching_dims: Ints::new(vec![]), scatter_indices_batching_dims: Ints::new(vec![]) }, indices_are_sorted: false, mode: GatherScatterMode::Clip, unique_indices: false, update_jaxpr: None });
    check(&p, &[arr(DType::F32, &[5], &[0.2193974256515503, 1.3993898630142212, -0.3065352737903595, -1.1669954061508179, 2.684157609939575]), arr(DType::I32, &[7, 1], &[1.0, 3.0, 1.0, 5.0, -1.0, 1.0, 4.0]), arr(DType::F32, &[7], &[1.506203055381775, -0.16770924627780914, -0.256344735622406, 1.4780268669128418, 2.132399320602417, -1.2389906644821167, 1.399886965751648])], &[(DType::F32, &[5][..], &[0.2193974256515503, -1.2389906644821167, -0.3065352737903595, -1.1669954061508179, 1.399886965751648][..])], 1e-06);
}

#[test]
fn scatter_min_1d_fill() {
    let p = Primitive::from(ScatterParams { kind: ScatterKind::Min, dimension_numbers: ScatterDimensionNumbers { update_window_dims: Ints::new(vec![]), inserted_window_dims: Ints::new(vec![0]), scatter_dims_to_operand_dims: Ints::new(vec![0]), operand_batching_dims: Ints::new(vec![]), scatter_indices_batching_dims: Ints::new(vec![]) }, indices_are_sorted: false, mode: GatherScatterMode::FillOrDrop, unique_indices: false, update_jaxpr: None });
    check(&p, &[arr(DType::F32, &[5], &[0.2193974256515503, 1.3993898630142212, -0.3065352737903595, -1.1669954061508179, 2.684157609939575]), arr(DType::I32, &[7, 1], &[1.0, 3.0, 1.0, 5.0, -1.0, 1.0, 4.0]), arr(DType::F32, &[7], &[1.506203055381775, -0.16770924627780914, -0.256344735622406, 1.4780268669128418, 2.132399320602417, -1.2389906644821167, 1.399886965751648])], &[(DType::F32, &[5][..], &[0.2193974256515503, -1.2389906644821167, -0.3065352737903595, -1.1669954061508179, 1.399886965751648][..])], 1e-06);
}

#[test]
fn scatter_min_1d_promise() {
    let p = Primitive::from(ScatterParams { kind: ScatterKind::Min, dimension_numbers: ScatterDimensionNumbers { update_window_dims: Ints::new(vec![]), inserted_window_dims: Ints::new(vec![0]), scatter_dims_to_operand_dims: Ints::new(vec![0]), operand_batching_dims: Ints::new(vec![]), scatter_indices_batching_dims: Ints::new(vec![]) }, indices_are_sorted: false, mode: GatherScatterMode::PromiseInBounds, unique_indices: false, update_jaxpr: None });
    check(&p, &[arr(DType::F32, &[5], &[0.2193974256515503, 1.3993898630142212, -0.3065352737903595, -1.1669954061508179, 2.684157609939575]), arr(DType::I32, &[7, 1], &[1.0, 3.0, 1.0, 5.0, -1.0, 1.0, 4.0]), arr(DType::F32, &[7], &[1.506203055381775, -0.16770924627780914, -0.256344735622406, 1.4780268669128418, 2.132399320602417, -1.2389906644821167, 1.399886965751648])], &[(DType::F32, &[5][..], &[0.2193974256515503, -1.2389906644821167, -0.3065352737903595, -1.1669954061508179, 1.399886965751648][..])], 1e-06);
}

#[test]
fn scatter_max_1d_clip() {
    let p = Primitive::from(ScatterParams { kind: ScatterKind::Max, dimension_numbers: ScatterDimensionNumbers { update_window_dims: Ints::new(vec![]), inserted_window_dims: Ints::new(vec![0]), scatter_dims_to_operand_dims: Ints::new(vec![0]), operand_batching_dims: Ints::new(vec![]), scatter_indices_batching_dims: Ints::new(vec![]) }, indices_are_sorted: false, mode: GatherScatterMode::Clip, unique_indices: false, update_jaxpr: None });
    check(&p, &[arr(DType::F32, &[5], &[0.2193974256515503, 1.3993898630142212, -0.3065352737903595, -1.1669954061508179, 2.684157609939575]), arr(DType::I32, &[7, 1], &[1.0, 3.0, 1.0, 5.0, -1.0, 1.0, 4.0]), arr(DType::F32, &[7], &[1.506203055381775, -0.16770924627780914, -0.256344735622406, 1.4780268669128418, 2.132399320602417, -1.2389906644821167, 1.399886965751648])], &[(DType::F32, &[5][..], &[2.132399320602417, 1.506203055381775, -0.3065352737903595, -0.16770924627780914, 2.684157609939575][..])], 1e-06);
}

#[test]
fn scatter_max_1d_fill() {
    let p = Primitive::from(ScatterParams { kind: ScatterKind::Max, dimension_numbers: ScatterDimensionNumbers { update_window_dims: Ints::new(vec![]), inserted_window_dims: Ints::new(vec![0]), scatter_dims_to_operand_dims: Ints::new(vec![0]), operand_batching_dims: Ints::new(vec![]), scatter_indices_batching_dims: Ints::new(vec![]) }, indices_are_sorted: false, mode: GatherScatterMode::FillOrDrop, unique_indices: false, update_jaxpr: None });
    check(&p, &[arr(DType::F32, &[5], &[0.2193974256515503, 1.3993898630142212, -0.3065352737903595, -1.1669954061508179, 2.684157609939575]), arr(DType::I32, &[7, 1], &[1.0, 3.0, 1.0, 5.0, -1.0, 1.0, 4.0]), arr(DType::F32, &[7], &[1.506203055381775, -0.16770924627780914, -0.256344735622406, 1.4780268669128418, 2.132399320602417, -1.2389906644821167, 1.399886965751648])], &[(DType::F32, &[5][..], &[0.2193974256515503, 1.506203055381775, -0.3065352737903595, -0.16770924627780914, 2.684157609939575][..])], 1e-06);
}

#[test]
fn scatter_max_1d_promise() {
    let p = Primitive::from(ScatterParams { kind: ScatterKind::Max, dimension_numbers: ScatterDimensionNumbers { update_window_dims: Ints::new(vec![]), inserted_window_dims: Ints::new(vec![0]), scatter_dims_to_operand_dims: Ints::new(vec![0]), operand_batching_dims: Ints::new(vec![]), scatter_indices_batching_dims: Ints::new(vec![]) }, indices_are_sorted: false, mode: GatherScatterMode::PromiseInBounds, unique_indices: false, update_jaxpr: None });
    check(&p, &[arr(DType::F32, &[5], &[0.2193974256515503, 1.3993898630142212, -0.3065352737903595, -1.1669954061508179, 2.684157609939575]), arr(DType::I32, &[7, 1], &[1.0, 3.0, 1.0, 5.0, -1.0, 1.0, 4.0]), arr(DType::F32, &[7], &[1.506203055381775, -0.16770924627780914, -0.256344735622406, 1.4780268669128418, 2.132399320602417, -1.2389906644821167, 1.399886965751648])], &[(DType::F32, &[5][..], &[0.2193974256515503, 1.506203055381775, -0.3065352737903595, -0.16770924627780914, 2.684157609939575][..])], 1e-06);
}

#[test]
fn scatter_1d_clip() {
    let p = Primitive::from(ScatterParams { kind: ScatterKind::Set, dimension_numbers: ScatterDimensionNumbers { update_window_dims: Ints::new(vec![]), inserted_window_dims: Ints::new(vec![0]), scatter_dims_to_operand_dims: Ints::new(vec![0]), operand_batching_dims: Ints::new(vec![]), scatter_indices_batching_dims: Ints::new(vec![]) }, indices_are_sorted: false, mode: GatherScatterMode::Clip, unique_indices: false, update_jaxpr: None });
    check(&p, &[arr(DType::F32, &[5], &[0.2193974256515503, 1.3993898630142212, -0.3065352737903595, -1.1669954061508179, 2.684157609939575]), arr(DType::I32, &[7, 1], &[1.0, 3.0, 0.0, 5.0, -1.0, 2.0, 4.0]), arr(DType::F32, &[7], &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0])], &[(DType::F32, &[5][..], &[5.0, 1.0, 6.0, 2.0, 7.0][..])], 1e-06);
}

#[test]
fn scatter_1d_fill() {
    let p = Primitive::from(ScatterParams { kind: ScatterKind::Set, dimension_numbers: ScatterDimensionNumbers { update_window_dims: Ints::new(vec![]), inserted_window_dims: Ints::new(vec![0]), scatter_dims_to_operand_dims: Ints::new(vec![0]), operand_batching_dims: Ints::new(vec![]), scatter_indices_batching_dims: Ints::new(vec![]) }, indices_are_sorted: false, mode: GatherScatterMode::FillOrDrop, unique_indices: false, update_jaxpr: None });
    check(&p, &[arr(DType::F32, &[5], &[0.2193974256515503, 1.3993898630142212, -0.3065352737903595, -1.1669954061508179, 2.684157609939575]), arr(DType::I32, &[7, 1], &[1.0, 3.0, 0.0, 5.0, -1.0, 2.0, 4.0]), arr(DType::F32, &[7], &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0])], &[(DType::F32, &[5][..], &[3.0, 1.0, 6.0, 2.0, 7.0][..])], 1e-06);
}

#[test]
fn scatter_add_i32_wrap() {
    let p = Primitive::from(ScatterParams { kind: ScatterKind::Add, dimension_numbers: ScatterDimensionNumbers { update_window_dims: Ints::new(vec![]), inserted_window_dims: Ints::new(vec![0]), scatter_dims_to_operand_dims: Ints::new(vec![0]), operand_batching_dims: Ints::new(vec![]), scatter_indices_batching_dims: Ints::new(vec![]) }, indices_are_sorted: false, mode: GatherScatterMode::FillOrDrop, unique_indices: false, update_jaxpr: None });
    check(&p, &[arr(DType::I32, &[3], &[2147483647.0, 0.0, 5.0]), arr(DType::I32, &[3, 1], &[0.0, 0.0, 2.0]), arr(DType::I32, &[3], &[1.0, 5.0, -9.0])], &[(DType::I32, &[3][..], &[-2147483643.0, 0.0, -4.0][..])], 0.0);
}

#[test]
fn scatter_add_f16() {
    let p = Primitive::from(ScatterParams { kind: ScatterKind::Add, dimension_numbers: ScatterDimensionNumbers { update_window_dims: Ints::new(vec![]), inserted_window_dims: Ints::new(vec![0]), scatter_dims_to_operand_dims: Ints::new(vec![0]), operand_batching_dims: Ints::new(vec![]), scatter_indices_batching_dims: Ints::new(vec![]) }, indices_are_sorted: false, mode: GatherScatterMode::FillOrDrop, unique_indices: false, update_jaxpr: None });
    check(&p, &[arr(DType::F16, &[2], &[1.0, 2.0]), arr(DType::I32, &[4, 1], &[0.0, 0.0, 0.0, 1.0]), arr(DType::F16, &[4], &[0.0004000663757324219, 0.0004000663757324219, 0.0004000663757324219, 3.099609375])], &[(DType::F16, &[2][..], &[1.0, 5.1015625][..])], 0.0);
}

#[test]
fn scatter_add_window() {
    let p = Primitive::from(ScatterParams { kind: ScatterKind::Add, dimension_numbers: ScatterDimensionNumbers { update_window_dims: Ints::new(vec![1]), inserted_window_dims: Ints::new(vec![0]), scatter_dims_to_operand_dims: Ints::new(vec![0]), operand_batching_dims: Ints::new(vec![]), scatter_indices_batching_dims: Ints::new(vec![]) }, indices_are_sorted: false, mode: GatherScatterMode::FillOrDrop, unique_indices: false, update_jaxpr: None });
    check(&p, &[arr(DType::F32, &[4, 3], &[1.8529841899871826, 2.322521924972534, -2.8510007858276367, 0.07529668509960175, 0.6767140626907349, -1.3179062604904175, -0.2872096300125122, 0.18732653558254242, 2.931807279586792, -2.9641308784484863, -1.792270302772522, -1.4587452411651611]), arr(DType::I32, &[4, 1], &[2.0, 0.0, 2.0, 4.0]), arr(DType::F32, &[4, 3], &[-0.9555309414863586, -2.68198823928833, -1.0410330295562744, -1.809850811958313, 1.9752894639968872, 0.822729766368866, -2.4873554706573486, -1.67903733253479, 1.087056040763855, -2.1935393810272217, 2.739082098007202, -2.180856227874756])], &[(DType::F32, &[4, 3][..], &[0.04313337802886963, 4.297811508178711, -2.028270959854126, 0.07529668509960175, 0.6767140626907349, -1.3179062604904175, -3.7300961017608643, -4.173699378967285, 2.977830410003662, -2.9641308784484863, -1.792270302772522, -1.4587452411651611][..])], 1e-06);
}

#[test]
fn scatter_max_window() {
    let p = Primitive::from(ScatterParams { kind: ScatterKind::Max, dimension_numbers: ScatterDimensionNumbers { update_window_dims: Ints::new(vec![1]), inserted_window_dims: Ints::new(vec![0]), scatter_dims_to_operand_dims: Ints::new(vec![0]), operand_batching_dims: Ints::new(vec![]), scatter_indices_batching_dims: Ints::new(vec![]) }, indices_are_sorted: false, mode: GatherScatterMode::FillOrDrop, unique_indices: false, update_jaxpr: None });
    check(&p, &[arr(DType::F32, &[4, 3], &[1.7862128019332886, -0.010238864459097385, -1.1717536449432373, -1.5947636365890503, 2.358048915863037, -0.7347809672355652, -2.5419273376464844, -2.79715895652771, -0.2303200662136078, 2.24294376373291, -0.8963430523872375, 1.941123366355896]), arr(DType::I32, &[4, 1], &[2.0, 0.0, 2.0, 4.0]), arr(DType::F32, &[4, 3], &[2.683194398880005, -2.5977556705474854, -1.2129594087600708, 0.7149661183357239, -1.1894553899765015, -1.9509212970733643, -0.026968829333782196, 1.563422441482544, 1.1235694885253906, -1.5110713243484497, 0.7322795391082764, -1.1060658693313599])], &[(DType::F32, &[4, 3][..], &[1.7862128019332886, -0.010238864459097385, -1.1717536449432373, -1.5947636365890503, 2.358048915863037, -0.7347809672355652, 2.683194398880005, 1.563422441482544, 1.1235694885253906, 2.24294376373291, -0.8963430523872375, 1.941123366355896][..])], 1e-06);
}

#[test]
fn scatter_min_window() {
    let p = Primitive::from(ScatterParams { kind: ScatterKind::Min, dimension_numbers: ScatterDimensionNumbers { update_window_dims: Ints::new(vec![1]), inserted_window_dims: Ints::new(vec![0]), scatter_dims_to_operand_dims: Ints::new(vec![0]), operand_batching_dims: Ints::new(vec![]), scatter_indices_batching_dims: Ints::new(vec![]) }, indices_are_sorted: false, mode: GatherScatterMode::FillOrDrop, unique_indices: false, update_jaxpr: None });
    check(&p, &[arr(DType::F32, &[4, 3], &[-1.336701512336731, 2.579191207885742, -1.3224283456802368, 2.693010091781616, -1.787895917892456, 0.3928704857826233, -0.7181811928749084, 1.8486403226852417, -2.234678030014038, 2.7080373764038086, 1.3729641437530518, -1.9467300176620483]), arr(DType::I32, &[4, 1], &[2.0, 0.0, 2.0, 4.0]), arr(DType::F32, &[4, 3], &[1.1565545797348022, -2.4430017471313477, 0.338409423828125, -2.385035276412964, -2.7378406524658203, -0.643856942653656, 1.1463243961334229, 1.3618645668029785, 1.014189600944519, 0.5493283867835999, 2.274003267288208, 0.22594591975212097])], &[(DType::F32, &[4, 3][..], &[-2.385035276412964, -2.7378406524658203, -1.3224283456802368, 2.693010091781616, -1.787895917892456, 0.3928704857826233, -0.7181811928749084, -2.4430017471313477, -2.234678030014038, 2.7080373764038086, 1.3729641437530518, -1.9467300176620483][..])], 1e-06);
}

#[test]
fn scatter_mul_window() {
    let p = Primitive::from(ScatterParams { kind: ScatterKind::Mul, dimension_numbers: ScatterDimensionNumbers { update_window_dims: Ints::new(vec![1]), inserted_window_dims: Ints::new(vec![0]), scatter_dims_to_operand_dims: Ints::new(vec![0]), operand_batching_dims: Ints::new(vec![]), scatter_indices_batching_dims: Ints::new(vec![]) }, indices_are_sorted: false, mode: GatherScatterMode::FillOrDrop, unique_indices: false, update_jaxpr: None });
    check(&p, &[arr(DType::F32, &[4, 3], &[-2.4130656719207764, -2.1522250175476074, 2.7736804485321045, 1.7886234521865845, -2.959477424621582, 2.6748692989349365, 0.9325355291366577, 2.4641075134277344, -2.0844919681549072, 0.5317938923835754, 0.022593596950173378, -1.9571460485458374]), arr(DType::I32, &[4, 1], &[2.0, 0.0, 2.0, 4.0]), arr(DType::F32, &[4, 3], &[-2.6228981018066406, 0.9872900247573853, -2.8085684776306152, -1.5710663795471191, 0.09257791936397552, 0.614146888256073, -1.3022427558898926, 2.0587799549102783, 2.3682334423065186, 1.3391473293304443, 2.559248447418213, -2.6460165977478027])], &[(DType::F32, &[4, 3][..], &[3.791086435317993, -0.1992485076189041, 1.7034472227096558, 1.7886234521865845, -2.959477424621582, 2.6748692989349365, 3.1852152347564697, 5.0085768699646, 13.864676475524902, 0.5317938923835754, 0.022593596950173378, -1.9571460485458374][..])], 1e-06);
}

#[test]
fn scatter_add_partial_window_clip() {
    let p = Primitive::from(ScatterParams { kind: ScatterKind::Add, dimension_numbers: ScatterDimensionNumbers { update_window_dims: Ints::new(vec![1]), inserted_window_dims: Ints::new(vec![0]), scatter_dims_to_operand_dims: Ints::new(vec![0, 1]), operand_batching_dims: Ints::new(vec![]), scatter_indices_batching_dims: Ints::new(vec![]) }, indices_are_sorted: false, mode: GatherScatterMode::Clip, unique_indices: false, update_jaxpr: None });
    check(&p, &[arr(DType::F32, &[4, 5], &[-2.69911527633667, -2.2567193508148193, -2.267517328262329, 0.18690088391304016, 2.478828191757202, -1.9051964282989502, 2.9489922523498535, 2.2794294357299805, -1.062266230583191, -1.852105736732483, -0.01880139485001564, -1.1135680675506592, -2.818171977996826, -2.44425892829895, 0.534122109413147, 0.804230272769928, 2.7980668544769287, -2.910721778869629, 1.3989598751068115, 0.7971771359443665]), arr(DType::I32, &[4, 2], &[0.0, 0.0, 1.0, 3.0, 3.0, 2.0, 2.0, -1.0]), arr(DType::F32, &[4, 3], &[0.010109526105225086, -2.274380683898926, 2.1476423740386963, 1.2144652605056763, 0.41168418526649475, 2.8865952491760254, -2.457883834838867, 1.3624786138534546, -0.06819778680801392, -1.3170051574707031, 2.311981678009033, 1.8463690280914307])], &[(DType::F32, &[4, 5][..], &[-2.6890058517456055, -4.531100273132324, -0.11987495422363281, 0.18690088391304016, 2.478828191757202, -1.9051964282989502, 2.9489922523498535, 3.493894577026367, -0.6505820751190186, 1.0344895124435425, -1.3358066082000732, 1.198413610458374, -0.9718029499053955, -2.44425892829895, 0.534122109413147, 0.804230272769928, 2.7980668544769287, -5.368605613708496, 2.7614383697509766, 0.7289793491363525][..])], 1e-06);
}

#[test]
fn scatter_add_partial_window_fill() {
    let p = Primitive::from(ScatterParams { kind: ScatterKind::Add, dimension_numbers: ScatterDimensionNumbers { update_window_dims: Ints::new(vec![1]), inserted_window_dims: Ints::new(vec![0]), scatter_dims_to_operand_dims: Ints::new(vec![0, 1]), operand_batching_dims: Ints::new(vec![]), scatter_indices_batching_dims: Ints::new(vec![]) }, indices_are_sorted: false, mode: GatherScatterMode::FillOrDrop, unique_indices: false, update_jaxpr: None });
    check(&p, &[arr(DType::F32, &[4, 5], &[-0.363305002450943, 0.8498887419700623, 0.7862343788146973, -2.9493796825408936, -1.6700499057769775, -1.6986433267593384, -1.678385853767395, 1.446823239326477, 2.6493239402770996, -1.4013762474060059, 1.4836398363113403, -2.9875736236572266, 1.8561378717422485, 1.8408533334732056, -2.672804117202759, -2.4063823223114014, 0.3193594217300415, 1.5774632692337036, 1.385587453842163, 1.0948262214660645]), arr(DType::I32, &[4, 2], &[0.0, 0.0, 1.0, 3.0, 3.0, 2.0, 2.0, -1.0]), arr(DType::F32, &[4, 3], &[1.5755478143692017, 0.5964751839637756, -1.5871357917785645, -2.831632137298584, 2.470055103302002, -0.5155164003372192, 1.3407844305038452, -1.404294729232788, 2.8822174072265625, -1.9314600229263306, -2.718489408493042, -0.03530514985322952])], &[(DType::F32, &[4, 5][..], &[1.212242841720581, 1.446363925933838, -0.8009014129638672, -2.9493796825408936, -1.6700499057769775, -1.6986433267593384, -1.678385853767395, 1.446823239326477, 2.6493239402770996, -1.4013762474060059, 1.4836398363113403, -2.9875736236572266, 1.8561378717422485, 1.8408533334732056, -2.672804117202759, -2.4063823223114014, 0.3193594217300415, 2.918247699737549, -0.018707275390625, 3.977043628692627][..])], 1e-06);
}

#[test]
fn scatter_add_batching() {
    let p = Primitive::from(ScatterParams { kind: ScatterKind::Add, dimension_numbers: ScatterDimensionNumbers { update_window_dims: Ints::new(vec![]), inserted_window_dims: Ints::new(vec![1]), scatter_dims_to_operand_dims: Ints::new(vec![1]), operand_batching_dims: Ints::new(vec![0]), scatter_indices_batching_dims: Ints::new(vec![0]) }, indices_are_sorted: false, mode: GatherScatterMode::FillOrDrop, unique_indices: false, update_jaxpr: None });
    check(&p, &[arr(DType::F32, &[2, 4], &[-0.7768253087997437, 0.9334455132484436, -2.999723196029663, -2.141911745071411, 2.153855323791504, 1.0968598127365112, -1.0078002214431763, -2.851102828979492]), arr(DType::I32, &[2, 3, 1], &[1.0, 3.0, 1.0, 0.0, 0.0, 7.0]), arr(DType::F32, &[2, 3], &[-2.7467825412750244, -0.6625049114227295, 2.6580679416656494, 2.5116724967956543, -1.1116381883621216, -0.7666742205619812])], &[(DType::F32, &[2, 4][..], &[-0.7768253087997437, 0.8447308540344238, -2.999723196029663, -2.8044166564941406, 3.553889751434326, 1.0968598127365112, -1.0078002214431763, -2.851102828979492][..])], 1e-06);
}

/// Not golden: complex `scatter-add` and `scatter-mul` with repeated and
/// dropped indices against a loop over the targets.
#[test]
fn scatter_complex_matches_a_loop() {
    use crate::array::HostArray;
    use num_complex::Complex64 as C;
    let dn = ScatterDimensionNumbers {
        update_window_dims: Ints::new(vec![]),
        inserted_window_dims: Ints::new(vec![0]),
        scatter_dims_to_operand_dims: Ints::new(vec![0]),
        operand_batching_dims: Ints::new(vec![]),
        scatter_indices_batching_dims: Ints::new(vec![]),
    };
    let x: Vec<C> = (0..5).map(|k| C::new(k as f64 * 0.5 - 1.0, 1.5 - k as f64 * 0.25)).collect();
    let u: Vec<C> = (0..7).map(|k| C::new(0.75 - k as f64 * 0.5, k as f64 * 0.125 + 0.5)).collect();
    let idx = [1i64, 3, 1, 5, -1, 1, 4];
    for (kind, f) in [
        (ScatterKind::Add, (|a, b| a + b) as fn(C, C) -> C),
        (ScatterKind::Mul, |a, b| a * b),
        (ScatterKind::Set, |_, b| b),
    ] {
        let mut want = x.clone();
        for (k, &i) in idx.iter().enumerate() {
            if (0..5).contains(&i) {
                want[i as usize] = f(want[i as usize], u[k]);
            }
        }
        let got = super::indexing::scatter(
            &HostArray::from_c128(DType::C128, &[5], &x).unwrap(),
            &HostArray::from_f64(DType::I32, &[7, 1], &idx.map(|i| i as f64)).unwrap(),
            &HostArray::from_c128(DType::C128, &[7], &u).unwrap(),
            kind,
            &dn,
            GatherScatterMode::FillOrDrop,
        )
        .unwrap();
        assert_eq!(got.to_c128_vec(), want, "{kind:?}");
    }
}
