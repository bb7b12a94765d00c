package io.vram4j.compute.cuda;

import java.util.List;

/**
 * The launch descriptor of one kernel of {@code vram4j_kernels.cu}: its PTX entry name and the types of its
 * parameters in order. A launch passes exactly these; {@code CudaKernelTableTest} checks every descriptor
 * against the {@code .entry} declarations of the committed PTX.
 *
 * @param name the entry name, e.g. {@code "v4j_add_f32"}
 * @param params the parameter types in declaration order
 */
record CudaKernel(String name, List<KernelParam> params) {
    CudaKernel {
        params = List.copyOf(params);
    }

    static CudaKernel of(String name, KernelParam... params) {
        return new CudaKernel(name, List.of(params));
    }
}
