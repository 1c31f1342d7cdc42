//! Benchmarks of the jaxpr parser and printer on a 10,000-equation jaxpr.

use criterion::{criterion_group, criterion_main, Criterion};
use jaxon_benches::chain_jaxpr_text;
use jaxon_ir::{parse_jaxpr, print::print_jaxpr};
use std::hint::black_box;
use std::time::Duration;

fn parse_print(c: &mut Criterion) {
    let text = chain_jaxpr_text(10_000);
    let mut group = c.benchmark_group("jaxpr_10k_eqns");
    group
        .sample_size(10)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(5));
    group.bench_function("parse_jaxpr", |b| {
        b.iter(|| black_box(parse_jaxpr(black_box(&text))).is_ok())
    });
    match parse_jaxpr(&text) {
        Ok(jaxpr) => {
            let printed = print_jaxpr(&jaxpr);
            if printed != text {
                eprintln!("warning: print(parse(text)) differs from the text");
            }
            group.bench_function("print_jaxpr", |b| {
                b.iter(|| black_box(print_jaxpr(black_box(&jaxpr))).len())
            });
        }
        Err(e) => eprintln!(
            "skipped: print_jaxpr benchmark, the text does not parse yet ({e}); \
             parse_jaxpr numbers measure only the error path"
        ),
    }
    group.finish();
}

criterion_group!(benches, parse_print);
criterion_main!(benches);
