//! `cargo xtask bench --json [--only A,B] [--quick] [--list]`: runs the
//! workloads of `benches/WORKLOADS.md` and prints one JSON record per
//! metric, in the schema of `benches/jax/bench_jax.py`.
//!
//! `workloads --gpu [--list] [--only A,B] [--quick] [--smoke]`: the GPU
//! workloads, in the schema of `bench_jax_gpu.py`, on the `cuda` backend
//! (`JAXON_GPU_BENCH_BACKEND` picks another; `--smoke` runs tiny sizes).

use jaxon_benches::measure::set_record_suffix;
use jaxon_benches::workloads::gpu::{gpu_backend, set_smoke, GPU_WORKLOADS};
use jaxon_benches::workloads::{backend_name, Settings, WORKLOADS};
use std::process::ExitCode;
use std::time::Duration;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let quick = args.iter().any(|a| a == "--quick");
    let gpu = args.iter().any(|a| a == "--gpu");
    let table = if gpu { GPU_WORKLOADS } else { WORKLOADS };
    if args.iter().any(|a| a == "--list") {
        for (name, metrics, _) in table {
            println!("{name} {}", metrics.join(","));
        }
        return ExitCode::SUCCESS;
    }
    if gpu {
        set_record_suffix("_gpu");
        set_smoke(args.iter().any(|a| a == "--smoke"));
        let backend = gpu_backend();
        return match jaxon::with_backend(&backend, || run(table, &args, quick)) {
            Ok(code) => code,
            Err(e) => {
                eprintln!("workloads --gpu: backend {backend}: {e}");
                ExitCode::FAILURE
            }
        };
    }
    run(table, &args, quick)
}

type Table = &'static [jaxon_benches::workloads::Workload];

fn run(table: Table, args: &[String], quick: bool) -> ExitCode {
    let only: Option<Vec<String>> = args
        .iter()
        .position(|a| a == "--only")
        .and_then(|i| args.get(i + 1))
        .map(|s| s.split(',').map(str::to_string).collect());
    let settings = Settings {
        reps: if quick { 3 } else { 11 },
        min_time: Duration::from_millis(50),
        quick,
    };
    println!(
        "{}",
        serde_json::json!({"workload": "meta", "metric": null, "value": null, "unit": null,
            "details": {"jaxon": env!("CARGO_PKG_VERSION"), "backend": backend_name(),
                        "reps": settings.reps, "quick": quick}})
    );
    let mut failed = false;
    for (name, metrics, run) in table {
        let wanted = only
            .as_ref()
            .is_none_or(|o| o.iter().any(|w| w == name || metrics.contains(&w.as_str())));
        if wanted {
            if let Err(payload) = std::panic::catch_unwind(|| run(settings)) {
                let why = payload
                    .downcast_ref::<jaxon::Error>()
                    .map(|e| e.to_string())
                    .or_else(|| payload.downcast_ref::<String>().cloned())
                    .or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string()))
                    .unwrap_or_else(|| "panicked".to_string());
                eprintln!("workload {name} failed: {why}");
                for metric in *metrics {
                    println!(
                        "{}",
                        serde_json::json!({"workload": metric, "metric": null, "value": null,
                            "unit": null, "details": {"error": why}})
                    );
                }
                failed = true;
            }
        }
    }
    if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}
