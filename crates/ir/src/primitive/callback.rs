//! The callback family: equations that call back into the host program
//! (`jax.debug.print`, `jax.debug.callback`, `jax.pure_callback`).
//!
//! Invariant: `debug_print` and `debug_callback` have no results and a host
//! effect, so no pass may remove, merge or reorder them past one another
//! ([`Callback::has_effect`]); `pure_callback`'s results are its declared
//! `result_avals`. None of them holds a jaxpr or writes a `Ref`. A callback
//! read from JAX's text has no host function (the Python function is not
//! there): running it is an error naming the primitive.

use crate::array::HostArray;
use crate::aval::ShapedArray;
use crate::error::IrError;
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// Calls back into the host program.
#[derive(Clone, Debug, PartialEq)]
pub enum Callback {
    /// `debug_print[fmt has_placeholders in_tree ..] *xs`: formats its
    /// operands into `fmt` and prints the line (`jax.debug.print`).
    DebugPrint(DebugPrintParams),
    /// `debug_callback[callback effect partitioned] *xs`: calls a host
    /// function for its effect (`jax.debug.callback`).
    DebugCallback(DebugCallbackParams),
    /// `pure_callback[callback result_avals sharding vmap_method] *xs`: a
    /// host function from arrays to arrays of declared types.
    PureCallback(PureCallbackParams),
}

impl Callback {
    /// The name JAX prints.
    pub fn name(&self) -> &'static str {
        match self {
            Callback::DebugPrint(_) => "debug_print",
            Callback::DebugCallback(_) => "debug_callback",
            Callback::PureCallback(_) => "pure_callback",
        }
    }

    /// Whether the equation must run even when nothing reads its results.
    pub fn has_effect(&self) -> bool {
        match self {
            Callback::DebugPrint(_) | Callback::DebugCallback(_) => true,
            Callback::PureCallback(_) => false,
        }
    }
}

/// A host function from arrays to arrays; `Err` carries the message.
pub type HostFn = Arc<dyn Fn(&[HostArray]) -> Result<Vec<HostArray>, String> + Send + Sync>;

static NEXT_ID: AtomicU64 = AtomicU64::new(1);

/// A host function held by a callback equation, with the text JAX prints
/// for it. Two callbacks are equal when they are the same registration
/// (same id) and print the same; one read from text (id 0) has no function.
#[derive(Clone)]
pub struct HostCallback {
    /// Unique per registered function; 0 for one read from text.
    pub id: u64,
    /// The text printed for it (`<function ... at 0xXXXXXXXXXXXX>`).
    pub text: String,
    /// The function, if this process has it.
    pub func: Option<HostFn>,
}

impl HostCallback {
    /// Registers `func`, printed as `text`.
    pub fn new(text: impl Into<String>, func: HostFn) -> HostCallback {
        HostCallback {
            id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
            text: text.into(),
            func: Some(func),
        }
    }

    /// A callback read from text: it prints as read and errors when run.
    pub fn parsed(text: impl Into<String>) -> HostCallback {
        HostCallback {
            id: 0,
            text: text.into(),
            func: None,
        }
    }

    /// Calls the function on `args`; an error names `prim` when there is
    /// none (a jaxpr read from JAX's text) or when it fails.
    pub fn call(&self, prim: &str, args: &[HostArray]) -> Result<Vec<HostArray>, IrError> {
        let f = self.func.as_ref().ok_or_else(|| {
            IrError::Eval(format!(
                "{prim}: the host function `{}` is not available (a callback read from text \
                 cannot run; register the function from Rust)",
                self.text
            ))
        })?;
        f(args).map_err(|m| IrError::Eval(format!("{prim}: the host callback failed: {m}")))
    }
}

impl fmt::Debug for HostCallback {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "HostCallback(#{} {})", self.id, self.text)
    }
}

impl PartialEq for HostCallback {
    fn eq(&self, other: &HostCallback) -> bool {
        self.id == other.id && self.text == other.text
    }
}

/// NumPy's print options as `jax.debug.print` records them (defaults).
pub const NP_PRINTOPTIONS: &str = "(('edgeitems', 3), ('threshold', 1000), ('floatmode', \
'maxprec'), ('precision', 8), ('suppress', False), ('linewidth', 75), ('nanstr', 'nan'), \
('infstr', 'inf'), ('sign', '-'), ('formatter', None), ('legacy', False), ('override_repr', None))";

/// The params of `debug_print`; the values kept as JAX prints them where
/// only Python reads them.
#[derive(Clone, Debug, PartialEq)]
pub struct DebugPrintParams {
    /// The format string, with `{}`, `{0}` and `{name}` placeholders.
    pub fmt: String,
    /// Whether `fmt` has any placeholder.
    pub has_placeholders: bool,
    /// The operands' tree: `PyTreeDef(((*, *), {'a': *}))`, positional
    /// operands first, then keyword ones in key order.
    pub in_tree: String,
    /// `None` (or the logging record, as printed).
    pub logging_record: String,
    /// NumPy's print options, as printed.
    pub np_printoptions: String,
    /// Whether the print is ordered with other ordered effects.
    pub ordered: bool,
    /// Whether the callback runs per shard.
    pub partitioned: bool,
    /// Static arguments, as printed (`()`).
    pub static_args: String,
}

impl DebugPrintParams {
    /// The params `jax.debug.print(fmt, *args, **kwargs)` records for
    /// `positional` positional operands and keyword operands `names`
    /// (in the order given: JAX sorts them).
    pub fn new(fmt: &str, positional: usize, names: &[String], ordered: bool) -> DebugPrintParams {
        let pos: Vec<&str> = vec!["*"; positional];
        let pos = match positional {
            1 => "(*,)".to_string(),
            _ => format!("({})", pos.join(", ")),
        };
        let kw: Vec<String> = names.iter().map(|n| format!("'{n}': *")).collect();
        DebugPrintParams {
            fmt: fmt.to_string(),
            has_placeholders: fmt.contains('{'),
            in_tree: format!("PyTreeDef(({pos}, {{{}}}))", kw.join(", ")),
            logging_record: "None".to_string(),
            np_printoptions: NP_PRINTOPTIONS.to_string(),
            ordered,
            partitioned: false,
            static_args: "()".to_string(),
        }
    }

    /// The number of positional operands and the keyword operands' names,
    /// read from `in_tree`.
    pub fn arg_names(&self) -> Result<(usize, Vec<String>), IrError> {
        let bad = || {
            IrError::Invalid(format!(
                "debug_print: cannot read the operand tree `{}`",
                self.in_tree
            ))
        };
        let t = self.in_tree.trim();
        let inner = t
            .strip_prefix("PyTreeDef((")
            .and_then(|s| s.strip_suffix("))"))
            .ok_or_else(bad)?;
        let open = inner.find('{').ok_or_else(bad)?;
        let positional = inner[..open].matches('*').count();
        let mut names = Vec::new();
        for entry in inner[open..]
            .trim_matches(|c| c == '{' || c == '}')
            .split(',')
        {
            let entry = entry.trim();
            if entry.is_empty() {
                continue;
            }
            let (key, leaf) = entry.split_once(':').ok_or_else(bad)?;
            if leaf.trim() != "*" {
                return Err(bad());
            }
            names.push(
                key.trim()
                    .trim_matches(|c| c == '\'' || c == '"')
                    .to_string(),
            );
        }
        Ok((positional, names))
    }
}

/// The params of `debug_callback`.
#[derive(Clone, Debug, PartialEq)]
pub struct DebugCallbackParams {
    /// The host function, called with the operands; its results are
    /// ignored.
    pub callback: HostCallback,
    /// `Debug` or `OrderedDebug` (`ordered=True`).
    pub effect: String,
    /// Whether the callback runs per shard.
    pub partitioned: bool,
}

/// The params of `pure_callback`.
#[derive(Clone, Debug, PartialEq)]
pub struct PureCallbackParams {
    /// The host function from the operands to the results.
    pub callback: HostCallback,
    /// The results' declared types.
    pub result_avals: Vec<ShapedArray>,
    /// The results' sharding, as printed (`None`).
    pub sharding: String,
    /// How `vmap` batches it: `None` (an error when batched),
    /// `sequential` (one call per batch element), `expand_dims` or
    /// `broadcast_all` (one call on batched operands).
    pub vmap_method: Option<String>,
}
