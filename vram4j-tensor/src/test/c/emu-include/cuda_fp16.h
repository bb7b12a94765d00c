/* Stands for CUDA's cuda_fp16.h when the kernels compile as host C++ (cuda_emulation.h). Test-only. */
#include "../cuda_emulation.h"
