//! Params text of the SPMD primitives as JAX 0.10 prints them: `shard_map`
//! (`mesh=Mesh('x': 2, axis_types=(Auto,))`, `in_specs=(P('x',), P())`,
//! `newly_manual_axes=frozenset({'x'})`), `sharding_constraint`
//! (`sharding=NamedSharding(..)`), `reshard` (no params), and the mesh
//! collectives `ppermute`, `all_to_all`, `reduce_scatter`, `pvary`,
//! `psum_invariant`; plus the readers of meshes, specs and shardings that
//! `reduce_sum`'s `out_sharding` shares.

use super::codec::{tuple, Bool, Closed, Num};
use super::collective::no_groups;
use super::{Codec, ParamsText, ParseCx, PrintCx, Printed, Src};
use crate::parse::params::{PValue, Params};
use crate::parse::syntax::PResult;
use crate::primitive::{
    frozenset_text, AllToAllParams, AxisType, Mesh, NamedSharding, PartitionSpec, PpermuteParams,
    PsumInvariantParams, PvaryParams, ReduceScatterParams, ReshardParams, ShardMapParams,
    ShardingConstraintParams, ShardingMesh, SpecEntry,
};
use crate::print::PV;

fn text(s: impl Into<String>) -> PV<'static> {
    PV::Text(s.into())
}

/// A quoted name (`'x'`) without its quotes.
fn quoted(p: &Params<'_>, v: &Src) -> PResult<String> {
    let s = p.src(v);
    match &v.v {
        PValue::Str if s.len() >= 2 => Ok(s[1..s.len() - 1].to_string()),
        _ => Err(p.bad(v, "a quoted axis name")),
    }
}

/// A name written quoted (`'x'`) or bare (`x`).
fn name(p: &Params<'_>, v: &Src) -> PResult<String> {
    match &v.v {
        PValue::Word(w) => Ok(w.clone()),
        _ => quoted(p, v),
    }
}

/// `('x',)` or a bare `'x'`: the names.
fn names(p: &Params<'_>, v: &Src) -> PResult<Vec<String>> {
    match &v.v {
        PValue::Tuple(items) => items.iter().map(|a| name(p, a)).collect(),
        _ => Ok(vec![name(p, v)?]),
    }
}

fn names_text(ns: &[String]) -> String {
    tuple(ns.iter().map(|n| format!("'{n}'")).collect())
}

/// The axes and axis types of `Mesh(..)`/`AbstractMesh(..)` arguments;
/// the other keyword arguments are returned as written.
fn mesh_args(
    p: &Params<'_>,
    args: &[(Option<String>, Src)],
) -> PResult<(Mesh, Vec<(String, String)>)> {
    let mut mesh = Mesh::default();
    let mut rest = Vec::new();
    for (k, v) in args {
        match (k.as_deref(), &v.v) {
            (None, PValue::Pair(n, s)) => {
                mesh.axes.push((quoted(p, n)?, p.usize_of(s)?));
            }
            (Some("axis_types"), _) => {
                for t in p.items_of(v)? {
                    let w = match &t.v {
                        PValue::Word(w) => w.rsplit('.').next().unwrap_or(w),
                        _ => return Err(p.bad(t, "an axis type")),
                    };
                    let ty = AxisType::from_name(w).ok_or_else(|| p.bad(t, "an axis type"))?;
                    mesh.axis_types.push(ty);
                }
            }
            (Some(k), _) => rest.push((k.to_string(), p.src(v))),
            (None, _) => return Err(p.bad(v, "`'name': size`")),
        }
    }
    mesh.validate().map_err(|e| p.bad(&args_span(args), &e))?;
    Ok((mesh, rest))
}

fn args_span(args: &[(Option<String>, Src)]) -> Src {
    let start = args.first().map_or(0, |(_, v)| v.start);
    let end = args.last().map_or(0, |(_, v)| v.end);
    Src {
        v: PValue::Str,
        start,
        end,
    }
}

/// `Mesh('x': 2, axis_types=(Auto,))` or `Mesh()`.
pub(crate) fn parse_mesh(p: &Params<'_>, v: &Src) -> PResult<Mesh> {
    let args = p.kwargs_of(v, "Mesh")?;
    let (mesh, rest) = mesh_args(p, args)?;
    if let Some((k, _)) = rest.first() {
        return Err(p.bad(v, &format!("a mesh without `{k}=`")));
    }
    Ok(mesh)
}

/// `Mesh(..)` or `AbstractMesh(.., device_kind=.., num_cores=.., platform=..)`.
fn parse_sharding_mesh(p: &Params<'_>, v: &Src) -> PResult<ShardingMesh> {
    match &v.v {
        PValue::Call(n, args) if n == "AbstractMesh" => {
            let (mesh, rest) = mesh_args(p, args)?;
            let get = |k: &str| {
                rest.iter()
                    .find(|(key, _)| key == k)
                    .map(|(_, v)| v.clone())
                    .ok_or_else(|| p.bad(v, &format!("`{k}=` in the abstract mesh")))
            };
            Ok(ShardingMesh::Abstract {
                mesh,
                device_kind: get("device_kind")?,
                num_cores: get("num_cores")?,
                platform: get("platform")?,
            })
        }
        _ => parse_mesh(p, v).map(ShardingMesh::Concrete),
    }
}

/// `P(None, 'x', ('a', 'b'))`.
pub(crate) fn parse_spec(p: &Params<'_>, v: &Src) -> PResult<PartitionSpec> {
    let args = p.kwargs_of(v, "P")?;
    let mut spec = PartitionSpec::default();
    for (k, e) in args {
        if k.is_some() {
            return Err(p.bad(e, "a partition spec entry"));
        }
        spec.0.push(match &e.v {
            PValue::Word(w) if w == "None" => SpecEntry::None,
            PValue::Str => SpecEntry::Axis(quoted(p, e)?),
            PValue::Tuple(items) => {
                SpecEntry::Axes(items.iter().map(|a| quoted(p, a)).collect::<PResult<_>>()?)
            }
            _ => return Err(p.bad(e, "`None`, an axis name or a tuple of names")),
        });
    }
    let axes = spec.all_axes();
    for (i, a) in axes.iter().enumerate() {
        if axes[..i].contains(a) {
            return Err(p.bad(v, &format!("a spec naming axis '{a}' once")));
        }
    }
    Ok(spec)
}

/// `NamedSharding(mesh=.., spec=.., memory_kind=..)`.
pub(crate) fn parse_named_sharding(p: &Params<'_>, v: &Src) -> PResult<NamedSharding> {
    let args = p.kwargs_of(v, "NamedSharding")?;
    let mesh = parse_sharding_mesh(p, p.kwarg(args, "mesh", v)?)?;
    let spec = parse_spec(p, p.kwarg(args, "spec", v)?)?;
    let memory_kind = args
        .iter()
        .find(|(k, _)| k.as_deref() == Some("memory_kind"))
        .map(|(_, m)| p.src(m));
    Ok(NamedSharding {
        mesh,
        spec,
        memory_kind,
    })
}

/// `frozenset({'a', 'b'})`.
fn parse_frozenset(p: &Params<'_>, v: &Src) -> PResult<Vec<String>> {
    let args = p.kwargs_of(v, "frozenset")?;
    match args {
        [(None, s)] => match &s.v {
            PValue::Set(items) => items.iter().map(|a| quoted(p, a)).collect(),
            _ => Err(p.bad(s, "a set of names")),
        },
        [] => Ok(Vec::new()),
        _ => Err(p.bad(v, "`frozenset({..})`")),
    }
}

fn specs_text(specs: &[PartitionSpec]) -> String {
    tuple(specs.iter().map(|s| s.to_string()).collect())
}

fn parse_specs(p: &Params<'_>, key: &str) -> PResult<Vec<PartitionSpec>> {
    p.items_of(p.req(key)?)?
        .iter()
        .map(|s| parse_spec(p, s))
        .collect()
}

impl ParamsText for ShardMapParams {
    fn print<'a>(&'a self, _: &PrintCx<'_>, out: &mut Printed<'a>) {
        out.push(("check_vma", Bool::print(&self.check_vma)));
        out.push(("in_specs", text(specs_text(&self.in_specs))));
        out.push(("jaxpr", Closed::print(&self.jaxpr)));
        out.push(("mesh", text(self.mesh.to_string())));
        out.push((
            "newly_manual_axes",
            text(frozenset_text(&self.newly_manual_axes)),
        ));
        out.push(("out_specs", text(specs_text(&self.out_specs))));
    }
    fn parse(cx: &mut ParseCx<'_, '_, '_>) -> PResult<Self> {
        let p = cx.p;
        let mesh = parse_mesh(p, p.req("mesh")?)?;
        let in_specs = parse_specs(p, "in_specs")?;
        let out_specs = parse_specs(p, "out_specs")?;
        let newly_manual_axes = match p.get("newly_manual_axes") {
            Some(v) => parse_frozenset(p, v)?,
            None => mesh.axes.iter().map(|(n, _)| n.clone()).collect(),
        };
        Ok(ShardMapParams {
            jaxpr: cx.field::<Closed, _>("jaxpr", None)?,
            mesh,
            in_specs,
            out_specs,
            newly_manual_axes,
            check_vma: cx.field::<Bool, _>("check_vma", Some(true))?,
        })
    }
}

impl ParamsText for ShardingConstraintParams {
    fn print<'a>(&'a self, _: &PrintCx<'_>, out: &mut Printed<'a>) {
        out.push(("context_mesh", text(self.context_mesh.to_string())));
        out.push(("layout", text(self.layout.clone())));
        out.push(("sharding", text(self.sharding.to_string())));
        let dims: Vec<String> = self
            .unconstrained_dims
            .iter()
            .map(|d| d.to_string())
            .collect();
        out.push((
            "unconstrained_dims",
            text(format!("frozenset({{{}}})", dims.join(", "))),
        ));
    }
    fn parse(cx: &mut ParseCx<'_, '_, '_>) -> PResult<Self> {
        let p = cx.p;
        let context_mesh = match p.get("context_mesh") {
            Some(v) => parse_mesh(p, v)?,
            None => Mesh::default(),
        };
        let unconstrained_dims = match p.get("unconstrained_dims") {
            None => Vec::new(),
            Some(v) => match p.kwargs_of(v, "frozenset")? {
                [(None, s)] => match &s.v {
                    PValue::Set(items) => items
                        .iter()
                        .map(|d| p.usize_of(d))
                        .collect::<PResult<_>>()?,
                    _ => return Err(p.bad(s, "a set of dimensions")),
                },
                [] => Vec::new(),
                _ => return Err(p.bad(v, "`frozenset({..})`")),
            },
        };
        Ok(ShardingConstraintParams {
            context_mesh,
            layout: p.get("layout").map_or("None".into(), |v| p.src(v)),
            sharding: parse_named_sharding(p, p.req("sharding")?)?,
            unconstrained_dims,
        })
    }
}

/// JAX prints `reshard` without params.
impl ParamsText for ReshardParams {
    fn print<'a>(&'a self, _: &PrintCx<'_>, _: &mut Printed<'a>) {}
    fn parse(_: &mut ParseCx<'_, '_, '_>) -> PResult<Self> {
        Ok(ReshardParams)
    }
}

impl ParamsText for PvaryParams {
    fn print<'a>(&'a self, _: &PrintCx<'_>, out: &mut Printed<'a>) {
        out.push(("axes", text(names_text(&self.axes))));
    }
    fn parse(cx: &mut ParseCx<'_, '_, '_>) -> PResult<Self> {
        Ok(PvaryParams {
            axes: names(cx.p, cx.p.req("axes")?)?,
        })
    }
}

impl ParamsText for PsumInvariantParams {
    fn print<'a>(&'a self, _: &PrintCx<'_>, out: &mut Printed<'a>) {
        out.push(("axes", text(names_text(&self.axes))));
    }
    fn parse(cx: &mut ParseCx<'_, '_, '_>) -> PResult<Self> {
        Ok(PsumInvariantParams {
            axes: names(cx.p, cx.p.req("axes")?)?,
        })
    }
}

impl ParamsText for PpermuteParams {
    fn print<'a>(&'a self, _: &PrintCx<'_>, out: &mut Printed<'a>) {
        out.push(("axis_name", text(names_text(&self.axis_name))));
        let pairs = self
            .perm
            .iter()
            .map(|(s, d)| tuple(vec![s.to_string(), d.to_string()]))
            .collect();
        out.push(("perm", text(tuple(pairs))));
    }
    fn parse(cx: &mut ParseCx<'_, '_, '_>) -> PResult<Self> {
        let p = cx.p;
        let mut perm = Vec::new();
        for pair in p.items_of(p.req("perm")?)? {
            match p.items_of(pair)? {
                [s, d] => perm.push((p.usize_of(s)?, p.usize_of(d)?)),
                _ => return Err(p.bad(pair, "a `(source, destination)` pair")),
            }
        }
        for (i, (s, d)) in perm.iter().enumerate() {
            if perm[..i].iter().any(|(s2, d2)| s2 == s || d2 == d) {
                return Err(p.bad(
                    p.req("perm")?,
                    &format!("a permutation (index {s} or {d} repeats)"),
                ));
            }
        }
        Ok(PpermuteParams {
            axis_name: names(p, p.req("axis_name")?)?,
            perm,
        })
    }
}

/// `axis_size` is not printed: the types show it (`split_axis` shrinks by it).
impl ParamsText for AllToAllParams {
    fn print<'a>(&'a self, _: &PrintCx<'_>, out: &mut Printed<'a>) {
        out.push(("axis_index_groups", text("None")));
        let n = if self.name_tuple {
            names_text(&self.axis_name)
        } else {
            self.axis_name.join(", ")
        };
        out.push(("axis_name", text(n)));
        out.push(("concat_axis", Num::print(&self.concat_axis)));
        out.push(("split_axis", Num::print(&self.split_axis)));
        out.push(("tiled", Bool::print(&self.tiled)));
    }
    fn parse(cx: &mut ParseCx<'_, '_, '_>) -> PResult<Self> {
        no_groups(cx)?;
        let p = cx.p;
        let v = p.req("axis_name")?;
        let split_axis: usize = cx.field::<Num, _>("split_axis", None)?;
        let concat_axis: usize = cx.field::<Num, _>("concat_axis", None)?;
        let in_split = cx
            .in_avals
            .first()
            .and_then(|a| a.as_ref())
            .and_then(|a| a.shape().get(split_axis).and_then(|d| d.as_const()));
        let out_split = cx
            .out_avals
            .first()
            .and_then(|a| a.shape().get(split_axis).and_then(|d| d.as_const()));
        let axis_size = match (in_split, out_split) {
            (Some(i), Some(o)) if o > 0 && split_axis != concat_axis && i % o == 0 => Some(i / o),
            _ => None,
        };
        Ok(AllToAllParams {
            axis_name: names(p, v)?,
            name_tuple: matches!(v.v, PValue::Tuple(_)),
            split_axis,
            concat_axis,
            tiled: cx.field::<Bool, _>("tiled", Some(false))?,
            axis_size,
        })
    }
}

impl ParamsText for ReduceScatterParams {
    fn print<'a>(&'a self, _: &PrintCx<'_>, out: &mut Printed<'a>) {
        out.push(("axis_index_groups", text("None")));
        out.push(("axis_name", text(names_text(&self.axis_name))));
        out.push(("axis_size", Num::print(&self.axis_size)));
        out.push(("scatter_dimension", Num::print(&self.scatter_dimension)));
        out.push(("tiled", Bool::print(&self.tiled)));
    }
    fn parse(cx: &mut ParseCx<'_, '_, '_>) -> PResult<Self> {
        no_groups(cx)?;
        let p = cx.p;
        Ok(ReduceScatterParams {
            axis_name: names(p, p.req("axis_name")?)?,
            axis_size: cx.field::<Num, _>("axis_size", None)?,
            scatter_dimension: cx.field::<Num, _>("scatter_dimension", None)?,
            tiled: cx.field::<Bool, _>("tiled", Some(false))?,
        })
    }
}
