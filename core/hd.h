// Host/device annotations for math shared by the CPU reference (g++) and the kernels (nvcc).
#pragma once

#if defined(__CUDACC__)
#define VT_HD __host__ __device__
#else
#define VT_HD
#endif
