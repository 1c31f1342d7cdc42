//! How many host (CPU) devices this process has, as XLA's host platform
//! counts them: the count set with [`set_host_device_count`] (JAX's
//! `jax_num_cpu_devices`), else `JAXON_CPU_DEVICES`, else 1.
//!
//! The host backends (the interpreter and the CPU backend) report this count
//! as their `Backend::device_count`; a `shard_map` may span that many
//! devices. Invariant: the count is at least 1 and at most
//! [`MAX_HOST_DEVICES`].

use crate::error::IrError;
use std::sync::atomic::{AtomicUsize, Ordering};

/// The largest host device count accepted (each device runs on its own
/// threads; more than this is a configuration mistake, not a machine).
pub const MAX_HOST_DEVICES: usize = 4096;

/// 0: not set; read the environment.
static SET: AtomicUsize = AtomicUsize::new(0);

/// Sets the number of host devices for the rest of the process (JAX's
/// `jax.config.update("jax_num_cpu_devices", n)`); it takes precedence over
/// `JAXON_CPU_DEVICES`.
pub fn set_host_device_count(n: usize) -> Result<(), IrError> {
    check(n, "set_host_device_count")?;
    SET.store(n, Ordering::Relaxed);
    Ok(())
}

/// The number of host devices: the count set in this process, else
/// `JAXON_CPU_DEVICES`, else 1. A malformed or out-of-range variable is an
/// error that quotes it.
pub fn host_device_count() -> Result<usize, IrError> {
    match SET.load(Ordering::Relaxed) {
        0 => match std::env::var("JAXON_CPU_DEVICES") {
            Ok(v) => {
                let n = v.trim().parse::<usize>().map_err(|_| {
                    IrError::Invalid(format!(
                        "JAXON_CPU_DEVICES={v:?} is not a device count (a whole number from 1 \
                         to {MAX_HOST_DEVICES})"
                    ))
                })?;
                check(n, "JAXON_CPU_DEVICES")?;
                Ok(n)
            }
            Err(_) => Ok(1),
        },
        n => Ok(n),
    }
}

fn check(n: usize, what: &str) -> Result<(), IrError> {
    if n == 0 || n > MAX_HOST_DEVICES {
        return Err(IrError::Invalid(format!(
            "{what}: {n} host devices; the count must be from 1 to {MAX_HOST_DEVICES}"
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn out_of_range_counts_are_errors() {
        let e = set_host_device_count(0).unwrap_err().to_string();
        assert!(e.contains("from 1 to 4096"), "{e}");
        assert!(set_host_device_count(MAX_HOST_DEVICES + 1).is_err());
    }
}
