//! Every catalogue kernel on the simulator against its host reference.

use super::*;

#[test]
fn catalogue_matches_references_on_the_simulator() {
    for seed in [1, 2] {
        for case in cases(Size::Small, seed).unwrap() {
            let outs = run_simulated(&case).unwrap_or_else(|e| panic!("{e}"));
            for (e, got) in case.expected.iter().zip(&outs) {
                check(&case, e, got).unwrap_or_else(|m| panic!("seed {seed}: {m}"));
            }
        }
    }
}

#[test]
fn a_wrong_launch_is_caught_by_the_reference() {
    // Half the blocks: the poisoned tail stays NaN and the check names it.
    let mut case = cases(Size::Small, 3).unwrap().remove(0);
    case.dims.grid[0] /= 2;
    let outs = run_simulated(&case).unwrap();
    let err = check(&case, &case.expected[0], &outs[0]).unwrap_err();
    assert!(
        err.contains("eltwise_fused") && err.contains("differ"),
        "{err}"
    );
}
