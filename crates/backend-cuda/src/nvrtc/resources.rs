//! Parsing ptxas's resource report (`--ptxas-options=-v`) out of NVRTC's
//! log: registers, spills, stack frame and static shared memory per entry
//! function.
//!
//! Invariant: parsing never fails; lines it does not recognise are
//! ignored, and a kernel with no report line keeps zeros.

/// What ptxas reports for one kernel.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct KernelResources {
    /// Registers per thread.
    pub registers: u32,
    /// Bytes of register spill stores.
    pub spill_stores_bytes: u32,
    /// Bytes of register spill loads.
    pub spill_loads_bytes: u32,
    /// Bytes of per-thread stack frame.
    pub stack_frame_bytes: u32,
    /// Bytes of static shared memory per block.
    pub shared_bytes: u32,
}

/// The number just before `unit` in `line` (`"28 registers"` → 28).
fn number_before(line: &str, unit: &str) -> Option<u32> {
    let at = line.find(unit)?;
    line[..at].split_whitespace().last()?.parse().ok()
}

/// The text between the first pair of single quotes, else the last word.
fn function_name(rest: &str) -> Option<String> {
    let rest = rest.trim();
    if let Some(start) = rest.find('\'') {
        let tail = &rest[start + 1..];
        return tail.find('\'').map(|end| tail[..end].to_string());
    }
    rest.split_whitespace().next().map(str::to_string)
}

/// The entry functions in `log`, in order, with their resources.
pub fn parse_ptxas_log(log: &str) -> Vec<(String, KernelResources)> {
    let mut out: Vec<(String, KernelResources)> = Vec::new();
    // The function the next "stack frame" line describes, and the entry
    // the next "Used N registers" line describes.
    let mut props_for: Option<String> = None;
    let mut current_entry: Option<usize> = None;
    for line in log.lines() {
        if let Some(rest) = line.split("Compiling entry function").nth(1) {
            if let Some(name) = function_name(rest) {
                out.push((name, KernelResources::default()));
                current_entry = Some(out.len() - 1);
            }
        } else if let Some(rest) = line.split("Function properties for").nth(1) {
            props_for = function_name(rest);
        } else if line.contains("bytes stack frame") {
            let entry = props_for
                .as_deref()
                .and_then(|n| out.iter_mut().find(|(name, _)| name == n));
            if let Some((_, r)) = entry {
                r.stack_frame_bytes = number_before(line, "bytes stack frame").unwrap_or(0);
                r.spill_stores_bytes = number_before(line, "bytes spill stores").unwrap_or(0);
                r.spill_loads_bytes = number_before(line, "bytes spill loads").unwrap_or(0);
            }
        } else if line.contains("Used") && line.contains("registers") {
            if let Some((_, r)) = current_entry.and_then(|i| out.get_mut(i)) {
                r.registers = number_before(line, "registers").unwrap_or(0);
                r.shared_bytes = number_before(line, "bytes smem").unwrap_or(0);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_a_ptxas_report() {
        let log = "ptxas info    : 0 bytes gmem\n\
ptxas info    : Compiling entry function 'k' for 'sm_80'\n\
ptxas info    : Function properties for k\n\
ptxas         .     8 bytes stack frame, 4 bytes spill stores, 12 bytes spill loads\n\
ptxas info    : Used 28 registers, used 1 barriers, 4096 bytes smem, 376 bytes cmem[0]\n\
ptxas info    : Compiling entry function 'other' for 'sm_80'\n\
ptxas info    : Function properties for other\n\
ptxas         .     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n\
ptxas info    : Used 6 registers, used 0 barriers, 376 bytes cmem[0]\n";
        let r = parse_ptxas_log(log);
        assert_eq!(r.len(), 2);
        assert_eq!(
            r[0],
            (
                "k".to_string(),
                KernelResources {
                    registers: 28,
                    spill_stores_bytes: 4,
                    spill_loads_bytes: 12,
                    stack_frame_bytes: 8,
                    shared_bytes: 4096,
                }
            )
        );
        assert_eq!(r[1].1.registers, 6);
        assert_eq!(r[1].1.shared_bytes, 0);
    }
}
