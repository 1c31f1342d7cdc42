//! Filetests in Cranelift's style: every `tests/filetests/*.jaxpr` names the
//! stages to run (`; run: simplify fusion memory eval`), holds a jaxpr as
//! JAX prints it and ends with the expected output of each stage in
//! `; check <stage>:` comment blocks. `JAXON_BLESS=1` rewrites those blocks
//! from the actual output. The format is described in
//! `tests/filetests/README.md`.

use jaxon_ir::passes::{plan_fusion, plan_memory, simplify, MemoryOptions};
use jaxon_ir::{eval_closed_jaxpr, parse_closed_jaxpr, DType, HostArray, Storage};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// The stages a filetest may run, in the order their blocks are written.
const STAGES: [&str; 4] = ["simplify", "fusion", "memory", "eval"];

/// A parsed filetest.
#[derive(Debug, Default, PartialEq)]
struct FileTest {
    /// Stages to run, in the order named.
    run: Vec<String>,
    /// Values of the constvars, in order.
    consts: Vec<HostArray>,
    /// Values of the invars, in order.
    inputs: Vec<HostArray>,
    /// The jaxpr text.
    jaxpr: String,
    /// The text before the first check block (kept verbatim by bless).
    head: String,
    /// The expected output of each stage that has a check block.
    checks: Vec<(String, String)>,
}

/// Parses `f32[2,3] = [[1, 2, 3], [4, 5, 6]]` (brackets are optional; the
/// numbers are read in row-major order; `true`/`false`, `nan`, `inf` allowed).
fn parse_array(spec: &str) -> Result<HostArray, String> {
    let (ty, values) = spec
        .split_once('=')
        .ok_or_else(|| format!("array `{spec}` has no `=`"))?;
    let ty = ty.trim();
    let (dt, dims) = ty
        .strip_suffix(']')
        .and_then(|t| t.split_once('['))
        .ok_or_else(|| format!("bad array type `{ty}`"))?;
    let dtype = DType::from_name(dt).ok_or_else(|| format!("unknown dtype `{dt}`"))?;
    let shape: Vec<usize> = dims
        .split(',')
        .map(str::trim)
        .filter(|d| !d.is_empty())
        .map(|d| d.parse().map_err(|_| format!("bad dimension `{d}`")))
        .collect::<Result<_, _>>()?;
    let nums: Vec<f64> = values
        .split(|c: char| c == ',' || c == '[' || c == ']' || c.is_whitespace())
        .filter(|t| !t.is_empty())
        .map(|t| match t {
            "true" | "True" => Ok(1.0),
            "false" | "False" => Ok(0.0),
            t => t.parse::<f64>().map_err(|_| format!("bad number `{t}`")),
        })
        .collect::<Result<_, _>>()?;
    // Integers go through i64 directly so that i64/u64 values keep every bit.
    let data = match dtype {
        DType::I64 => Storage::I64(
            values
                .split(|c: char| c == ',' || c == '[' || c == ']' || c.is_whitespace())
                .filter(|t| !t.is_empty())
                .map(|t| t.parse::<i64>().map_err(|_| format!("bad i64 `{t}`")))
                .collect::<Result<_, _>>()?,
        ),
        _ => Storage::from_f64(dtype, &nums),
    };
    HostArray::new(shape, data).map_err(|e| format!("array `{spec}`: {e}"))
}

/// One element as text: floats in their shortest round-trip form at their
/// own precision, integers exactly, bools as `true`/`false`.
fn elem(s: &Storage, i: usize) -> String {
    match s {
        Storage::Bool(v) => v[i].to_string(),
        Storage::I8(v) => v[i].to_string(),
        Storage::I16(v) => v[i].to_string(),
        Storage::I32(v) => v[i].to_string(),
        Storage::I64(v) => v[i].to_string(),
        Storage::U8(v) => v[i].to_string(),
        Storage::U16(v) => v[i].to_string(),
        Storage::U32(v) => v[i].to_string(),
        Storage::U64(v) => v[i].to_string(),
        Storage::F16(v) => v[i].to_string(),
        Storage::BF16(v) => v[i].to_string(),
        Storage::F32(v) => v[i].to_string(),
        Storage::F64(v) => v[i].to_string(),
        Storage::C64(v) => v[i].to_string(),
        Storage::C128(v) => v[i].to_string(),
        Storage::Key(v) => format!("{:?}", v[i]),
    }
}

/// Nested brackets of the elements of `data[start..]` for `shape`.
fn nested(data: &Storage, shape: &[usize], start: usize, out: &mut String) {
    match shape.split_first() {
        None => out.push_str(&elem(data, start)),
        Some((&n, rest)) => {
            let stride: usize = rest.iter().product();
            out.push('[');
            for k in 0..n {
                if k > 0 {
                    out.push_str(", ");
                }
                nested(data, rest, start + k * stride, out);
            }
            out.push(']');
        }
    }
}

/// `f32[2,2] = [[1, 2], [3, 4]]`, the form inputs are written in.
fn format_array(a: &HostArray) -> String {
    let dims: Vec<String> = a.shape().iter().map(|d| d.to_string()).collect();
    let mut s = format!("{}[{}] = ", a.dtype().short_name(), dims.join(","));
    nested(a.data(), a.shape(), 0, &mut s);
    s
}

/// Splits a filetest into its directives, jaxpr and check blocks.
fn parse_file(text: &str) -> Result<FileTest, String> {
    let mut t = FileTest::default();
    let lines: Vec<&str> = text.lines().collect();
    let first_check = lines
        .iter()
        .position(|l| l.starts_with("; check "))
        .unwrap_or(lines.len());
    let mut head = String::new();
    for l in &lines[..first_check] {
        head.push_str(l);
        head.push('\n');
        if let Some(rest) = l.strip_prefix("; run:") {
            t.run.extend(rest.split_whitespace().map(String::from));
        } else if let Some(rest) = l.strip_prefix("; input:") {
            t.inputs.push(parse_array(rest)?);
        } else if let Some(rest) = l.strip_prefix("; const:") {
            t.consts.push(parse_array(rest)?);
        } else if !l.starts_with(';') {
            t.jaxpr.push_str(l);
            t.jaxpr.push('\n');
        }
    }
    t.head = head.trim_end().to_string();
    for s in &t.run {
        if !STAGES.contains(&s.as_str()) {
            return Err(format!("unknown stage `{s}` (stages: {STAGES:?})"));
        }
    }
    if t.run.is_empty() {
        return Err("no `; run:` line".into());
    }
    let mut i = first_check;
    while i < lines.len() {
        let stage = lines[i]
            .strip_prefix("; check ")
            .and_then(|r| r.strip_suffix(':'))
            .ok_or_else(|| format!("line {}: expected `; check <stage>:`", i + 1))?
            .trim()
            .to_string();
        i += 1;
        let mut body = String::new();
        while i < lines.len() && !lines[i].starts_with("; check ") {
            let l = lines[i];
            let content = if l == ";" {
                ""
            } else if let Some(c) = l.strip_prefix("; ") {
                c
            } else if l.trim().is_empty() {
                i += 1;
                continue;
            } else {
                return Err(format!("line {}: check lines start with `; `", i + 1));
            };
            body.push_str(content);
            body.push('\n');
            i += 1;
        }
        t.checks.push((stage, body));
    }
    Ok(t)
}

/// Runs one stage and returns its output text (ending in a newline).
fn run_stage(t: &FileTest, stage: &str) -> Result<String, String> {
    let closed = parse_closed_jaxpr(&t.jaxpr, t.consts.clone()).map_err(|e| e.to_string())?;
    let simple = || {
        simplify(&closed, jaxon_ir::primitive::Platform::Cpu).map_err(|e| format!("simplify: {e}"))
    };
    let mut out = match stage {
        "simplify" => simple()?.to_string(),
        "fusion" => {
            let s = simple()?;
            plan_fusion(&s.jaxpr)
                .map_err(|e| e.to_string())?
                .to_string()
        }
        "memory" => {
            let s = simple()?;
            let plan = plan_fusion(&s.jaxpr).map_err(|e| e.to_string())?;
            let mem = plan_memory(&s.jaxpr, &plan, &MemoryOptions::default())
                .map_err(|e| e.to_string())?;
            mem.check()
                .map_err(|e| format!("memory plan invalid: {e}"))?;
            mem.to_string()
        }
        "eval" => {
            let eval = |c| -> Result<String, String> {
                let outs = eval_closed_jaxpr(c, &t.inputs).map_err(|e| e.to_string())?;
                let mut s = String::new();
                for (i, o) in outs.iter().enumerate() {
                    let _ = writeln!(s, "out{i}: {}", format_array(o));
                }
                Ok(s)
            };
            let original = eval(&closed)?;
            // The simplified jaxpr must compute the same values.
            let simplified = eval(&simple()?)?;
            if original != simplified {
                return Err(format!(
                    "simplify changed the result:\n{}",
                    diff(&original, &simplified)
                ));
            }
            original
        }
        other => return Err(format!("unknown stage `{other}`")),
    };
    if !out.ends_with('\n') {
        out.push('\n');
    }
    Ok(out)
}

/// A line diff of `expected` and `actual` (`-` expected, `+` actual), from
/// a longest common subsequence; lines in both are shown with two spaces.
fn diff(expected: &str, actual: &str) -> String {
    let a: Vec<&str> = expected.lines().collect();
    let b: Vec<&str> = actual.lines().collect();
    let (n, m) = (a.len(), b.len());
    let mut lcs = vec![vec![0usize; m + 1]; n + 1];
    for i in (0..n).rev() {
        for j in (0..m).rev() {
            lcs[i][j] = if a[i] == b[j] {
                lcs[i + 1][j + 1] + 1
            } else {
                lcs[i + 1][j].max(lcs[i][j + 1])
            };
        }
    }
    let (mut i, mut j, mut out) = (0, 0, String::new());
    while i < n || j < m {
        if i < n && j < m && a[i] == b[j] {
            let _ = writeln!(out, "  {}", a[i]);
            i += 1;
            j += 1;
        } else if i < n && (j == m || lcs[i + 1][j] >= lcs[i][j + 1]) {
            let _ = writeln!(out, "- {}", a[i]);
            i += 1;
        } else {
            let _ = writeln!(out, "+ {}", b[j]);
            j += 1;
        }
    }
    out
}

/// Compares one stage's actual output with its expected block: `None` when
/// they match, else a report naming the file and stage with a diff.
fn compare(file: &str, stage: &str, expected: Option<&str>, actual: &str) -> Option<String> {
    match expected {
        Some(e) if e == actual => None,
        Some(e) => Some(format!(
            "{file}: stage `{stage}` differs (- expected, + actual):\n{}",
            diff(e, actual)
        )),
        None => Some(format!(
            "{file}: stage `{stage}` has no `; check {stage}:` block; actual output:\n{actual}"
        )),
    }
}

/// The file's text with its check blocks replaced by `actual`.
fn blessed(t: &FileTest, actual: &[(String, String)]) -> String {
    let mut s = t.head.clone();
    s.push('\n');
    for (stage, out) in actual {
        let _ = write!(s, "\n; check {stage}:\n");
        for l in out.lines() {
            if l.is_empty() {
                s.push_str(";\n");
            } else {
                let _ = writeln!(s, "; {l}");
            }
        }
    }
    s
}

/// Runs one file: `Ok(())` when every stage matches (or it was blessed).
fn run_file(path: &Path, bless: bool) -> Result<(), String> {
    let name = path.file_name().map_or_else(
        || path.display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    );
    let text = std::fs::read_to_string(path).map_err(|e| format!("{name}: {e}"))?;
    let t = parse_file(&text).map_err(|e| format!("{name}: {e}"))?;
    let mut actual = Vec::new();
    let mut failures = Vec::new();
    for stage in &t.run {
        let out = run_stage(&t, stage).map_err(|e| format!("{name}: stage `{stage}`: {e}"))?;
        let expected = t
            .checks
            .iter()
            .find(|(s, _)| s == stage)
            .map(|(_, e)| e.as_str());
        failures.extend(compare(&name, stage, expected, &out));
        actual.push((stage.clone(), out));
    }
    for (s, _) in &t.checks {
        if !t.run.contains(s) {
            failures.push(format!("{name}: `; check {s}:` for a stage not run"));
        }
    }
    if bless {
        let new = blessed(&t, &actual);
        if new != text {
            std::fs::write(path, new).map_err(|e| format!("{name}: {e}"))?;
        }
        return Ok(());
    }
    if failures.is_empty() {
        Ok(())
    } else {
        Err(failures.join("\n"))
    }
}

fn filetest_paths() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("filetests");
    let mut paths: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("tests/filetests exists")
        .map(|e| e.expect("directory entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "jaxpr"))
        .collect();
    paths.sort();
    paths
}

#[test]
fn filetests() {
    let bless = std::env::var_os("JAXON_BLESS").is_some_and(|v| v != "0" && !v.is_empty());
    let paths = filetest_paths();
    assert!(!paths.is_empty(), "no filetests found");
    let failures: Vec<String> = paths
        .iter()
        .filter_map(|p| run_file(p, bless).err())
        .collect();
    assert!(
        failures.is_empty(),
        "{} of {} filetests failed (JAXON_BLESS=1 rewrites expectations):\n\n{}",
        failures.len(),
        paths.len(),
        failures.join("\n\n")
    );
}

const SAMPLE: &str = "; A comment.
; run: simplify eval
; input: f32[2] = [1, 2]
{ lambda ; a:f32[2]. let b:f32[2] = add a a in (b,) }

; check simplify:
; { lambda ; a:f32[2]. let b:f32[2] = add a a in (b,) }

; check eval:
; out0: f32[2] = [2, 4]
";

#[test]
fn sample_passes_and_a_wrong_expectation_fails() {
    let t = parse_file(SAMPLE).expect("parses");
    assert_eq!(t.run, ["simplify", "eval"]);
    assert_eq!(t.inputs.len(), 1);
    for (stage, expected) in &t.checks {
        let actual = run_stage(&t, stage).expect("runs");
        assert_eq!(compare("sample", stage, Some(expected), &actual), None);
    }
    let wrong = SAMPLE.replace("[2, 4]", "[2, 5]");
    let t = parse_file(&wrong).expect("parses");
    let (stage, expected) = &t.checks[1];
    let actual = run_stage(&t, stage).expect("runs");
    let report = compare("sample", stage, Some(expected), &actual).expect("a mismatch");
    assert!(report.contains("sample: stage `eval` differs"), "{report}");
    assert!(report.contains("- out0: f32[2] = [2, 5]"), "{report}");
    assert!(report.contains("+ out0: f32[2] = [2, 4]"), "{report}");
    let minus = report.find("- out0").expect("removed line");
    assert!(
        minus < report.find("+ out0").expect("added line"),
        "{report}"
    );
}

#[test]
fn diff_keeps_common_lines() {
    assert_eq!(diff("a\nb\nc\n", "a\nx\nc\n"), "  a\n- b\n+ x\n  c\n");
    assert_eq!(diff("a\n", "a\n"), "  a\n");
    assert_eq!(diff("", "a\n"), "+ a\n");
}

#[test]
fn bless_round_trips() {
    let t = parse_file(SAMPLE).expect("parses");
    let actual: Vec<(String, String)> = t
        .run
        .iter()
        .map(|s| (s.clone(), run_stage(&t, s).expect("runs")))
        .collect();
    assert_eq!(blessed(&t, &actual), SAMPLE);
}

#[test]
fn arrays_parse_and_print() {
    let a = parse_array(" f32[2,2] = [[1, 2.5], [3, 4]]").expect("parses");
    assert_eq!(format_array(&a), "f32[2,2] = [[1, 2.5], [3, 4]]");
    let s = parse_array("i32[] = 7").expect("parses");
    assert_eq!(format_array(&s), "i32[] = 7");
    let b = parse_array("bool[2] = [true, false]").expect("parses");
    assert_eq!(format_array(&b), "bool[2] = [true, false]");
    assert!(parse_array("f32[3] = [1, 2]").is_err());
    assert!(
        parse_file("{ lambda ; . let in () }").is_err(),
        "no run line"
    );
}
