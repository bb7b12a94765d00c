/* Stands for CUDA's cuda_bf16.h when the kernels compile as host C++ (cuda_emulation.h). Test-only. */
#include "../cuda_emulation.h"
