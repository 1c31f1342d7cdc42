//! The marker family: primitives that compute nothing but tell the compiler
//! or the runtime something about their values.
//!
//! Invariant: `name`, `device_put`, `optimization_barrier`, `reshard` and
//! `sharding_constraint` are identities
//! (result `i` is operand `i`, same type); `platform_index` reads no operand
//! and gives an `i32` scalar that depends only on the platform that runs it.
//! None of them holds a jaxpr or writes a `Ref`, so a backend may replace
//! them before planning (`passes::resolve_markers`).

/// Values marked for the compiler or the runtime.
#[derive(Clone, Debug, PartialEq)]
pub enum Marker {
    /// `name[name] x`: `checkpoint_name`, which names a value for the
    /// rematerialisation policies (`save_only_these_names`).
    Name(NameParams),
    /// `device_put[copy_semantics devices srcs] *xs`: places each operand
    /// on a device; with one device, an identity.
    DevicePut(DevicePutParams),
    /// `optimization_barrier *xs`: an identity the compiler may not move
    /// computations across.
    OptimizationBarrier(OptimizationBarrierParams),
    /// `platform_index[platforms]`: the index of the entry of `platforms`
    /// naming the platform that runs the program (`None` matches any).
    PlatformIndex(PlatformIndexParams),
    /// `reshard x`: moves `x` to another sharding; on one process, an
    /// identity.
    Reshard(ReshardParams),
    /// `sharding_constraint[context_mesh layout sharding
    /// unconstrained_dims] x`: `with_sharding_constraint`, an identity on
    /// values.
    ShardingConstraint(ShardingConstraintParams),
}

impl Marker {
    /// The name JAX prints.
    pub fn name(&self) -> &'static str {
        match self {
            Marker::Name(_) => "name",
            Marker::DevicePut(_) => "device_put",
            Marker::OptimizationBarrier(_) => "optimization_barrier",
            Marker::PlatformIndex(_) => "platform_index",
            Marker::Reshard(_) => "reshard",
            Marker::ShardingConstraint(_) => "sharding_constraint",
        }
    }
}

/// The params of `name` (`checkpoint_name`).
#[derive(Clone, Debug, PartialEq)]
pub struct NameParams {
    /// The name given to the value.
    pub name: String,
}

/// The params of `device_put`, one entry per operand, kept as JAX prints
/// them (`ArrayCopySemantics.REUSE_INPUT`, `None`).
#[derive(Clone, Debug, PartialEq)]
pub struct DevicePutParams {
    /// Whether each result may alias its operand.
    pub copy_semantics: Vec<String>,
    /// The target device or sharding of each operand (`None`: unchanged).
    pub devices: Vec<String>,
    /// The source device of each operand (`None`: where it is).
    pub srcs: Vec<String>,
}

/// The params of `optimization_barrier` (none).
#[derive(Clone, Debug, PartialEq)]
pub struct OptimizationBarrierParams;

/// The params of `platform_index`.
#[derive(Clone, Debug, PartialEq)]
pub struct PlatformIndexParams {
    /// Per branch, the platforms it serves, or `None` for the default.
    pub platforms: Vec<Option<Vec<String>>>,
}

/// The platform a program runs on, as `platform_index` names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Platform {
    /// The host CPU (the interpreter and the CPU backend).
    Cpu,
    /// NVIDIA GPUs.
    Cuda,
}

impl Platform {
    /// The names JAX uses for this platform (`'cpu'`; `'cuda'` and `'gpu'`).
    pub fn names(self) -> &'static [&'static str] {
        match self {
            Platform::Cpu => &["cpu"],
            Platform::Cuda => &["cuda", "gpu"],
        }
    }
}

impl PlatformIndexParams {
    /// The index of the first entry naming `platform`, else of the first
    /// `None` entry; `None` if neither exists (JAX's lowering error).
    pub fn index_for(&self, platform: Platform) -> Option<usize> {
        let names = platform.names();
        self.platforms
            .iter()
            .position(|p| {
                p.as_ref()
                    .is_some_and(|ps| ps.iter().any(|n| names.contains(&n.as_str())))
            })
            .or_else(|| self.platforms.iter().position(Option::is_none))
    }
}

/// The params of `reshard` (JAX prints none).
#[derive(Clone, Debug, PartialEq)]
pub struct ReshardParams;

/// The params of `sharding_constraint`.
#[derive(Clone, Debug, PartialEq)]
pub struct ShardingConstraintParams {
    /// The mesh of the enclosing `use_mesh` (`Mesh()` when none).
    pub context_mesh: super::Mesh,
    /// The layout, as printed (`None`).
    pub layout: String,
    /// The sharding asked for.
    pub sharding: super::NamedSharding,
    /// Dimensions left unconstrained.
    pub unconstrained_dims: Vec<usize>,
}
