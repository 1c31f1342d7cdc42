//! Meshes, partition specs and named shardings: the param values of
//! `shard_map`, `sharding_constraint` and the `out_sharding` of ordinary
//! primitives, printed as JAX 0.10 prints them (`Mesh('x': 2,
//! axis_types=(Auto,))`, `P('x', None)`, `NamedSharding(mesh=..., spec=...)`).
//!
//! Invariant: a mesh's axis names are distinct and its sizes are at least 1;
//! a spec names each mesh axis at most once.

use std::fmt;

/// How a mesh axis is partitioned (JAX's `AxisType`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AxisType {
    /// `Auto`: the compiler decides.
    Auto,
    /// `Explicit`: shardings are part of the types.
    Explicit,
    /// `Manual`: inside a `shard_map` over the axis.
    Manual,
}

impl AxisType {
    /// The name JAX prints.
    pub fn name(self) -> &'static str {
        match self {
            AxisType::Auto => "Auto",
            AxisType::Explicit => "Explicit",
            AxisType::Manual => "Manual",
        }
    }

    /// The type printed as `name`.
    pub fn from_name(name: &str) -> Option<AxisType> {
        [AxisType::Auto, AxisType::Explicit, AxisType::Manual]
            .into_iter()
            .find(|t| t.name() == name)
    }
}

/// A mesh: named axes with sizes, in order (row-major device order).
#[derive(Clone, Debug, PartialEq, Eq, Hash, Default)]
pub struct Mesh {
    /// `(name, size)` per axis, major to minor.
    pub axes: Vec<(String, usize)>,
    /// One type per axis.
    pub axis_types: Vec<AxisType>,
}

impl Mesh {
    /// A mesh of `Auto` axes.
    pub fn new(axes: &[(&str, usize)]) -> Mesh {
        Mesh {
            axes: axes.iter().map(|(n, s)| (n.to_string(), *s)).collect(),
            axis_types: vec![AxisType::Auto; axes.len()],
        }
    }

    /// The number of devices.
    pub fn size(&self) -> usize {
        self.axes.iter().map(|(_, s)| *s).product()
    }

    /// The size of axis `name`.
    pub fn axis_size(&self, name: &str) -> Option<usize> {
        self.axes.iter().find(|(n, _)| n == name).map(|(_, s)| *s)
    }

    /// The position of axis `name`.
    pub fn axis_pos(&self, name: &str) -> Option<usize> {
        self.axes.iter().position(|(n, _)| n == name)
    }

    /// The coordinates of device `rank` (row-major over the axes).
    pub fn coords(&self, rank: usize) -> Vec<usize> {
        let mut c = vec![0; self.axes.len()];
        let mut r = rank;
        for (k, (_, s)) in self.axes.iter().enumerate().rev() {
            c[k] = r % s.max(&1);
            r /= s.max(&1);
        }
        c
    }

    /// The rank of the device at `coords`.
    pub fn rank(&self, coords: &[usize]) -> usize {
        self.axes
            .iter()
            .zip(coords)
            .fold(0, |acc, ((_, s), c)| acc * s + c)
    }

    /// Checks the invariant: distinct names, sizes at least 1, one type per axis.
    pub fn validate(&self) -> Result<(), String> {
        for (i, (n, s)) in self.axes.iter().enumerate() {
            if *s == 0 {
                return Err(format!("mesh axis '{n}' has size 0"));
            }
            if self.axes[..i].iter().any(|(m, _)| m == n) {
                return Err(format!("mesh axis '{n}' is named twice"));
            }
        }
        if self.axis_types.len() != self.axes.len() {
            return Err(format!(
                "mesh has {} axes but {} axis types",
                self.axes.len(),
                self.axis_types.len()
            ));
        }
        Ok(())
    }

    /// How many shards dimension `d` of an array with `spec` is split
    /// into: the product of the sizes of the axes its entry names.
    pub fn dim_parts(&self, spec: &PartitionSpec, d: usize) -> Result<usize, String> {
        spec.dim_axes(d).iter().try_fold(1usize, |acc, a| {
            self.axis_size(a)
                .map(|s| acc * s)
                .ok_or_else(|| format!("spec {spec} names axis '{a}', which is not in {self}"))
        })
    }

    /// Checks that `spec` fits an array of rank `rank` on this mesh.
    pub fn check_spec(&self, spec: &PartitionSpec, rank: usize) -> Result<(), String> {
        if spec.0.len() > rank {
            return Err(format!(
                "spec {spec} has {} entries for an array of rank {rank}",
                spec.0.len()
            ));
        }
        for d in 0..spec.0.len() {
            self.dim_parts(spec, d)?;
        }
        Ok(())
    }

    /// The per-device shard sizes of an array of `sizes` split by `spec`;
    /// an error names the shape and the spec when a dimension does not divide.
    pub fn shard_sizes(&self, spec: &PartitionSpec, sizes: &[usize]) -> Result<Vec<usize>, String> {
        self.check_spec(spec, sizes.len())?;
        sizes
            .iter()
            .enumerate()
            .map(|(d, &n)| {
                let parts = self.dim_parts(spec, d)?;
                if n % parts != 0 {
                    return Err(format!(
                        "dimension {d} of shape {sizes:?} (size {n}) is not divisible by {parts}, \
                         the number of shards spec {spec} splits it into over {self}"
                    ));
                }
                Ok(n / parts)
            })
            .collect()
    }

    /// The global sizes of an array whose per-device shards have `sizes`.
    pub fn global_sizes(
        &self,
        spec: &PartitionSpec,
        sizes: &[usize],
    ) -> Result<Vec<usize>, String> {
        self.check_spec(spec, sizes.len())?;
        sizes
            .iter()
            .enumerate()
            .map(|(d, &n)| Ok(n * self.dim_parts(spec, d)?))
            .collect()
    }

    /// The index of device `coords`' shard along dimension `d` of `spec`
    /// (mixed radix over the entry's axes, major first).
    pub fn shard_index(&self, spec: &PartitionSpec, d: usize, coords: &[usize]) -> usize {
        spec.dim_axes(d)
            .iter()
            .fold(0, |acc, a| match (self.axis_pos(a), self.axis_size(a)) {
                (Some(p), Some(s)) => acc * s + coords.get(p).copied().unwrap_or(0),
                _ => acc,
            })
    }

    fn inner(&self) -> String {
        let mut parts: Vec<String> = self
            .axes
            .iter()
            .map(|(n, s)| format!("'{n}': {s}"))
            .collect();
        if !self.axes.is_empty() {
            let types: Vec<String> = self.axis_types.iter().map(|t| t.name().into()).collect();
            parts.push(format!("axis_types={}", py_tuple(&types)));
        }
        parts.join(", ")
    }
}

impl fmt::Display for Mesh {
    /// `Mesh('x': 2, axis_types=(Auto,))`, or `Mesh()`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Mesh({})", self.inner())
    }
}

/// The mesh of a `NamedSharding`: a concrete `Mesh` or, inside a
/// `shard_map`, an `AbstractMesh` with the platform it runs on.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum ShardingMesh {
    /// `Mesh(...)`.
    Concrete(Mesh),
    /// `AbstractMesh(..., device_kind=cpu, num_cores=None, platform=cpu)`,
    /// the trailing fields kept as printed.
    Abstract {
        /// The axes.
        mesh: Mesh,
        /// `device_kind`.
        device_kind: String,
        /// `num_cores`.
        num_cores: String,
        /// `platform`.
        platform: String,
    },
}

impl ShardingMesh {
    /// The axes of the mesh.
    pub fn mesh(&self) -> &Mesh {
        match self {
            ShardingMesh::Concrete(m) => m,
            ShardingMesh::Abstract { mesh, .. } => mesh,
        }
    }
}

impl fmt::Display for ShardingMesh {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ShardingMesh::Concrete(m) => m.fmt(f),
            ShardingMesh::Abstract {
                mesh,
                device_kind,
                num_cores,
                platform,
            } => write!(
                f,
                "AbstractMesh({}, device_kind={device_kind}, num_cores={num_cores}, platform={platform})",
                mesh.inner()
            ),
        }
    }
}

/// One entry of a partition spec: how one array dimension is split.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum SpecEntry {
    /// `None`: not split (replicated along it).
    None,
    /// `'x'`: split over one mesh axis.
    Axis(String),
    /// `('x', 'y')`: split over several mesh axes, major first.
    Axes(Vec<String>),
}

impl SpecEntry {
    /// The mesh axes this entry splits over, major first.
    pub fn axes(&self) -> Vec<&str> {
        match self {
            SpecEntry::None => Vec::new(),
            SpecEntry::Axis(a) => vec![a.as_str()],
            SpecEntry::Axes(v) => v.iter().map(|s| s.as_str()).collect(),
        }
    }
}

/// A partition spec, `P(...)`: one entry per leading array dimension
/// (missing trailing entries are `None`).
#[derive(Clone, Debug, PartialEq, Eq, Hash, Default)]
pub struct PartitionSpec(pub Vec<SpecEntry>);

impl PartitionSpec {
    /// The mesh axes dimension `d` is split over (none past the entries).
    pub fn dim_axes(&self, d: usize) -> Vec<&str> {
        self.0.get(d).map(SpecEntry::axes).unwrap_or_default()
    }

    /// Every mesh axis the spec names, in order.
    pub fn all_axes(&self) -> Vec<&str> {
        self.0.iter().flat_map(SpecEntry::axes).collect()
    }
}

impl fmt::Display for PartitionSpec {
    /// `P()`, `P('x',)`, `P(None, 'x')`, `P(('x', 'y'),)`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let items: Vec<String> = self
            .0
            .iter()
            .map(|e| match e {
                SpecEntry::None => "None".to_string(),
                SpecEntry::Axis(a) => format!("'{a}'"),
                SpecEntry::Axes(v) => {
                    py_tuple(&v.iter().map(|a| format!("'{a}'")).collect::<Vec<_>>())
                }
            })
            .collect();
        write!(f, "P{}", py_tuple(&items))
    }
}

/// `NamedSharding(mesh=..., spec=P(..))`, with `memory_kind=..` when printed.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct NamedSharding {
    /// The mesh.
    pub mesh: ShardingMesh,
    /// How each dimension is split.
    pub spec: PartitionSpec,
    /// `memory_kind` as printed (`device`), if printed.
    pub memory_kind: Option<String>,
}

impl fmt::Display for NamedSharding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "NamedSharding(mesh={}, spec={}", self.mesh, self.spec)?;
        if let Some(m) = &self.memory_kind {
            write!(f, ", memory_kind={m}")?;
        }
        f.write_str(")")
    }
}

/// Python's tuple repr of already printed items: `()`, `(a,)`, `(a, b)`.
pub(crate) fn py_tuple(items: &[String]) -> String {
    match items.len() {
        0 => "()".to_string(),
        1 => format!("({},)", items[0]),
        _ => format!("({})", items.join(", ")),
    }
}

/// Python's `frozenset` repr of names as JAX prints them:
/// `frozenset({'a', 'b'})`, `frozenset({})` when empty.
pub fn frozenset_text(names: &[String]) -> String {
    let items: Vec<String> = names.iter().map(|n| format!("'{n}'")).collect();
    format!("frozenset({{{}}})", items.join(", "))
}
