// sim_semantics.cu: checks, on a real GPU, the rules the simulator
// (`crates/backend-cuda/src/sim`) implements: mma fragment layouts
// (m16n8k16 f16/bf16, m16n8k8 tf32 with cvt.rna), shuffle source lanes for
// every kind and width, and cast rounding/saturation. The host-side formulas
// are transcribed from sim/mma.rs, sim/exec.rs (shuffle) and sim/value.rs.
// Invariant: prints "ALL OK" and exits 0 only if every check passes.
// Build: nvcc -arch=sm_90 -o sim_semantics sim_semantics.cu
#include <cstdio>
#include <cstdint>
#include <cstring>
#include <cmath>
#include <cstdlib>
#include <cuda_fp16.h>
#include <cuda_bf16.h>

static int fails = 0;
#define CHECK(c, ...)                                                   \
  do {                                                                  \
    if (!(c)) {                                                         \
      if (fails++ < 30) { printf("FAIL: "); printf(__VA_ARGS__); printf("\n"); } \
    }                                                                   \
  } while (0)

// --- layouts, as sim/mma.rs ---
static void a_coord(int shape, int lane, int i, int* r, int* c) {
  int g = lane >> 2, t = lane % 4;
  if (shape == 0) {
    *r = g + ((i == 2 || i == 3 || i == 6 || i == 7) ? 8 : 0);
    *c = t * 2 + (i & 1) + (i >= 4 ? 8 : 0);
  } else {
    *r = g + 8 * (i & 1);
    *c = t + (i >= 2 ? 4 : 0);
  }
}
static void b_coord(int shape, int lane, int i, int* r, int* c) {
  int g = lane >> 2, t = lane % 4;
  if (shape == 0) { *r = t * 2 + (i & 1) + (i >= 2 ? 8 : 0); *c = g; }
  else { *r = t + 4 * i; *c = g; }
}
static void c_coord(int lane, int i, int* r, int* c) {
  int g = lane >> 2, t = lane % 4;
  *r = g + (i >= 2 ? 8 : 0);
  *c = t * 2 + (i & 1);
}
static uint32_t tf32_rna(uint32_t b) {
  if ((b & 0x7f800000u) == 0x7f800000u) return b;
  return (b + 0x1000u) & 0xffffe000u;
}

__global__ void k_mma_f16(const uint16_t* a, const uint16_t* b, const float* c, float* d, int bf) {
  int l = threadIdx.x;
  const uint32_t* a32 = (const uint32_t*)(a + l * 8);
  const uint32_t* b32 = (const uint32_t*)(b + l * 4);
  float d0, d1, d2, d3;
  if (bf) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%10,%11,%12,%13};"
        : "=f"(d0), "=f"(d1), "=f"(d2), "=f"(d3)
        : "r"(a32[0]), "r"(a32[1]), "r"(a32[2]), "r"(a32[3]), "r"(b32[0]), "r"(b32[1]),
          "f"(c[l * 4]), "f"(c[l * 4 + 1]), "f"(c[l * 4 + 2]), "f"(c[l * 4 + 3]));
  } else {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%10,%11,%12,%13};"
        : "=f"(d0), "=f"(d1), "=f"(d2), "=f"(d3)
        : "r"(a32[0]), "r"(a32[1]), "r"(a32[2]), "r"(a32[3]), "r"(b32[0]), "r"(b32[1]),
          "f"(c[l * 4]), "f"(c[l * 4 + 1]), "f"(c[l * 4 + 2]), "f"(c[l * 4 + 3]));
  }
  d[l * 4] = d0; d[l * 4 + 1] = d1; d[l * 4 + 2] = d2; d[l * 4 + 3] = d3;
}

__global__ void k_mma_tf32(const float* a, const float* b, const float* c, float* d) {
  int l = threadIdx.x;
  uint32_t ar[4], br[2];
  for (int i = 0; i < 4; i++) asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(ar[i]) : "f"(a[l * 4 + i]));
  for (int i = 0; i < 2; i++) asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(br[i]) : "f"(b[l * 2 + i]));
  float d0, d1, d2, d3;
  asm volatile(
      "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%10,%11,%12,%13};"
      : "=f"(d0), "=f"(d1), "=f"(d2), "=f"(d3)
      : "r"(ar[0]), "r"(ar[1]), "r"(ar[2]), "r"(ar[3]), "r"(br[0]), "r"(br[1]),
        "f"(c[l * 4]), "f"(c[l * 4 + 1]), "f"(c[l * 4 + 2]), "f"(c[l * 4 + 3]));
  d[l * 4] = d0; d[l * 4 + 1] = d1; d[l * 4 + 2] = d2; d[l * 4 + 3] = d3;
}

__global__ void k_cvt_rna(const float* x, uint32_t* y) {
  uint32_t r;
  asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(r) : "f"(x[threadIdx.x]));
  y[threadIdx.x] = r;
}

__global__ void k_shfl(const uint32_t* ops, uint32_t* out, int kind, int width) {
  uint32_t l = threadIdx.x, v = l * 3 + 1, o = ops[l], r = 0;
  if (kind == 0) r = __shfl_xor_sync(0xffffffffu, v, (int)o, width);
  if (kind == 1) r = __shfl_down_sync(0xffffffffu, v, o, width);
  if (kind == 2) r = __shfl_up_sync(0xffffffffu, v, o, width);
  if (kind == 3) r = __shfl_sync(0xffffffffu, v, (int)o, width);
  out[l] = r;
}

__global__ void k_casts(const float* f, const double* dd, int* i32, unsigned* u32, signed char* i8,
                        unsigned short* bf, unsigned short* h, unsigned short* bfd, unsigned short* hd) {
  int i = threadIdx.x;
  i32[i] = __float2int_rz(f[i]);
  u32[i] = __float2uint_rz(f[i]);
  int t;
  asm("cvt.rzi.sat.s8.f32 %0, %1;" : "=r"(t) : "f"(f[i]));
  i8[i] = (signed char)t;
  bf[i] = __bfloat16_as_ushort(__float2bfloat16_rn(f[i]));
  h[i] = __half_as_ushort(__float2half_rn(f[i]));
  bfd[i] = __bfloat16_as_ushort(__double2bfloat16(dd[i]));
  hd[i] = __half_as_ushort(__double2half(dd[i]));
}

static float frand() { return (float)rand() / RAND_MAX * 8.0f - 4.0f; }

static void check_mma(int shape, int bf) {
  int K = shape == 0 ? 16 : 8, na = K / 2, nb = K / 4;
  float A[16][16], B[16][8], C[16][8];
  for (int r = 0; r < 16; r++) for (int k = 0; k < K; k++) {
    float x = frand();
    if (shape == 0) x = bf ? __bfloat162float(__float2bfloat16(x)) : __half2float(__float2half(x));
    A[r][k] = x;
  }
  for (int k = 0; k < K; k++) for (int n = 0; n < 8; n++) {
    float x = frand();
    if (shape == 0) x = bf ? __bfloat162float(__float2bfloat16(x)) : __half2float(__float2half(x));
    B[k][n] = x;
  }
  for (int r = 0; r < 16; r++) for (int n = 0; n < 8; n++) C[r][n] = frand();
  uint16_t ah[256], bh[128];
  float af[128], bfv[64], cf[128], df[128];
  for (int l = 0; l < 32; l++) {
    for (int i = 0; i < na; i++) {
      int r, c; a_coord(shape, l, i, &r, &c);
      if (shape == 0) { uint16_t u; if (bf) { __nv_bfloat16 v = __float2bfloat16(A[r][c]); memcpy(&u, &v, 2); } else { __half v = __float2half(A[r][c]); memcpy(&u, &v, 2); } ah[l * 8 + i] = u; }
      else af[l * 4 + i] = A[r][c];
    }
    for (int i = 0; i < nb; i++) {
      int r, c; b_coord(shape, l, i, &r, &c);
      if (shape == 0) { uint16_t u; if (bf) { __nv_bfloat16 v = __float2bfloat16(B[r][c]); memcpy(&u, &v, 2); } else { __half v = __float2half(B[r][c]); memcpy(&u, &v, 2); } bh[l * 4 + i] = u; }
      else bfv[l * 2 + i] = B[r][c];
    }
    for (int i = 0; i < 4; i++) { int r, c; c_coord(l, i, &r, &c); cf[l * 4 + i] = C[r][c]; }
  }
  void *da, *db, *dc, *dd;
  cudaMalloc(&da, 1024); cudaMalloc(&db, 1024); cudaMalloc(&dc, 1024); cudaMalloc(&dd, 1024);
  cudaMemcpy(dc, cf, sizeof cf, cudaMemcpyHostToDevice);
  if (shape == 0) {
    cudaMemcpy(da, ah, sizeof ah, cudaMemcpyHostToDevice);
    cudaMemcpy(db, bh, sizeof bh, cudaMemcpyHostToDevice);
    k_mma_f16<<<1, 32>>>((uint16_t*)da, (uint16_t*)db, (float*)dc, (float*)dd, bf);
  } else {
    cudaMemcpy(da, af, sizeof af, cudaMemcpyHostToDevice);
    cudaMemcpy(db, bfv, sizeof bfv, cudaMemcpyHostToDevice);
    k_mma_tf32<<<1, 32>>>((float*)da, (float*)db, (float*)dc, (float*)dd);
  }
  cudaMemcpy(df, dd, sizeof df, cudaMemcpyDeviceToHost);
  double maxerr = 0;
  for (int l = 0; l < 32; l++) for (int i = 0; i < 4; i++) {
    int r, c; c_coord(l, i, &r, &c);
    double want = C[r][c];
    for (int k = 0; k < K; k++) {
      double a = A[r][k], b = B[k][c];
      if (shape == 1) {
        float fa = A[r][k], fb = B[k][c]; uint32_t ua, ub; memcpy(&ua, &fa, 4); memcpy(&ub, &fb, 4);
        ua = tf32_rna(ua); ub = tf32_rna(ub); memcpy(&fa, &ua, 4); memcpy(&fb, &ub, 4); a = fa; b = fb;
      }
      want += a * b;
    }
    double err = fabs(df[l * 4 + i] - want) / (1 + fabs(want));
    if (err > maxerr) maxerr = err;
    CHECK(err < 1e-5, "mma shape %d bf %d lane %d i %d: gpu %g sim-rule %g", shape, bf, l, i, df[l * 4 + i], want);
  }
  printf("mma shape %d bf16 %d: max rel err %.3g\n", shape, bf, maxerr);
  cudaFree(da); cudaFree(db); cudaFree(dc); cudaFree(dd);
}

static uint32_t sim_shfl_src(int kind, uint32_t l, uint32_t op, uint32_t w) {
  uint32_t b = op & 31, seg = l & ~(w - 1), last = seg + w - 1;
  switch (kind) {
    case 0: return (l ^ b) <= last ? (l ^ b) : l;
    case 1: return l + b <= last ? l + b : l;
    case 2: return l >= seg + b ? l - b : l;
    default: return seg + (b & (w - 1));
  }
}

static void check_shfl() {
  uint32_t *dops, *dout, ops[32], out[32];
  cudaMalloc(&dops, 128); cudaMalloc(&dout, 128);
  int n = 0;
  for (int rep = 0; rep < 20; rep++)
    for (int kind = 0; kind < 4; kind++)
      for (int w = 1; w <= 32; w *= 2) {
        for (int l = 0; l < 32; l++) ops[l] = rand() % 70;
        cudaMemcpy(dops, ops, 128, cudaMemcpyHostToDevice);
        k_shfl<<<1, 32>>>(dops, dout, kind, w);
        cudaMemcpy(out, dout, 128, cudaMemcpyDeviceToHost);
        for (int l = 0; l < 32; l++) {
          uint32_t want = sim_shfl_src(kind, l, ops[l], w) * 3 + 1;
          CHECK(out[l] == want, "shfl kind %d width %d lane %d op %u: gpu src %u sim src %u", kind, w, l, ops[l], (out[l] - 1) / 3, (want - 1) / 3);
          n++;
        }
      }
  printf("shuffles: %d lane checks\n", n);
}

static void check_cvt_rna() {
  float x[32]; uint32_t y[32];
  for (int i = 0; i < 32; i++) {
    uint32_t b = (0x3f800000u + (rand() % 0x4000)) | (i & 1 ? 0x1000u : 0);
    if (i < 4) b = 0x3f801000u + i * 0x2000u;  // exact ties
    if (i == 4) b = 0xbf801000u;
    if (i == 5) b = 0x7f7fffffu;
    memcpy(&x[i], &b, 4);
  }
  float* dx; uint32_t* dy;
  cudaMalloc(&dx, 128); cudaMalloc(&dy, 128);
  cudaMemcpy(dx, x, 128, cudaMemcpyHostToDevice);
  k_cvt_rna<<<1, 32>>>(dx, dy);
  cudaMemcpy(y, dy, 128, cudaMemcpyDeviceToHost);
  for (int i = 0; i < 32; i++) {
    uint32_t b; memcpy(&b, &x[i], 4);
    CHECK(y[i] == tf32_rna(b), "cvt.rna.tf32 of %08x: gpu %08x sim %08x", b, y[i], tf32_rna(b));
  }
  printf("cvt.rna.tf32: checked\n");
}

static void check_casts() {
  const int N = 10;
  float f[N] = {NAN, -5.7f, 3e9f, -3e9f, 1.0f + 1.0f / 256, 1.0f + 3.0f / 256, 70000.0f, 65519.0f, -129.5f, 300.0f};
  double d[N] = {1.0 + 1.0 / 256 + ldexp(1.0, -40), 1.0 + ldexp(1.0, -11) + ldexp(1.0, -40), 1.0 + ldexp(1.0, -11),
                 65519.0, 65520.0, 1e-10, -(1.0 + 1.0 / 256), 257.0, 259.0, ldexp(1.0, 40) + ldexp(1.0, 32) + 1};
  // Expected values per sim/value.rs's rules (as its tests assert).
  int e_i32[N] = {0, -5, 2147483647, (int)0x80000000, 1, 1, 70000, 65519, -129, 300};
  unsigned e_u32[N] = {0, 0, 3000000000u, 0, 1, 1, 70000, 65519, 0, 300};
  int e_i8[N] = {0, -5, 127, -128, 1, 1, 127, 127, -128, 127};
  unsigned short e_bf[N] = {0, 0, 0, 0, 0x3F80, 0x3F82, 0, 0, 0, 0};  // 0 = not checked
  unsigned short e_h[N] = {0, 0, 0, 0, 0, 0, 0x7C00, 0x7BFF, 0, 0};
  unsigned short e_bfd[N] = {0x3F81, 0, 0, 0, 0, 0, 0xBF80, 0x4380, 0x4382, 0x5381};
  unsigned short e_hd[N] = {0, 0x3C01, 0x3C00, 0x7BFF, 0x7C00, 0x0000, 0, 0, 0, 0};
  float* df; double* dd; int* di; unsigned* du; signed char* d8; unsigned short *db, *dh, *dbd, *dhd;
  cudaMalloc(&df, 64); cudaMalloc(&dd, 128); cudaMalloc(&di, 64); cudaMalloc(&du, 64); cudaMalloc(&d8, 64);
  cudaMalloc(&db, 64); cudaMalloc(&dh, 64); cudaMalloc(&dbd, 64); cudaMalloc(&dhd, 64);
  cudaMemcpy(df, f, sizeof f, cudaMemcpyHostToDevice);
  cudaMemcpy(dd, d, sizeof d, cudaMemcpyHostToDevice);
  k_casts<<<1, N>>>(df, dd, di, du, d8, db, dh, dbd, dhd);
  int gi[N]; unsigned gu[N]; signed char g8[N]; unsigned short gb[N], gh[N], gbd[N], ghd[N];
  cudaMemcpy(gi, di, sizeof gi, cudaMemcpyDeviceToHost); cudaMemcpy(gu, du, sizeof gu, cudaMemcpyDeviceToHost);
  cudaMemcpy(g8, d8, sizeof g8, cudaMemcpyDeviceToHost);
  cudaMemcpy(gb, db, sizeof gb, cudaMemcpyDeviceToHost); cudaMemcpy(gh, dh, sizeof gh, cudaMemcpyDeviceToHost);
  cudaMemcpy(gbd, dbd, sizeof gbd, cudaMemcpyDeviceToHost); cudaMemcpy(ghd, dhd, sizeof ghd, cudaMemcpyDeviceToHost);
  for (int i = 0; i < N; i++) {
    CHECK(gi[i] == e_i32[i], "f32->i32 [%d]: gpu %d sim %d", i, gi[i], e_i32[i]);
    CHECK(gu[i] == e_u32[i], "f32->u32 [%d]: gpu %u sim %u", i, gu[i], e_u32[i]);
    CHECK(g8[i] == e_i8[i], "f32->i8 [%d]: gpu %d sim %d", i, g8[i], e_i8[i]);
    if (e_bf[i]) CHECK(gb[i] == e_bf[i], "f32->bf16 [%d]: gpu %04x sim %04x", i, gb[i], e_bf[i]);
    if (e_h[i]) CHECK(gh[i] == e_h[i], "f32->f16 [%d]: gpu %04x sim %04x", i, gh[i], e_h[i]);
    if (e_bfd[i]) CHECK(gbd[i] == e_bfd[i], "f64->bf16 [%d]: gpu %04x sim %04x", i, gbd[i], e_bfd[i]);
    if (e_hd[i] || i == 5) CHECK(ghd[i] == e_hd[i], "f64->f16 [%d]: gpu %04x sim %04x", i, ghd[i], e_hd[i]);
  }
  printf("casts: checked\n");
}

int main() {
  srand(12345);
  for (int rep = 0; rep < 3; rep++) { check_mma(0, 0); check_mma(0, 1); check_mma(1, 0); }
  check_cvt_rna();
  check_shfl();
  check_casts();
  cudaError_t e = cudaDeviceSynchronize();
  CHECK(e == cudaSuccess, "cuda error %s", cudaGetErrorString(e));
  if (fails) { printf("%d FAILURES\n", fails); return 1; }
  printf("ALL OK\n");
  return 0;
}
