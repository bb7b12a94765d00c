/* Stands for CUDA's math_constants.h when the kernels compile as host C++ (cuda_emulation.h). Test-only. */
#include "../cuda_emulation.h"
