// Reduction kernels for device buffers: out[i] = a[i] op b[i], grid-stride.
//
// Compiled by nvcc into a fat binary that is embedded in libcrux_coll as a
// byte array and loaded with the driver API (cuModuleLoadData), so nothing
// links against the CUDA runtime.  Kernel names are "crux_<dtype>_<op>" with
// crux_reduce.h's dtype and op names; each computes exactly what the CPU
// kernel of crux_reduce.c computes (integer arithmetic wraps like C's, 16-bit
// floats are computed in single precision and rounded to nearest even, and
// every floating-point NaN result is the type's one quiet NaN: the GPU's own
// NaN and x86's differ, and C leaves the payload unspecified).
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <stdint.h>

// One line per operator and per type: a table, left as written.
// clang-format off
struct Sum  { template <typename T> __device__ T operator()(T a, T b) const { return a + b; } };
struct Prod { template <typename T> __device__ T operator()(T a, T b) const { return a * b; } };
struct Max  { template <typename T> __device__ T operator()(T a, T b) const { return a > b ? a : b; } };
struct Min  { template <typename T> __device__ T operator()(T a, T b) const { return a < b ? a : b; } };
// Float and double results: NaN becomes the quiet NaN of crux_reduce.c.
template <typename Op> struct Canon { template <typename T> __device__ T operator()(T a, T b) const { T r = Op()(a, b); return r == r ? r : (T)__builtin_nan(""); } };
struct Land { template <typename T> __device__ T operator()(T a, T b) const { return (T)((a != 0) && (b != 0)); } };
struct Lor  { template <typename T> __device__ T operator()(T a, T b) const { return (T)((a != 0) || (b != 0)); } };
struct Lxor { template <typename T> __device__ T operator()(T a, T b) const { return (T)((a != 0) != (b != 0)); } };
struct Band { template <typename T> __device__ T operator()(T a, T b) const { return a & b; } };
struct Bor  { template <typename T> __device__ T operator()(T a, T b) const { return a | b; } };
struct Bxor { template <typename T> __device__ T operator()(T a, T b) const { return a ^ b; } };

template <typename T, typename Op>
__device__ void reduce(T *out, const T *a, const T *b, size_t n)
{
    const size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        out[i] = Op()(a[i], b[i]);
    }
}

// A NaN result is stored as the type's one quiet NaN, as crux_reduce.c does.
struct Half {
    __device__ static float load(__half h) { return __half2float(h); }
    __device__ static __half store(float f) { return f == f ? __float2half_rn(f) : __ushort_as_half(0x7e00); }
};
struct Bf16 {
    __device__ static float load(__nv_bfloat16 h) { return __bfloat162float(h); }
    __device__ static __nv_bfloat16 store(float f) { return f == f ? __float2bfloat16_rn(f) : __ushort_as_bfloat16(0x7fc0); }
};

template <typename T, typename Conv, typename Op>
__device__ void reduce16(T *out, const T *a, const T *b, size_t n)
{
    const size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        out[i] = Conv::store(Op()(Conv::load(a[i]), Conv::load(b[i])));
    }
}

#define KERNEL(dtype, opname, T, OP) \
    extern "C" __global__ void crux_##dtype##_##opname(T *out, const T *a, const T *b, size_t n) \
    { reduce<T, OP>(out, a, b, n); }
#define ARITH(dtype, T) KERNEL(dtype, sum, T, Sum) KERNEL(dtype, prod, T, Prod) \
                        KERNEL(dtype, max, T, Max) KERNEL(dtype, min, T, Min)
#define LOGIC(dtype, T) KERNEL(dtype, land, T, Land) KERNEL(dtype, lor, T, Lor) \
                        KERNEL(dtype, lxor, T, Lxor)
#define BITS(dtype, T)  KERNEL(dtype, band, T, Band) KERNEL(dtype, bor, T, Bor) \
                        KERNEL(dtype, bxor, T, Bxor)
#define INTEGER(dtype, T) ARITH(dtype, T) LOGIC(dtype, T) BITS(dtype, T)

INTEGER(int8, int8_t)
INTEGER(uint8, uint8_t)
INTEGER(int16, int16_t)
INTEGER(uint16, uint16_t)
INTEGER(int32, int32_t)
INTEGER(uint32, uint32_t)
INTEGER(int64, int64_t)
INTEGER(uint64, uint64_t)
#define FLOAT(dtype, T) KERNEL(dtype, sum, T, Canon<Sum>) KERNEL(dtype, prod, T, Canon<Prod>) \
                        KERNEL(dtype, max, T, Canon<Max>) KERNEL(dtype, min, T, Canon<Min>)
FLOAT(float, float)
FLOAT(double, double)
LOGIC(bool, uint8_t)        // C _Bool holds 0 or 1
LOGIC(logical32, int32_t)

#define KERNEL16(dtype, opname, T, CONV, OP) \
    extern "C" __global__ void crux_##dtype##_##opname(T *out, const T *a, const T *b, size_t n) \
    { reduce16<T, CONV, OP>(out, a, b, n); }
#define ARITH16(dtype, T, CONV) KERNEL16(dtype, sum, T, CONV, Sum) KERNEL16(dtype, prod, T, CONV, Prod) \
                                KERNEL16(dtype, max, T, CONV, Max) KERNEL16(dtype, min, T, CONV, Min)
ARITH16(float16, __half, Half)
ARITH16(bfloat16, __nv_bfloat16, Bf16)
// clang-format on
