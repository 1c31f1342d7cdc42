// sim_mma_shfl.cu: checks on a GPU the simulator's mma fragment layouts (m16n8k16 f16/bf16,
// m16n8k8 tf32 after cvt.rna) and shuffle source lanes (every kind and width), with the host-side
// formulas transcribed from src/sim/mma.rs and src/sim/exec.rs. Prints "ALL OK 0" only if all pass.
// Ran 2026-11 on an H100 (CUDA 13.0, nvcc -arch=sm_90): mma max rel err <= 1.01e-7 over 30 tiles,
// 30720 shuffle lane checks, ALL OK 0.
#include <cstdio>
#include <cstdint>
#include <cstring>
#include <cstdlib>
#include <cmath>
#include <cuda_fp16.h>
#include <cuda_bf16.h>
typedef uint32_t U;
#define MM(T) asm volatile("mma.sync.aligned.m16n8k16.row.col.f32." T "." T ".f32 {%0,%1,%2,%3},{%4,%5,%6,%7},{%8,%9},{%10,%11,%12,%13};":"=f"(d[0]),"=f"(d[1]),"=f"(d[2]),"=f"(d[3]):"r"(a[0]),"r"(a[1]),"r"(a[2]),"r"(a[3]),"r"(b[0]),"r"(b[1]),"f"(c[0]),"f"(c[1]),"f"(c[2]),"f"(c[3]))
__global__ void K(U*A,U*B,float*C,float*D,int s){int l=threadIdx.x;U a[4],b[4];float d[4],*c=C+l*4;
for(int i=0;i<4;i++){a[i]=A[l*4+i];b[i]=B[l*4+i];}
if(s==2){for(int i=0;i<4;i++)asm("cvt.rna.tf32.f32 %0,%1;":"=r"(a[i]):"f"(__uint_as_float(a[i])));for(int i=0;i<2;i++)asm("cvt.rna.tf32.f32 %0,%1;":"=r"(b[i]):"f"(__uint_as_float(b[i])));
asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3},{%4,%5,%6,%7},{%8,%9},{%10,%11,%12,%13};":"=f"(d[0]),"=f"(d[1]),"=f"(d[2]),"=f"(d[3]):"r"(a[0]),"r"(a[1]),"r"(a[2]),"r"(a[3]),"r"(b[0]),"r"(b[1]),"f"(c[0]),"f"(c[1]),"f"(c[2]),"f"(c[3]));}
else if(s==1)MM("bf16");else MM("f16");for(int i=0;i<4;i++)D[l*4+i]=d[i];}
__global__ void S(U*o,U*r,int k,int w){U l=threadIdx.x,v=l*3+1,x=o[l];r[l]=k==0?__shfl_xor_sync(~0u,v,x,w):k==1?__shfl_down_sync(~0u,v,x,w):k==2?__shfl_up_sync(~0u,v,x,w):__shfl_sync(~0u,v,x,w);}
U rna(U b){return (b&0x7f800000u)==0x7f800000u?b:(b+0x1000u)&0xffffe000u;}
float fr(){return rand()/(float)RAND_MAX*8-4;}
double P(int s,U*X,int l,int i){float x=fr(),y;U u;uint16_t z;
if(s==2){memcpy(&u,&x,4);X[l*4+i]=u;u=rna(u);memcpy(&y,&u,4);return y;}
if(s==1){__nv_bfloat16 h=__float2bfloat16(x);memcpy(&z,&h,2);((uint16_t*)X)[l*8+i]=z;return __bfloat162float(h);}
__half h=__float2half(x);memcpy(&z,&h,2);((uint16_t*)X)[l*8+i]=z;return __half2float(h);}
int F=0;
int main(){U*A,*B,*O,*R;float*C,*D;cudaMallocManaged(&A,512);cudaMallocManaged(&B,512);cudaMallocManaged(&C,512);cudaMallocManaged(&D,512);cudaMallocManaged(&O,128);cudaMallocManaged(&R,128);
for(int it=0;it<30;it++){int s=it%3,k=s==2?8:16;double a[16][16],b[16][8],c[16][8];memset(A,0,512);memset(B,0,512);
for(int l=0;l<32;l++){int g=l>>2,t=l&3;
for(int i=0;i<k/2;i++){int r=s<2?g+((i>>1)&1)*8:g+8*(i&1),q=s<2?t*2+(i&1)+(i>=4?8:0):t+(i>=2?4:0);a[r][q]=P(s,A,l,i);}
for(int i=0;i<k/4;i++){int r=s<2?t*2+(i&1)+(i>=2?8:0):t+4*i,q=g;b[r][q]=P(s,B,l,i);}
for(int i=0;i<4;i++){float x=fr();C[l*4+i]=x;c[g+(i>=2?8:0)][t*2+(i&1)]=x;}}
K<<<1,32>>>(A,B,C,D,s);cudaDeviceSynchronize();double m=0;
for(int l=0;l<32;l++)for(int i=0;i<4;i++){int r=(l>>2)+(i>=2?8:0),q=(l&3)*2+(i&1);double w=c[r][q];for(int j=0;j<k;j++)w+=a[r][j]*b[j][q];double e=fabs(D[l*4+i]-w)/(1+fabs(w));if(e>m)m=e;}
printf("mma%d %.3g\n",s,m);if(m>1e-5)F++;}
int n=0;for(int it=0;it<40;it++)for(int kk=0;kk<4;kk++)for(U w=1;w<=32;w*=2){for(int l=0;l<32;l++)O[l]=rand()%70;S<<<1,32>>>(O,R,kk,w);cudaDeviceSynchronize();
for(U l=0;l<32;l++){U bb=O[l]&31,sg=l&~(w-1),la=sg+w-1,src=kk==0?((l^bb)<=la?l^bb:l):kk==1?(l+bb<=la?l+bb:l):kk==2?(l>=sg+bb?l-bb:l):sg+(bb&(w-1));if(R[l]!=src*3+1){if(F<9)printf("shfl k%d w%u l%u op%u gpu%u sim%u\n",kk,w,l,O[l],(R[l]-1)/3,src);F++;}n++;}}
printf("shfl %d\n%s %d\n",n,F?"FAIL":"ALL OK",F);return F!=0;}
