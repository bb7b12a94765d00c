/*
 * Prints the sizes, field offsets and constants of cuda.h that vram4j's FFM bindings (CudaDriver) hard-code,
 * one "name value" pair per line; CudaLayoutTest compiles this with gcc against the installed CUDA headers and
 * compares every line with the Java side.
 */
#include <cuda.h>
#include <stddef.h>
#include <stdio.h>

#define SIZE(t) printf(#t ".size %zu\n", sizeof(t))
#define OFF(t, f) printf(#t "." #f " %zu\n", offsetof(t, f))
#define CONST(c) printf(#c " %lld\n", (long long) (c))

int main(void) {
    SIZE(CUmemLocation); OFF(CUmemLocation, type); OFF(CUmemLocation, id);
    SIZE(CUmemAllocationProp); OFF(CUmemAllocationProp, type); OFF(CUmemAllocationProp, requestedHandleTypes);
    OFF(CUmemAllocationProp, location); OFF(CUmemAllocationProp, win32HandleMetaData);
    OFF(CUmemAllocationProp, allocFlags); OFF(CUmemAllocationProp, allocFlags.compressionType);
    OFF(CUmemAllocationProp, allocFlags.gpuDirectRDMACapable); OFF(CUmemAllocationProp, allocFlags.usage);
    OFF(CUmemAllocationProp, allocFlags.reserved);
    SIZE(CUmemAccessDesc); OFF(CUmemAccessDesc, location); OFF(CUmemAccessDesc, flags);
    SIZE(CUdeviceptr); SIZE(CUdevice); SIZE(CUresult); SIZE(CUmemGenericAllocationHandle); SIZE(CUstream);
    SIZE(CUevent); SIZE(CUcontext); SIZE(CUdevice_attribute);
    CONST(CUDA_SUCCESS); CONST(CUDA_ERROR_OUT_OF_MEMORY); CONST(CUDA_ERROR_NO_DEVICE);
    CONST(CUDA_ERROR_INVALID_IMAGE); CONST(CUDA_ERROR_UNSUPPORTED_PTX_VERSION); CONST(CUDA_ERROR_NOT_FOUND);
    CONST(CUDA_ERROR_NOT_READY);
    CONST(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT); CONST(CU_DEVICE_ATTRIBUTE_PCI_BUS_ID);
    CONST(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR); CONST(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
    CONST(CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED);
    CONST(CU_STREAM_NON_BLOCKING); CONST(CU_EVENT_DISABLE_TIMING);
    CONST(CU_MEM_ALLOCATION_TYPE_PINNED); CONST(CU_MEM_HANDLE_TYPE_NONE); CONST(CU_MEM_LOCATION_TYPE_DEVICE);
    CONST(CU_MEM_ACCESS_FLAGS_PROT_READWRITE); CONST(CU_MEM_ALLOC_GRANULARITY_MINIMUM);
    CONST(CU_MEM_ALLOC_GRANULARITY_RECOMMENDED);
    return 0;
}
