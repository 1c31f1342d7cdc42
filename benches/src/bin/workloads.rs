//! `cargo xtask bench --json [--only A,B] [--quick] [--list]`: runs the
//! workloads of `benches/WORKLOADS.md` and prints one JSON record per
//! metric, in the schema of `benches/jax/bench_jax.py`.

use jaxon_benches::workloads::{backend_name, Settings, WORKLOADS};
use std::process::ExitCode;
use std::time::Duration;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let quick = args.iter().any(|a| a == "--quick");
    if args.iter().any(|a| a == "--list") {
        for (name, metrics, _) in WORKLOADS {
            println!("{name} {}", metrics.join(","));
        }
        return ExitCode::SUCCESS;
    }
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
    for (name, metrics, run) in WORKLOADS {
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
