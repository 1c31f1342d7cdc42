//! Parses, checks, prints and evaluates a jaxpr text file on random inputs.
//!
//! `cargo run --release -p jaxon-ir --example eval_jaxpr [FILE] [--seed N]`
//! runs the bundled `mlp.jaxpr` (a dense layer and a softmax, as JAX 0.10
//! prints it) when no FILE is given.

use jaxon_ir::{
    check_closed_jaxpr, eval_closed_jaxpr, parse_jaxpr, print::print_jaxpr, Aval, ClosedJaxpr,
    DType, HostArray,
};
use std::process::ExitCode;

const BUNDLED: &str = include_str!("mlp.jaxpr");

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("error: {message}");
            ExitCode::FAILURE
        }
    }
}

fn run() -> Result<(), String> {
    let mut file = None;
    let mut seed = 0x5eed_u64;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--seed" => {
                let v = args.next().ok_or("--seed needs a value")?;
                seed = v.parse().map_err(|_| format!("bad seed {v:?}"))?;
            }
            "-h" | "--help" => {
                println!("usage: eval_jaxpr [FILE] [--seed N]");
                return Ok(());
            }
            _ => file = Some(arg),
        }
    }
    let (name, text) = match &file {
        Some(path) => (
            path.clone(),
            std::fs::read_to_string(path).map_err(|e| format!("cannot read {path}: {e}"))?,
        ),
        None => ("mlp.jaxpr (bundled)".to_string(), BUNDLED.to_string()),
    };

    let jaxpr = parse_jaxpr(&text).map_err(|e| format!("{name}:{e}"))?;
    let mut rng = SplitMix64(seed);
    let consts = jaxpr
        .constvars
        .iter()
        .map(|v| random_array(jaxpr.aval(*v), &mut rng))
        .collect::<Result<Vec<_>, _>>()?;
    let inputs = jaxpr
        .invars
        .iter()
        .map(|v| random_array(jaxpr.aval(*v), &mut rng))
        .collect::<Result<Vec<_>, _>>()?;
    let closed = ClosedJaxpr::new(jaxpr, consts);
    check_closed_jaxpr(&closed).map_err(|e| format!("{name}: {e}"))?;

    let printed = print_jaxpr(&closed.jaxpr);
    let round_trip = if printed.trim_end() == text.trim_end() {
        "identical to the input"
    } else {
        "differs from the input"
    };
    println!("{printed}");
    println!("-- printed text {round_trip}");
    for (i, x) in inputs.iter().enumerate() {
        println!("input {i}: {}", describe(x));
    }
    let outputs = eval_closed_jaxpr(&closed, &inputs).map_err(|e| format!("{name}: {e}"))?;
    for (i, y) in outputs.iter().enumerate() {
        println!("output {i}: {}", describe(y));
    }
    Ok(())
}

fn random_array(aval: &Aval, rng: &mut SplitMix64) -> Result<HostArray, String> {
    let a = aval
        .as_array()
        .ok_or("a Ref-typed input cannot be generated")?;
    let sizes = a
        .static_sizes()
        .ok_or("inputs with dynamic dimensions need explicit sizes")?;
    let n: usize = sizes.iter().product();
    let values: Vec<f64> = (0..n)
        .map(|_| {
            let u = rng.next_f64();
            match a.dtype {
                DType::Bool => (u < 0.5) as u8 as f64,
                d if d.is_unsigned_int() => (u * 10.0).floor(),
                d if d.is_int() => (u * 20.0).floor() - 10.0,
                _ => u * 4.0 - 2.0,
            }
        })
        .collect();
    HostArray::from_f64(a.dtype, &sizes, &values).map_err(|e| e.to_string())
}

fn describe(x: &HostArray) -> String {
    let values = x.to_f64_vec();
    let shown: Vec<String> = values.iter().take(8).map(|v| format!("{v:.6}")).collect();
    let more = if values.len() > 8 { ", ..." } else { "" };
    format!(
        "{}{:?} [{}{}]",
        x.dtype(),
        x.shape(),
        shown.join(", "),
        more
    )
}

/// A small deterministic generator, so runs are reproducible by seed.
struct SplitMix64(u64);

impl SplitMix64 {
    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn next_f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }
}
