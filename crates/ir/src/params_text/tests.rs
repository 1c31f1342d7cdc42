//! Every primitive's name reads back through the params text dispatch.

use super::table::{parser_of, NAMES};
use crate::primitive::{ArgOp, CollectiveOp, CumulativeOp, ReduceOp, ScatterKind};

/// Every op-keyed name has a row: the ops come from their enums, the
/// rows from the table's name list.
#[test]
fn every_op_keyed_name_is_a_row() {
    let names = ReduceOp::ALL
        .iter()
        .map(|o| o.name())
        .chain(ArgOp::ALL.iter().map(|o| o.name()))
        .chain(CumulativeOp::ALL.iter().map(|o| o.name()))
        .chain(ScatterKind::ALL.iter().map(|o| o.name()))
        .chain(CollectiveOp::ALL.iter().map(|o| o.name()));
    for n in names {
        assert!(NAMES.contains(&n), "`{n}` has no params text row");
        assert!(parser_of(n).is_some(), "`{n}` has no parser");
    }
}
