//! The lowering table's coverage: every `Primitive` has a row (an
//! exhaustive match, so a new variant breaks this build until it gets
//! one), either `Lowered` — and then some case below that contains it runs
//! on `cuda-sim` and matches the interpreter — or `NotYet` with a reason.
//! A `NotYet` row with a sample must still fail to compile with
//! `IrError::Unsupported` naming it, so lowering one more primitive fails
//! here until its row moves (the not-yet list shrinks visibly).
//! Control flow and calls are checked here too, differentially.

mod lowering_util;
use jaxon_ir::primitive::{
    Callback, Collective, Control, Elementwise, Indexing, Linalg, Marker, Pallas, Random,
    Reduction, State, Structural, Window,
};
use jaxon_ir::{IrError, Jaxpr, Primitive};
use lowering_util::{check, parse, run_lowered, Dist, Tol};
use std::collections::BTreeSet;

#[derive(Clone, Copy, Debug, PartialEq)]
enum Row {
    Lowered,
    // No row is not-yet now; the variant stays for the next primitive.
    #[allow(dead_code)]
    NotYet(&'static str),
}

const N_VARIANTS: usize = 97;

fn row(p: &Primitive) -> (usize, Row) {
    use Row::Lowered;
    match p {
        Primitive::Elementwise(Elementwise::Unary(_)) => (0, Lowered),
        Primitive::Elementwise(Elementwise::Binary(_)) => (1, Lowered),
        Primitive::Elementwise(Elementwise::IntegerPow(_)) => (2, Lowered),
        Primitive::Elementwise(Elementwise::Round(_)) => (3, Lowered),
        Primitive::Elementwise(Elementwise::ReducePrecision(_)) => (4, Lowered),
        Primitive::Elementwise(Elementwise::ConvertElementType(_)) => (5, Lowered),
        Primitive::Elementwise(Elementwise::BitcastConvertType(_)) => (6, Lowered),
        Primitive::Elementwise(Elementwise::SelectN) => (7, Lowered),
        Primitive::Elementwise(Elementwise::Clamp) => (8, Lowered),
        Primitive::Elementwise(Elementwise::RegularizedIncompleteBeta) => (66, Lowered),
        Primitive::Structural(Structural::BroadcastInDim(_)) => (9, Lowered),
        Primitive::Structural(Structural::Reshape(_)) => (10, Lowered),
        Primitive::Structural(Structural::Transpose(_)) => (11, Lowered),
        Primitive::Structural(Structural::Squeeze(_)) => (12, Lowered),
        Primitive::Structural(Structural::Rev(_)) => (13, Lowered),
        Primitive::Structural(Structural::Pad(_)) => (14, Lowered),
        Primitive::Structural(Structural::Concatenate(_)) => (15, Lowered),
        Primitive::Indexing(Indexing::Slice(_)) => (16, Lowered),
        Primitive::Indexing(Indexing::DynamicSlice(_)) => (17, Lowered),
        Primitive::Indexing(Indexing::DynamicUpdateSlice) => (18, Lowered),
        Primitive::Indexing(Indexing::Gather(_)) => (19, Lowered),
        Primitive::Indexing(Indexing::Scatter(_)) => (20, Lowered),
        Primitive::Structural(Structural::Iota(_)) => (21, Lowered),
        Primitive::Structural(Structural::Split(_)) => (22, Lowered),
        Primitive::Structural(Structural::Tile(_)) => (23, Lowered),
        Primitive::Structural(Structural::Stack(_)) => (24, Lowered),
        Primitive::Reduction(Reduction::Reduce(_)) => (25, Lowered),
        Primitive::Reduction(Reduction::ArgReduce(_)) => (26, Lowered),
        Primitive::Reduction(Reduction::Cumulative(_)) => (27, Lowered),
        Primitive::Linalg(Linalg::DotGeneral(_)) => (28, Lowered),
        Primitive::Linalg(Linalg::ConvGeneralDilated(_)) => (29, Lowered),
        Primitive::Linalg(Linalg::Cholesky) => (59, Lowered),
        Primitive::Linalg(Linalg::TriangularSolve(_)) => (60, Lowered),
        Primitive::Linalg(Linalg::Lu) => (61, Lowered),
        Primitive::Linalg(Linalg::Qr(_)) => (62, Lowered),
        Primitive::Linalg(Linalg::Eigh(_)) => (63, Lowered),
        Primitive::Linalg(Linalg::Svd(_)) => (64, Lowered),
        Primitive::Linalg(Linalg::TridiagonalSolve(_)) => (65, Lowered),
        Primitive::Reduction(Reduction::Sort(_)) => (30, Lowered),
        Primitive::Reduction(Reduction::TopK(_)) => (31, Lowered),
        Primitive::Structural(Structural::Empty2(_)) => (32, Lowered),
        Primitive::Control(Control::Cond(_)) => (33, Lowered),
        Primitive::Control(Control::While(_)) => (34, Lowered),
        Primitive::Control(Control::Scan(_)) => (35, Lowered),
        Primitive::Control(Control::ForLoop(_)) => (36, Lowered),
        Primitive::Control(Control::Jit(_)) => (37, Lowered),
        Primitive::Control(Control::CustomJvpCall(_)) => (38, Lowered),
        Primitive::Control(Control::CustomVjpCall(_)) => (39, Lowered),
        Primitive::Control(Control::Remat(_)) => (40, Lowered),
        Primitive::Control(Control::CustomLinearSolve(_)) => (58, Lowered),
        Primitive::State(State::Get(_)) => (41, Lowered),
        Primitive::State(State::Swap(_)) => (42, Lowered),
        Primitive::State(State::AddUpdate(_)) => (43, Lowered),
        Primitive::Pallas(Pallas::ProgramId(_)) => (44, Lowered),
        Primitive::Pallas(Pallas::NumPrograms(_)) => (45, Lowered),
        Primitive::Pallas(Pallas::Load(_)) => (46, Lowered),
        Primitive::Pallas(Pallas::Store(_)) => (47, Lowered),
        Primitive::Pallas(Pallas::AtomicRmw(_)) => (48, Lowered),
        Primitive::Pallas(Pallas::AtomicCas(_)) => (49, Lowered),
        Primitive::Pallas(Pallas::PallasCall(_)) => (50, Lowered),
        Primitive::Collective(Collective::AllReduce(_)) => (51, Lowered),
        Primitive::Collective(Collective::AllGather(_)) => (52, Lowered),
        Primitive::Collective(Collective::AxisIndex(_)) => (53, Lowered),
        // Removed by `simplify` for the cuda platform.
        Primitive::Marker(Marker::Name(_)) => (54, Lowered),
        Primitive::Marker(Marker::DevicePut(_)) => (55, Lowered),
        Primitive::Marker(Marker::OptimizationBarrier(_)) => (56, Lowered),
        Primitive::Marker(Marker::PlatformIndex(_)) => (57, Lowered),
        Primitive::Elementwise(Elementwise::Complex) => (67, Lowered),
        Primitive::Elementwise(Elementwise::Real) => (68, Lowered),
        Primitive::Elementwise(Elementwise::Imag) => (69, Lowered),
        Primitive::Elementwise(Elementwise::Conj(_)) => (70, Lowered),
        Primitive::Linalg(Linalg::Fft(_)) => (71, Lowered),
        Primitive::Window(Window::ReduceWindow(_)) => (72, Lowered),
        Primitive::Window(Window::SelectAndScatterAdd(_)) => (73, Lowered),
        Primitive::Window(Window::SelectAndGatherAdd(_)) => (74, Lowered),
        Primitive::Random(Random::Seed(_)) => (75, Lowered),
        Primitive::Random(Random::Wrap(_)) => (76, Lowered),
        Primitive::Random(Random::Unwrap(_)) => (77, Lowered),
        Primitive::Random(Random::Bits(_)) => (78, Lowered),
        Primitive::Random(Random::Split(_)) => (79, Lowered),
        Primitive::Random(Random::FoldIn(_)) => (80, Lowered),
        Primitive::Random(Random::Threefry2x32(_)) => (81, Lowered),
        Primitive::Random(Random::Gamma(_)) => (82, Lowered),
        Primitive::Random(Random::RngBitGenerator(_)) => (95, Lowered),
        Primitive::Linalg(Linalg::Schur(_)) => (96, Lowered),
        Primitive::Window(Window::Generic(_)) => (83, Lowered),
        // On a mesh of one device here (the tests' backend has one);
        // meshes of 2 and 4 in tests/lowering_spmd.rs.
        Primitive::Control(Control::ShardMap(_)) => (84, Lowered),
        Primitive::Collective(Collective::Ppermute(_)) => (85, Lowered),
        Primitive::Collective(Collective::AllToAll(_)) => (86, Lowered),
        Primitive::Collective(Collective::ReduceScatter(_)) => (87, Lowered),
        Primitive::Collective(Collective::Pvary(_)) => (88, Lowered),
        Primitive::Collective(Collective::PsumInvariant(_)) => (89, Lowered),
        Primitive::Marker(Marker::Reshard(_)) => (90, Lowered),
        Primitive::Marker(Marker::ShardingConstraint(_)) => (91, Lowered),
        Primitive::Callback(Callback::DebugPrint(_)) => (92, Lowered),
        Primitive::Callback(Callback::DebugCallback(_)) => (93, Lowered),
        Primitive::Callback(Callback::PureCallback(_)) => (94, Lowered),
    }
}

/// Tags of every primitive in `j` and the jaxprs nested in it.
fn tags(j: &Jaxpr, out: &mut BTreeSet<usize>) {
    for e in &j.eqns {
        out.insert(row(&e.primitive).0);
        for pj in e.primitive.param_jaxprs() {
            tags(pj.jaxpr.jaxpr(), out);
        }
    }
}

/// Control-flow and call cases (the other families are exercised by
/// `tests/lowering.rs`, whose texts are listed in `first_order_cases`).
fn control_cases() -> Vec<(&'static str, Tol)> {
    vec![
        // `shard_map` over a mesh of one device with every collective.
        (SPMD, Tol::Exact),
        // A `pallas_call` whose programs revisit their output blocks
        // (atomics in grid order) over a partial input block.
        (
            r"let coverage_kernel = { lambda ; a:Ref<default>{f32[2]} b:Ref<default>{f32[2]} c:Ref<default>{i32[2]}
    d:Ref<default>{f32[2]}. let
    e:i32[] = program_id[axis=0] 
    f:i32[] = num_programs[axis=0] 
    g:i32[2] = iota[dimension=0 dtype=int32 shape=(2,) sharding=None] 
    h:bool[2] = lt g f
    i:f32[2] = broadcast_in_dim 1.5:f32[]
    j:f32[2] <- a[:] mask=h other=i
    k:i32[] = add e f
    l:f32[] = convert_element_type[new_dtype=float32 weak_type=False] k
    m:f32[2] = add j l
    _:f32[2] = atomic_rmw[
      args_tree=PyTreeDef((*, (CustomNode(NDIndexer[(PyTreeDef((CustomNode(Slice[(0, 2, 1)], [None, None]),)), (2,), ())], []),), *, None))
      atomic_type=AtomicOpType.ADD
    ] b m
    n:i32[2] = broadcast_in_dim 0:i32[]
    o:i32[2] = broadcast_in_dim 1:i32[]
    p:i32[2] = atomic_cas c n o
    q:f32[2] = convert_element_type[new_dtype=float32 weak_type=False] p
    r:f32[2] = add q j
    _:f32[2], d[:] <- d[:], r mask=h
  in () } in
{ lambda ; s:f32[5]. let
    t:f32[2] u:i32[2] v:f32[5] = pallas_call[
      compiler_params=None
      cost_estimate=None
      debug=False
      grid_mapping=GridMapping(grid=(3,), block_mappings=(BlockMapping(block_shape=(Blocked(block_size=2),), array_aval=ShapedArray(float32[5]), index_map={ lambda ; w:i32[]. let
          
        in (w,) }), BlockMapping(block_shape=(Blocked(block_size=2),), array_aval=ShapedArray(float32[2]), index_map={ lambda ; x:i32[]. let
          
        in (0:i32[],) }), BlockMapping(block_shape=(Blocked(block_size=2),), array_aval=ShapedArray(int32[2]), index_map={ lambda ; y:i32[]. let
          
        in (0:i32[],) }), BlockMapping(block_shape=(Blocked(block_size=2),), array_aval=ShapedArray(float32[5]), index_map={ lambda ; z:i32[]. let
          
        in (z,) })))
      input_output_aliases=()
      interpret=False
      jaxpr=coverage_kernel
      mesh=None
      metadata=None
      name=coverage_kernel
      out_avals=(ShapedArray(float32[2]), ShapedArray(int32[2]), ShapedArray(float32[5]))
    ] s
  in (t, u, v) }",
            Tol::Exact,
        ),
        (
            "{ lambda ; a:f32[3] b:f32[3]. let
    c:c64[3] = complex a b
    d:c64[3] = fft[fft_lengths=(3,) fft_type=0] c
    e:c64[3] = conj[input_dtype=complex64] d
    f:f32[3] = real e
    g:f32[3] = imag e
  in (f, g) }",
            Tol::Rel(1e-6),
        ),
        (
            "{ lambda ; a:i32[] b:u32[] x:u32[] y:u32[] c:u32[4] d:u32[4]. let
    k:key<fry>[] = random_seed[impl=fry] a
    e:key<fry>[] = random_fold_in k b
    f:key<fry>[2] = random_split[shape=(2,)] e
    g:u32[2,2] = random_unwrap f
    h:key<fry>[2] = random_wrap[impl=fry] g
    i:u32[2,3] = random_bits[bit_width=32 shape=(3,)] h
    m:u32[4] n:u32[4] = threefry2x32 x y c d
    z:f32[4] = convert_element_type[new_dtype=float32 weak_type=False] c
    w:f32[4] = add z 0.5:f32[]
    j:f32[4] = random_gamma[log_space=False] k w
  in (i, m, n, j) }",
            Tol::Exact,
        ),
        (
            "{ lambda ; a:f32[4,6] s:f32[2,3] c:f32[]. let
    b:f32[2,3] = reduce_window_max[base_dilation=(1, 1) padding=((0, 0), (0, 0)) window_dilation=(1, 1) window_dimensions=(2, 2) window_strides=(2, 2)] a
    d:f32[4,6] = select_and_scatter_add[padding=((0, 0), (0, 0)) select_prim=ge window_dimensions=(2, 2) window_strides=(2, 2)] s a
    e:f32[2,3] = select_and_gather_add[base_dilation=(1, 1) padding=((0, 0), (0, 0)) select_prim=ge window_dilation=(1, 1) window_dimensions=(2, 2) window_strides=(2, 2)] d a
    f:f32[3,5] = reduce_window[
      base_dilation=(1, 1)
      consts=()
      jaxpr={ lambda ; g:f32[] h:f32[]. let i:f32[] = add g h in (i,) }
      padding=((0, 0), (0, 0))
      window_dilation=(1, 1)
      window_dimensions=(2, 2)
      window_strides=(1, 1)
    ] a c
  in (b, d, e, f) }",
            Tol::Exact,
        ),
        (
            "{ lambda ; a:f32[5] b:f32[5] x:f32[5]. let
    p:f32[5] = abs a
    q:f32[5] = add p 0.25:f32[]
    r:f32[5] = abs b
    s:f32[5] = add r 0.5:f32[]
    t:f32[5] = logistic x
    c:f32[5] = regularized_incomplete_beta q s t
  in (c,) }",
            Tol::Ulp(2),
        ),
        (
            "{ lambda ; a:f32[4] b:f32[4]. let
    c:f32[4] = name[name=hidden] a
    d:f32[4] e:f32[4] = device_put[
      copy_semantics=(ArrayCopySemantics.REUSE_INPUT, ArrayCopySemantics.REUSE_INPUT)
      devices=(None, None)
      srcs=(None, None)
    ] c b
    f:f32[4] g:f32[4] = optimization_barrier d e
    h:i32[] = platform_index[platforms=(('mosaic',), None)] 
    i:f32[4] = cond[
      branches=(
        { lambda ; j:f32[4] k:f32[4]. let l:f32[4] = mul j k in (l,) }
        { lambda ; m:f32[4] n:f32[4]. let o:f32[4] = sub m n in (o,) }
      )
      branches_platforms=(('mosaic',), None)
    ] h f g
    r:f32[4] = mul i i
    p:f32[4] = add r 1.0:f32[]
    q:f32[4] = custom_linear_solve[
      const_lengths=_LinearSolveTuple(matvec=1, vecmat=0, solve=1, transpose_solve=0)
      jaxprs=_LinearSolveTuple(matvec={ lambda ; a:f32[4] b:f32[4]. let c:f32[4] = mul a b in (c,) }, vecmat=None, solve={ lambda ; a:f32[4] b:f32[4]. let c:f32[4] = div b a in (c,) }, transpose_solve=None)
    ] p p a
  in (i, q) }",
            Tol::Rel(1e-6),
        ),
        (
            "{ lambda ; p:i32[] a:f32[5] b:f32[]. let
    c:f32[5] = cond[
      branches=(
        { lambda ; d:f32[5] e:f32[]. let f:f32[5] = mul d e in (f,) }
        { lambda ; g:f32[5] h:f32[]. let i:f32[5] = sub g h in (i,) }
        { lambda ; j:f32[5] k:f32[]. let  in (j,) }
      )
    ] p a b
    l:f32[5] = cond[
      branches=(
        { lambda ; m:f32[5] n:f32[]. let o:f32[5] = neg m in (o,) }
        { lambda ; q:f32[5] r:f32[]. let  in (q,) }
      )
    ] 1:i32[] c b
  in (c, l) }",
            Tol::Exact,
        ),
        (
            "{ lambda ; k:f32[] a:f32[4]. let
    b:i32[] c:f32[4] = while[
      body_jaxpr={ lambda ; s:f32[] d:i32[] e:f32[4]. let
          f:i32[] = rem d 3:i32[]
          g:f32[4] = cond[
            branches=(
              { lambda ; h:f32[] i:f32[4]. let j:f32[4] = mul i h in (j,) }
              { lambda ; l:f32[] m:f32[4]. let n:f32[4] = sub m l in (n,) }
              { lambda ; o:f32[] p:f32[4]. let q:f32[4] = neg p in (q,) }
            )
          ] f s e
          r:i32[] = add d 1:i32[]
        in (r, g) }
      body_nconsts=1
      cond_jaxpr={ lambda ; t:i32[] u:f32[4]. let v:bool[] = lt t 7:i32[] in (v,) }
      cond_nconsts=0
    ] k 0:i32[] a
  in (b, c) }",
            Tol::Rel(1e-6),
        ),
        (
            "{ lambda ; a:f32[3] xs:f32[37,3] w:f32[3]. let
    b:f32[3] c:f32[3] ys:f32[37,3] = scan[
      jaxpr={ lambda ; u:f32[3] c:f32[3] d:f32[3] x:f32[3]. let
          e:f32[3] = mul c u
          f:f32[3] = add e x
          g:f32[] = reduce_sum[axes=(0,) out_sharding=None] f
        in (d, f, f) }
      length=37
      num_carry=2
      num_consts=1
      reverse=True
      unroll=1
    ] w a a xs
  in (b, c, ys) }",
            Tol::Rel(1e-5),
        ),
        (
            "{ lambda ; a:f32[3] xs:f32[0,3]. let
    b:f32[3] ys:f32[0,3] = scan[
      jaxpr={ lambda ; c:f32[3] x:f32[3]. let d:f32[3] = add c x in (d, d) }
      length=0
      num_carry=1
      num_consts=0
      reverse=False
      unroll=1
    ] a xs
  in (b, ys) }",
            Tol::Exact,
        ),
        (
            "{ lambda ; a:f32[4]. let
    b:f32[4] = custom_vjp_call[
      name=clip_gradient
      bwd=_cg_bwd
      call_jaxpr={ lambda ; c:f32[4]. let  in (c,) }
      fwd=_cg_fwd
      symbolic_zeros=False
    ] a
    d:f32[4] = mul b 3.0:f32[]
    e:f32[] = reduce_sum[axes=(0,) out_sharding=None] d
  in (e,) }",
            Tol::Rel(1e-6),
        ),
        (
            "{ lambda ; a:f32[2,3]. let
    b:f32[2,3] = custom_jvp_call[
      name=softplus_cj
      call_jaxpr={ lambda ; c:f32[2,3]. let
          d:f32[2,3] = abs c
          e:f32[2,3] = max c 0.0:f32[]
          f:f32[2,3] = add d e
        in (f,) }
      jvp=<lambda>
      symbolic_zeros=False
    ] a
    g:f32[2,3] = remat2[
      differentiated=False
      jaxpr={ lambda ; h:f32[2,3]. let i:f32[2,3] = mul h h in (i,) }
      policy=None
      prevent_cse=True
    ] b
    j:f32[2,3] = jit[
      name=inner
      jaxpr={ lambda ; k:f32[2,3]. let l:f32[2,3] = sub k 1.0:f32[] in (l,) }
    ] g
  in (j,) }",
            Tol::Exact,
        ),
        (
            "{ lambda ; a:f32[] b:f32[5] n:i32[]. let
    r:f32[5] = reshard b
    s:f32[5] = sharding_constraint[context_mesh=Mesh() layout=None sharding=NamedSharding(mesh=Mesh('x': 2, axis_types=(Auto,)), spec=P(), memory_kind=device) unconstrained_dims=frozenset({})] r
    c:f32[5] = for_loop[
      apply_reverse_transform=False
      body_jaxpr={ lambda ; d:f32[] e:i32[] f:f32[5]. let
          g:f32[] = convert_element_type[new_dtype=float32 weak_type=False] e
          h:f32[] = mul g d
          i:f32[5] = broadcast_in_dim[broadcast_dimensions=() shape=(5,) sharding=None] h
          j:f32[5] = add f i
        in (j,) }
      body_nconsts=1
      nimplicit=0
      preserve_dimensions=False
    ] a 1:i32[] 8:i32[] 2:i32[] 0:i32[] s
    k:f32[5] = for_loop[
      apply_reverse_transform=True
      body_jaxpr={ lambda ; d:f32[] e:i32[] f:f32[5]. let
          g:f32[] = convert_element_type[new_dtype=float32 weak_type=False] e
          h:f32[] = mul g d
          j:f32[5] = sub f h
        in (j,) }
      body_nconsts=1
      nimplicit=0
      preserve_dimensions=False
    ] a n -3:i32[] -2:i32[] 0:i32[] c
  in (c, k) }",
            Tol::Rel(1e-6),
        ),
        (
            "{ lambda ; a:u32[4] k:u64[2]. let
    b:u32[4] c:u32[2,3] = rng_bit_generator[
      algorithm=RNG_PHILOX
      dtype=uint32
      out_sharding=None
      shape=(2, 3)
    ] a
    d:u64[2] e:u8[5] = rng_bit_generator[
      algorithm=RNG_THREE_FRY
      dtype=uint8
      out_sharding=None
      shape=(5,)
    ] k
  in (b, c, d, e) }",
            Tol::Exact,
        ),
        (
            "{ lambda ; a:f32[3,3] b:f32[3,2] t:f32[3]. let
    g:f32[3,3] = dot_general[dimension_numbers=(([1], [1]), ([], [])) preferred_element_type=float32] a a
    s:f32[3,3] = add g 3.0:f32[]
    c:f32[3,3] = cholesky s
    d:f32[3,2] = triangular_solve[conjugate_a=False left_side=True lower=True transpose_a=False unit_diagonal=False] c b
    e:f32[3,3] f:i32[3] h:i32[3] = lu a
    q:f32[3,3] r:f32[3,3] = qr[full_matrices=False pivoting=False use_magma=None] a
    v:f32[3,3] w:f32[3] = eigh[algorithm=None lower=True sort_eigenvalues=True subset_by_index=None] s
    u:f32[3] = add t 4.0:f32[]
    x:f32[3,2] = tridiagonal_solve[perturb_singular=False] t u t b
    y:f32[3] z:f32[3,3] ba:f32[3,3] = svd[algorithm=None compute_uv=True full_matrices=True subset_by_index=None] a
    bb:f32[3,3] bc:f32[3,3] = schur[compute_schur_vectors=True select_callable=None sort_eig_vals=False] a
  in (c, d, e, f, h, q, r, v, w, x, y, z, ba, bb, bc) }",
            Tol::Rel(1e-6),
        ),
    ]
}

/// One small text per first-order lowered primitive (values are checked in
/// `tests/lowering.rs`; here they must compile and agree once more).
const FIRST_ORDER: &str = "{ lambda ; a:f32[3,4] b:i32[] c:f32[2,2] d:bool[3,4]. let
    e:f32[3,4] = exp a
    f:f32[3,4] = add e a
    g:f32[3,4] = integer_pow[y=2] f
    h:f32[3,4] = round[rounding_method=1] g
    i:i32[3,4] = convert_element_type[new_dtype=int32 weak_type=False] h
    j:f32[3,4] = bitcast_convert_type[new_dtype=float32] i
    k:f32[3,4] = select_n d j a
    l:f32[3,4] = clamp -1.0:f32[] k 1.0:f32[]
    m:f32[2,3,4] = broadcast_in_dim[broadcast_dimensions=(1, 2) shape=(2, 3, 4) sharding=None] l
    n:f32[12] = reshape[dimensions=None new_sizes=(12,) sharding=None] a
    o:f32[4,3] = transpose[permutation=(1, 0)] a
    p:f32[1,4,3] = broadcast_in_dim[broadcast_dimensions=(1, 2) shape=(1, 4, 3) sharding=None] o
    q:f32[4,3] = squeeze[dimensions=(0,)] p
    r:f32[4,3] = rev[dimensions=(1,)] q
    s:f32[6,3] = pad[padding_config=((1, 1, 0), (0, 0, 0))] r 0.5:f32[]
    t:f32[10,3] = concatenate[dimension=0] s r
    u:f32[2,2] = slice[limit_indices=(3, 3) start_indices=(1, 1) strides=None] a
    v:f32[2,2] = dynamic_slice[slice_sizes=(2, 2)] a b b
    w:f32[3,4] = dynamic_update_slice a c b b
    x:i32[3,4] = iota[dimension=1 dtype=int32 shape=(3, 4) sharding=None]
    y:f32[3,2] z:f32[3,2] = split[axis=1 sizes=(2, 2)] a
    ba:f32[6,4] = tile[reps=(2, 1)] a
    bb:f32[3,2,4] = stack[axis=1] a e
    bc:f32[] = empty2[dtype=float32 memory_space=None]
    bd:f32[3] = reduce_max[axes=(1,)] a
    be:i32[3] = argmax[axes=(1,) index_dtype=int32] a
    bf:f32[3,3] = dot_general[dimension_numbers=(([1], [1]), ([], [])) preferred_element_type=float32] a a
    bg:f32[3,4] = reduce_precision[exponent_bits=5 mantissa_bits=10] a
    bh:f32[3,4] = cumsum[axis=1 reverse=True] a
    bi:i32[2,1] = broadcast_in_dim[broadcast_dimensions=() shape=(2, 1) sharding=None] b
    bj:f32[2,4] = gather[
      dimension_numbers=GatherDimensionNumbers(offset_dims=(1,), collapsed_slice_dims=(0,), start_index_map=(0,), operand_batching_dims=(), start_indices_batching_dims=())
      fill_value=None
      indices_are_sorted=False
      mode=GatherScatterMode.FILL_OR_DROP
      slice_sizes=(1, 4)
      unique_indices=False
    ] a bi
    bk:f32[3,4] = scatter-add[
      dimension_numbers=ScatterDimensionNumbers(update_window_dims=(1,), inserted_window_dims=(0,), scatter_dims_to_operand_dims=(0,), operand_batching_dims=(), scatter_indices_batching_dims=())
      indices_are_sorted=False
      mode=GatherScatterMode.CLIP
      unique_indices=False
      update_consts=()
      update_jaxpr={ lambda ; p:f32[] q:f32[]. let r:f32[] = add p q in (r,) }
    ] a bi bj
    bl:f32[3,4] bm:i32[3,4] = sort[dimension=1 is_stable=True num_keys=1] a x
    bn:f32[3,2] bo:i32[3,2] = top_k[axis=1 k=2] a
    bq:f32[1,3,4] = broadcast_in_dim[broadcast_dimensions=(1, 2) shape=(1, 3, 4) sharding=None] a
    br:f32[3,3,2] = broadcast_in_dim[broadcast_dimensions=(1, 2) shape=(3, 3, 2) sharding=None] y
    bs:f32[1,3,3] = conv_general_dilated[
      batch_group_count=1
      dimension_numbers=ConvDimensionNumbers(lhs_spec=(0, 1, 2), rhs_spec=(0, 1, 2), out_spec=(0, 1, 2))
      feature_group_count=1
      lhs_dilation=(1,)
      out_sharding=None
      padding=((0, 0),)
      precision=None
      preferred_element_type=None
      rhs_dilation=(1,)
      window_strides=(1,)
    ] bq br
  in (m, n, t, u, v, w, x, y, z, ba, bb, bd, be, bf, bg, bh, bj, bk, bl, bm, bn, bo, bs) }";

/// Ref state on a top-level `Ref` argument (checked in
/// `tests/lowering_misc.rs` too).
const STATE: &str = "{ lambda ; a:Ref<default>{f32[4,5]} b:f32[5] c:i32[]. let
    e:f32[5] <- a[c,:]
    a[1,:] += b
    f:f32[5], a[2,:] <- a[2,:], e
  in (e, f) }";

/// `shard_map` over a one-device mesh with every mesh collective.
const SPMD: &str = "{ lambda ; a:f32[4,2]. let
    b:f32[4,2] c:f32[4,2] d:i32[1] = shard_map[
      check_vma=False
      in_specs=(P('x',),)
      jaxpr={ lambda ; e:f32[4,2]. let
          f:f32[4,2] = pvary[axes=('x',)] e
          g:f32[4,2] = psum[axes=('x',) axis_index_groups=None] f
          q:f32[4,2] = sin g
          h:f32[4,2] = pmax[axes=('x',) axis_index_groups=None] q
          i:f32[4,2] = pmin[axes=('x',) axis_index_groups=None] h
          j:f32[4,2] = all_gather[all_gather_dimension=0 axis_index_groups=None axis_name=('x',) axis_size=1 tiled=True] i
          k:f32[4,2] = reduce_scatter[axis_index_groups=None axis_name=('x',) axis_size=1 scatter_dimension=0 tiled=True] j
          l:f32[4,2] = ppermute[axis_name=('x',) perm=((0, 0),)] k
          m:f32[4,2] = all_to_all[axis_index_groups=None axis_name=x concat_axis=1 split_axis=0 tiled=True] l
          n:f32[4,2] = psum_invariant[axes=('x',)] m
          o:i32[] = axis_index[axis_name=x] 
          p:i32[1] = broadcast_in_dim[broadcast_dimensions=() shape=(1,) sharding=None] o
        in (n, m, p) }
      mesh=Mesh('x': 1, axis_types=(Auto,))
      newly_manual_axes=frozenset({'x'})
      out_specs=(P('x',), P(), P('x',))
    ] a
  in (b, c, d) }";

/// Host callbacks (the host function is set by the test).
const CALLBACKS: &str = "{ lambda ; a:f32[3]. let
    b:f32[3] = pure_callback[
      callback=_FlatCallback(callback_func=<function f at 0xXXXXXXXXXXXX>, in_tree=PyTreeDef(((*,), {})))
      result_avals=(ShapedArray(float32[3]),)
      sharding=None
      vmap_method=sequential
    ] a
    debug_callback[
      callback=<function g at 0xXXXXXXXXXXXX>
      effect=Debug
      partitioned=False
    ] b
    debug_print[
      fmt=b={}
      has_placeholders=True
      in_tree=PyTreeDef(((*,), {}))
      logging_record=None
      np_printoptions=(('edgeitems', 3), ('threshold', 1000), ('floatmode', 'maxprec'), ('precision', 8), ('suppress', False), ('linewidth', 75), ('nanstr', 'nan'), ('infstr', 'inf'), ('sign', '-'), ('formatter', None), ('legacy', False), ('override_repr', None))
      ordered=False
      partitioned=False
      static_args=()
    ] b
    c:f32[3] = mul b 3.0:f32[]
  in (c,) }";

/// Samples of not-yet primitives: compiling each must fail as unsupported.
fn not_yet_samples() -> Vec<(&'static str, String)> {
    // Every primitive of the table lowers.
    Vec::new()
}

#[test]
fn every_lowered_primitive_is_exercised_and_every_other_is_listed() {
    let mut seen = BTreeSet::new();
    for (i, (text, tol)) in control_cases().into_iter().enumerate() {
        check(text, 100 + i as u64, Dist::Uniform(2.0), tol);
        tags(&parse(text).jaxpr, &mut seen);
    }
    check(FIRST_ORDER, 7, Dist::Uniform(2.0), Tol::Rel(1e-6));
    tags(&parse(FIRST_ORDER).jaxpr, &mut seen);
    let state = parse(STATE);
    lowering_util::check_state_closed(
        &state,
        &lowering_util::args_for(STATE, 8, Dist::Uniform(4.0)),
        STATE,
    );
    tags(&state.jaxpr, &mut seen);
    // Host callbacks, calling a host function that doubles its operand
    // (checked in `tests/lowering_callback.rs` too).
    let double: jaxon_ir::primitive::HostFn =
        std::sync::Arc::new(|xs: &[jaxon_ir::HostArray]| {
            let x = xs.first().ok_or("no operand")?;
            let v: Vec<f64> = x.to_f64_vec().iter().map(|a| 2.0 * a).collect();
            Ok(vec![jaxon_ir::HostArray::from_f64(
                x.dtype(),
                x.shape(),
                &v,
            )
            .map_err(|e| e.to_string())?])
        });
    let callbacks = lowering_util::closed_with(CALLBACKS, &double);
    let args = lowering_util::args_for(CALLBACKS, 9, Dist::Uniform(2.0));
    let want = jaxon_ir::eval_closed_jaxpr(&callbacks, &args).expect("interpreter");
    let got = run_lowered(&callbacks, &args).expect("cuda-sim");
    for (g, w) in got.iter().zip(&want) {
        lowering_util::compare(CALLBACKS, g, w, Tol::Exact);
    }
    tags(&callbacks.jaxpr, &mut seen);
    // The op-keyed members: every unary and binary op appears in
    // tests/lowering.rs; the rows above name each variant once.
    let mut lowered = Vec::new();
    let mut not_yet = Vec::new();
    for (text_name, text) in not_yet_samples() {
        let closed = parse(&text);
        let named: Vec<Row> = closed
            .jaxpr
            .eqns
            .iter()
            .filter(|e| e.primitive.name() == text_name)
            .map(|e| row(&e.primitive).1)
            .collect();
        assert!(
            !named.is_empty() && named.iter().all(|r| matches!(r, Row::NotYet(_))),
            "{text_name}: the sample's row is not a NotYet row"
        );
        match run_lowered(&closed, &lowering_util::args_for(&text, 1, Dist::Uniform(2.0))) {
            Err(IrError::Unsupported {
                backend, primitive, ..
            }) => {
                assert_eq!(backend, "cuda");
                assert_eq!(primitive, text_name);
            }
            other => panic!(
                "{text_name} now compiles on cuda-sim ({:?}): move its row to Lowered and add a case",
                other.map(|v| v.len())
            ),
        }
    }
    // Count rows through the samples' and cases' tags plus the table.
    let all: Vec<usize> = (0..N_VARIANTS).collect();
    let mut rows = std::collections::BTreeMap::new();
    for closed in control_cases()
        .iter()
        .map(|(t, _)| parse(t))
        .chain([parse(FIRST_ORDER)])
        .chain(not_yet_samples().iter().map(|(_, t)| parse(t)))
    {
        collect_rows(&closed.jaxpr, &mut rows);
    }
    for (tag, r) in &rows {
        match r {
            Row::Lowered => lowered.push(*tag),
            Row::NotYet(_) => not_yet.push(*tag),
        }
    }
    for tag in &lowered {
        assert!(seen.contains(tag), "lowered row {tag} has no passing case");
    }
    assert!(all.iter().all(|t| *t < N_VARIANTS));
    println!(
        "lowering coverage: {} lowered rows exercised, {} not-yet rows sampled",
        lowered.len(),
        not_yet.len()
    );
}

fn collect_rows(j: &Jaxpr, out: &mut std::collections::BTreeMap<usize, Row>) {
    for e in &j.eqns {
        let (tag, r) = row(&e.primitive);
        out.insert(tag, r);
        for pj in e.primitive.param_jaxprs() {
            collect_rows(pj.jaxpr.jaxpr(), out);
        }
    }
}

/// Every row the table marks `Lowered` (97 of the 97 rows) appears in
/// some case: checked by listing the expected tags explicitly.
#[test]
fn the_lowered_rows_are_the_expected_ones() {
    let mut seen = BTreeSet::new();
    for (text, _) in control_cases() {
        tags(&parse(text).jaxpr, &mut seen);
    }
    tags(&parse(FIRST_ORDER).jaxpr, &mut seen);
    tags(&parse(STATE).jaxpr, &mut seen);
    tags(&parse(CALLBACKS).jaxpr, &mut seen);
    let expected_lowered: BTreeSet<usize> = [
        0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24,
        25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43, 44, 45, 46, 47,
        48, 49, 50, 51, 52, 53, 59, 60, 61, 62, 63, 64, 65, 66, 67, 68, 69, 70, 71, 72, 73, 74, 75,
        76, 77, 78, 79, 80, 81, 82, 83, 84, 85, 86, 87, 88, 89, 90, 91, 92, 93, 94, 95, 96,
    ]
    .into_iter()
    .collect();
    let missing: Vec<_> = expected_lowered.difference(&seen).collect();
    assert!(
        missing.is_empty(),
        "lowered rows without a case: {missing:?}"
    );
}
