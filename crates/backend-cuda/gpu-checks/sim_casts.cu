// sim_casts.cu: checks on a GPU the simulator's cast rules (src/sim/value.rs): f32->int truncation,
// saturation and NaN->0, f32->bf16/f16 ties to even, f64->bf16/f16 without double rounding.
// Expected values are the simulator's (as its tests assert). Prints "ALL OK 0" only if all pass.
// Ran 2026-11 on an H100 (CUDA 13.0, nvcc -arch=sm_90): ALL OK 0.
#include <cstdio>
#include <cstdint>
#include <cuda_fp16.h>
#include <cuda_bf16.h>
#define N 10
__global__ void K(float*f,double*d,int*o){int i=threadIdx.x,t;o[i]=__float2int_rz(f[i]);o[N+i]=(int)__float2uint_rz(f[i]);asm("cvt.rzi.sat.s8.f32 %0,%1;":"=r"(t):"f"(f[i]));o[2*N+i]=(signed char)t;
o[3*N+i]=__bfloat16_as_ushort(__float2bfloat16_rn(f[i]));o[4*N+i]=__half_as_ushort(__float2half_rn(f[i]));o[5*N+i]=__bfloat16_as_ushort(__double2bfloat16(d[i]));o[6*N+i]=__half_as_ushort(__double2half(d[i]));}
int main(){float*f;double*d;int*o;cudaMallocManaged(&f,64);cudaMallocManaged(&d,128);cudaMallocManaged(&o,4*7*N);
float F[N]={NAN,-5.7f,3e9f,-3e9f,1+1.f/256,1+3.f/256,70000,65519,-129.5f,300};
double D[N]={1+1./256+ldexp(1.,-40),1+ldexp(1.,-11)+ldexp(1.,-40),1+ldexp(1.,-11),65519,65520,1e-10,-(1+1./256),257,259,ldexp(1.,40)+ldexp(1.,32)+1};
for(int i=0;i<N;i++){f[i]=F[i];d[i]=D[i];}
K<<<1,N>>>(f,d,o);cudaDeviceSynchronize();
int W[7][N]={{0,-5,2147483647,(int)0x80000000,1,1,70000,65519,-129,300},{0,0,(int)3000000000u,0,1,1,70000,65519,0,300},{0,-5,127,-128,1,1,127,127,-128,127},
{-1,-1,-1,-1,0x3F80,0x3F82,-1,-1,-1,-1},{-1,-1,-1,-1,-1,-1,0x7C00,0x7BFF,-1,-1},{0x3F81,-1,-1,-1,-1,-1,0xBF80,0x4380,0x4382,0x5381},{-1,0x3C01,0x3C00,0x7BFF,0x7C00,0,-1,-1,-1,-1}};
int bad=0;for(int r=0;r<7;r++)for(int i=0;i<N;i++)if(W[r][i]!=-1||r<3){if(o[r*N+i]!=W[r][i]){printf("row %d [%d]: gpu %x sim %x\n",r,i,o[r*N+i],W[r][i]);bad++;}}
printf("%s %d\n",bad?"FAIL":"ALL OK",bad);return bad;}
