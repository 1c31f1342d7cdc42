//! The callback family's kernels, shared by the interpreter and the CPU
//! backend's native step: `debug_print` formats its operands into Python's
//! `str.format` placeholders (`{}`, `{0}`, `{name}`, `{{`), each array as
//! NumPy's `str` prints it with JAX's default print options (`maxprec`,
//! precision 8, line width 75, summarised past 1000 elements), and writes
//! the line to the current debug output; `debug_callback` and
//! `pure_callback` call their host functions.
//!
//! The debug output is per thread: standard output unless a caller
//! captures it ([`capture_debug_output`]).

use crate::array::{HostArray, Storage};
use crate::dtype::{DType, DTypeKind};
use crate::error::IrError;
use crate::primitive::{DebugPrintParams, PureCallbackParams};
use std::cell::RefCell;
use std::io::Write;

thread_local! {
    static CAPTURE: RefCell<Vec<String>> = const { RefCell::new(Vec::new()) };
}

/// Runs `f`, collecting what `debug_print` prints on this thread meanwhile
/// (instead of writing it to standard output); returns `f`'s result and
/// the text.
pub fn capture_debug_output<R>(f: impl FnOnce() -> R) -> (R, String) {
    CAPTURE.with(|c| c.borrow_mut().push(String::new()));
    // Pop the buffer even if `f` unwinds.
    struct Pop;
    impl Drop for Pop {
        fn drop(&mut self) {
            CAPTURE.with(|c| {
                c.borrow_mut().pop();
            });
        }
    }
    let pop = Pop;
    let r = f();
    let text = CAPTURE.with(|c| c.borrow_mut().last_mut().map(std::mem::take));
    drop(pop);
    (r, text.unwrap_or_default())
}

/// Writes one line to the current debug output.
pub fn write_debug_line(line: &str) {
    let captured = CAPTURE.with(|c| match c.borrow_mut().last_mut() {
        Some(buf) => {
            buf.push_str(line);
            buf.push('\n');
            true
        }
        None => false,
    });
    if !captured {
        let mut out = std::io::stdout().lock();
        // A closed standard output is not the program's error.
        let _ = writeln!(out, "{line}");
        let _ = out.flush();
    }
}

/// `debug_print`: formats `args` into the format string and prints it.
pub fn debug_print(p: &DebugPrintParams, args: &[HostArray]) -> Result<(), IrError> {
    let line = format_debug(p, args)?;
    write_debug_line(&line);
    Ok(())
}

/// The line `debug_print` prints for `args`.
pub fn format_debug(p: &DebugPrintParams, args: &[HostArray]) -> Result<String, IrError> {
    let (n, names) = p.arg_names()?;
    if n + names.len() != args.len() {
        return Err(IrError::Eval(format!(
            "debug_print: `{}` names {} operands, got {}",
            p.in_tree,
            n + names.len(),
            args.len()
        )));
    }
    format_python(&p.fmt, &args[..n], &names, &args[n..])
}

fn fmt_err(fmt: &str, what: &str) -> IrError {
    IrError::Eval(format!("debug_print: format string `{fmt}`: {what}"))
}

/// Python's `fmt.format(*pos, **kw)` with arrays as NumPy prints them.
fn format_python(
    fmt: &str,
    pos: &[HostArray],
    names: &[String],
    kw: &[HostArray],
) -> Result<String, IrError> {
    let mut out = String::new();
    let mut next = 0usize;
    let mut chars = fmt.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '{' if chars.peek() == Some(&'{') => {
                chars.next();
                out.push('{');
            }
            '}' if chars.peek() == Some(&'}') => {
                chars.next();
                out.push('}');
            }
            '}' => return Err(fmt_err(fmt, "single `}` encountered")),
            '{' => {
                let mut field = String::new();
                loop {
                    match chars.next() {
                        Some('}') => break,
                        Some(ch) => field.push(ch),
                        None => return Err(fmt_err(fmt, "unmatched `{`")),
                    }
                }
                let (name, spec) = match field.split_once(':') {
                    Some((n, s)) => (n, Some(s)),
                    None => (field.as_str(), None),
                };
                let value = if name.is_empty() {
                    let v = pos.get(next).ok_or_else(|| {
                        fmt_err(fmt, &format!("no positional argument {next} to format"))
                    })?;
                    next += 1;
                    v
                } else if let Ok(i) = name.parse::<usize>() {
                    pos.get(i)
                        .ok_or_else(|| fmt_err(fmt, &format!("no positional argument {i}")))?
                } else {
                    let k = names
                        .iter()
                        .position(|n| n == name)
                        .ok_or_else(|| fmt_err(fmt, &format!("no keyword argument `{name}`")))?;
                    &kw[k]
                };
                out.push_str(&format_with_spec(value, spec, fmt)?);
            }
            _ => out.push(c),
        }
    }
    Ok(out)
}

/// One value with an optional format spec: `.Nf` / `.Ne` on a scalar, else
/// NumPy's `str`.
fn format_with_spec(a: &HostArray, spec: Option<&str>, fmt: &str) -> Result<String, IrError> {
    let Some(spec) = spec.filter(|s| !s.is_empty()) else {
        return Ok(format_array(a));
    };
    if a.len() != 1 || !a.shape().is_empty() {
        return Err(fmt_err(
            fmt,
            &format!("format spec `{spec}` on a non-scalar array"),
        ));
    }
    let x = a.data().get_f64(0);
    let prec = |s: &str| {
        s.parse::<usize>()
            .map_err(|_| fmt_err(fmt, "bad precision"))
    };
    if let Some(p) = spec.strip_prefix('.').and_then(|s| s.strip_suffix('f')) {
        return Ok(format!("{x:.*}", prec(p)?));
    }
    if let Some(p) = spec.strip_prefix('.').and_then(|s| s.strip_suffix('e')) {
        return Ok(python_exp(&format!("{x:.*e}", prec(p)?)));
    }
    if spec == "d" && a.dtype().kind() != DTypeKind::Float {
        return Ok(format_array(a));
    }
    Err(fmt_err(fmt, &format!("unsupported format spec `{spec}`")))
}

/// Rust's `1.5e-5` as Python's `1.5e-05`.
fn python_exp(s: &str) -> String {
    match s.split_once('e') {
        Some((m, e)) => {
            let (sign, digits) = match e.strip_prefix('-') {
                Some(d) => ('-', d),
                None => ('+', e),
            };
            format!("{m}e{sign}{digits:0>2}")
        }
        None => s.to_string(),
    }
}

/// NumPy's `str(array)` with the default print options.
pub fn format_array(a: &HostArray) -> String {
    let n = a.len();
    let summarise = n > 1000;
    let shape = a.shape().to_vec();
    let elems = ElemFormat::new(a, summarise);
    if shape.is_empty() {
        return elems.scalar(0);
    }
    let mut out = String::new();
    let strides: Vec<usize> = (0..shape.len())
        .map(|d| shape[d + 1..].iter().product())
        .collect();
    block(&mut out, &elems, &shape, &strides, 0, 0, summarise);
    out
}

/// Writes the sub-array at `offset` of depth `depth`.
fn block(
    out: &mut String,
    el: &ElemFormat,
    shape: &[usize],
    strides: &[usize],
    depth: usize,
    offset: usize,
    summarise: bool,
) {
    let len = shape[depth];
    let picks = picks(len, summarise);
    out.push('[');
    if depth + 1 == shape.len() {
        // A row: elements separated by spaces, wrapped at 75 columns.
        let indent = depth + 1;
        let mut line_len = indent;
        for (k, i) in picks.iter().enumerate() {
            let s = match i {
                Some(i) => el.cell(offset + i * strides[depth]),
                None => "...".to_string(),
            };
            if k > 0 {
                if line_len + 1 + s.len() + 1 > 75 {
                    let kept = out.trim_end().len();
                    out.truncate(kept);
                    out.push('\n');
                    out.push_str(&" ".repeat(indent));
                    line_len = indent;
                } else {
                    out.push(' ');
                    line_len += 1;
                }
            }
            out.push_str(&s);
            line_len += s.len();
        }
    } else {
        let gap = "\n".repeat(shape.len() - depth - 1);
        for (k, i) in picks.iter().enumerate() {
            if k > 0 {
                out.push_str(&gap);
                out.push_str(&" ".repeat(depth + 1));
            }
            match i {
                Some(i) => block(
                    out,
                    el,
                    shape,
                    strides,
                    depth + 1,
                    offset + i * strides[depth],
                    summarise,
                ),
                None => out.push_str("..."),
            }
        }
    }
    out.push(']');
}

/// The indices printed along an axis of `len` (`None`: the `...`).
fn picks(len: usize, summarise: bool) -> Vec<Option<usize>> {
    if summarise && len > 6 {
        (0..3)
            .map(Some)
            .chain(std::iter::once(None))
            .chain((len - 3..len).map(Some))
            .collect()
    } else {
        (0..len).map(Some).collect()
    }
}

/// How each element prints: NumPy pads every element to a common width.
struct ElemFormat<'a> {
    a: &'a HostArray,
    kind: DTypeKind,
    float: FloatStyle,
    width: usize,
    /// Single or half precision: shortest reprs of an `f32`.
    single: bool,
}

/// NumPy's float style for one array: positional with at most `frac`
/// fraction digits (padded with spaces), or scientific.
#[derive(Clone, Copy)]
enum FloatStyle {
    Positional { int_w: usize, frac: usize },
    Scientific { digits: usize },
}

impl<'a> ElemFormat<'a> {
    fn new(a: &'a HostArray, summarise: bool) -> ElemFormat<'a> {
        let kind = a.dtype().kind();
        let n = a.len();
        let shown: Vec<usize> = if summarise {
            // The printed elements only (approximately: the first and last).
            (0..n.min(3)).chain(n.saturating_sub(3)..n).collect()
        } else {
            (0..n).collect()
        };
        let mut el = ElemFormat {
            a,
            kind,
            float: FloatStyle::Positional { int_w: 0, frac: 0 },
            width: 0,
            single: matches!(
                a.dtype(),
                DType::F32 | DType::F16 | DType::BF16 | DType::C64
            ),
        };
        if kind == DTypeKind::Float {
            el.float = float_style(a, &shown, el.single);
        }
        el.width = shown.iter().map(|&i| el.raw(i).len()).max().unwrap_or(0);
        el
    }

    /// A 0-d array: no padding.
    fn scalar(&self, i: usize) -> String {
        match self.kind {
            DTypeKind::Float => fmt_f64(self.a.data().get_f64(i)),
            _ => self.raw(i),
        }
    }

    /// An element of a row, right-aligned to the common width.
    fn cell(&self, i: usize) -> String {
        format!("{:>w$}", self.raw(i), w = self.width)
    }

    fn raw(&self, i: usize) -> String {
        let d = self.a.data();
        match self.kind {
            DTypeKind::Bool => {
                if d.get_i64(i) != 0 {
                    "True".into()
                } else {
                    "False".into()
                }
            }
            DTypeKind::SignedInt => d.get_i64(i).to_string(),
            DTypeKind::UnsignedInt => match d {
                Storage::U64(v) => v[i].to_string(),
                _ => d.get_i64(i).to_string(),
            },
            DTypeKind::Float => float_cell(d.get_f64(i), self.float, self.single),
            DTypeKind::Complex => {
                let z = d.get_c128(i);
                let sign = if z.im < 0.0 || (z.im == 0.0 && z.im.is_sign_negative()) {
                    '-'
                } else {
                    '+'
                };
                format!(
                    "{}{sign}{}j",
                    trim_float(z.re, 8, self.single),
                    trim_float(z.im.abs(), 8, self.single)
                )
            }
            DTypeKind::Key => match d {
                Storage::Key(v) => format!("[{} {}]", v[i][0], v[i][1]),
                _ => "?".into(),
            },
        }
    }
}

/// NumPy's choice of float style for the shown elements.
fn float_style(a: &HostArray, shown: &[usize], single: bool) -> FloatStyle {
    let d = a.data();
    let finite: Vec<f64> = shown
        .iter()
        .map(|&i| d.get_f64(i))
        .filter(|x| x.is_finite())
        .collect();
    let abs: Vec<f64> = finite
        .iter()
        .map(|x| x.abs())
        .filter(|x| *x != 0.0)
        .collect();
    let max = abs.iter().cloned().fold(0.0, f64::max);
    let min = abs.iter().cloned().fold(f64::INFINITY, f64::min);
    let scientific = !abs.is_empty() && (max >= 1e8 || min < 1e-4 || max / min > 1e3);
    if scientific {
        let digits = finite
            .iter()
            .map(|x| {
                let s = format!("{:.8e}", x.abs());
                let m = s.split('e').next().unwrap_or("");
                m.trim_end_matches('0')
                    .trim_end_matches('.')
                    .len()
                    .saturating_sub(2)
            })
            .max()
            .unwrap_or(0);
        return FloatStyle::Scientific { digits };
    }
    let mut frac = 0;
    let mut int_w = 0;
    for x in &finite {
        let s = trim_float(*x, 8, single);
        let (int, f) = s.split_once('.').unwrap_or((&s, ""));
        frac = frac.max(f.len());
        int_w = int_w.max(int.len());
    }
    FloatStyle::Positional { int_w, frac }
}

/// One float in `style`, padded as NumPy pads within an array.
fn float_cell(x: f64, style: FloatStyle, single: bool) -> String {
    if x.is_nan() {
        return "nan".into();
    }
    if x.is_infinite() {
        return if x > 0.0 { "inf".into() } else { "-inf".into() };
    }
    match style {
        FloatStyle::Positional { int_w, frac } => {
            let s = trim_float(x, 8, single);
            let (int, f) = s.split_once('.').unwrap_or((&s, ""));
            format!("{int:>int_w$}.{f:<frac$}")
        }
        FloatStyle::Scientific { digits } => {
            let s = format!("{x:.digits$e}");
            let s = python_exp(&s);
            match s.split_once('e') {
                Some((m, e)) if !m.contains('.') => format!("{m}.e{e}"),
                _ => s,
            }
        }
    }
}

/// `x` with at most `prec` fraction digits, trailing zeros dropped, and a
/// `.` kept (`1.`, `2.5`).
fn trim_float(x: f64, prec: usize, single: bool) -> String {
    let shortest = if single {
        format!("{}", x as f32)
    } else {
        format!("{x}")
    };
    let frac_len = shortest.split_once('.').map_or(0, |(_, f)| f.len());
    let s = if frac_len > prec {
        format!("{x:.prec$}")
    } else {
        shortest
    };
    let s = if s.contains('.') {
        s.trim_end_matches('0').to_string()
    } else {
        format!("{s}.")
    };
    if s == "-0." && x == 0.0 {
        return "-0.".into();
    }
    s
}

/// A 0-d float as JAX's callback prints it: Python's repr of its value as
/// a double (`0.10000000149011612` for `f32` 0.1).
fn fmt_f64(x: f64) -> String {
    special(x).unwrap_or_else(|| python_float(format!("{x}"), x.abs()))
}

fn special(x: f64) -> Option<String> {
    if x.is_nan() {
        Some("nan".into())
    } else if x.is_infinite() {
        Some(if x > 0.0 { "inf" } else { "-inf" }.into())
    } else {
        None
    }
}

/// Rust's shortest float text as Python's repr: `1.0`, `1e-05`, `1e+16`.
fn python_float(s: String, abs: f64) -> String {
    if abs != 0.0 && !(1e-4..1e16).contains(&abs) {
        let digits = s.trim_start_matches('-').replace('.', "");
        let digits = digits.trim_start_matches('0').trim_end_matches('0');
        let exp = abs.log10().floor() as i32;
        let sign = if s.starts_with('-') { "-" } else { "" };
        let (first, rest) = digits.split_at(digits.len().min(1));
        let mantissa = if rest.is_empty() {
            first.to_string()
        } else {
            format!("{first}.{rest}")
        };
        return format!(
            "{sign}{mantissa}e{}{:02}",
            if exp < 0 { '-' } else { '+' },
            exp.abs()
        );
    }
    if s.contains('.') {
        s
    } else {
        format!("{s}.0")
    }
}

/// `debug_callback`: calls the host function on `args` for its effect.
pub fn call_for_effect(
    cb: &crate::primitive::HostCallback,
    args: &[HostArray],
) -> Result<(), IrError> {
    cb.call("debug_callback", args).map(|_| ())
}

/// `pure_callback`: calls the host function and checks its results against
/// the declared types.
pub fn pure_callback(
    p: &PureCallbackParams,
    args: &[HostArray],
) -> Result<Vec<HostArray>, IrError> {
    let outs = p.callback.call("pure_callback", args)?;
    if outs.len() != p.result_avals.len() {
        return Err(IrError::Eval(format!(
            "pure_callback: the host function returned {} arrays, declared {}",
            outs.len(),
            p.result_avals.len()
        )));
    }
    for (k, (o, a)) in outs.iter().zip(&p.result_avals).enumerate() {
        let want = a.static_sizes();
        let dt: DType = a.dtype;
        if o.dtype() != dt || want.as_deref() != Some(o.shape()) {
            return Err(IrError::Eval(format!(
                "pure_callback: result {k} is {}{:?}, declared {}{:?}",
                o.dtype().short_name(),
                o.shape(),
                dt.short_name(),
                want.unwrap_or_default()
            )));
        }
    }
    Ok(outs)
}
