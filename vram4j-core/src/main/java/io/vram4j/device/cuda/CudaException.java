package io.vram4j.device.cuda;

/**
 * A CUDA driver call returned an error other than the ones vram4j handles itself (out of memory during
 * allocation, "not ready" from a query). The message names the call with its arguments, the error's name from
 * {@code cuGetErrorName} and its description from {@code cuGetErrorString}, e.g.
 * {@code cuMemFree_v2(0x7f3a00000000): CUDA_ERROR_INVALID_VALUE (invalid argument)}.
 */
public final class CudaException extends IllegalStateException {
    private final String call;
    private final int result;
    private final String errorName;

    CudaException(String call, int result, String errorName, String errorString) {
        super(call + ": " + errorName + " (" + errorString + ")");
        this.call = call;
        this.result = result;
        this.errorName = errorName;
    }

    /** @return the call with its arguments, e.g. {@code "cuMemAlloc_v2(1048576)"} */
    public String call() {
        return call;
    }

    /** @return the {@code CUresult} code, e.g. 2 for {@code CUDA_ERROR_OUT_OF_MEMORY} */
    public int result() {
        return result;
    }

    /** @return the name {@code cuGetErrorName} gives, e.g. {@code "CUDA_ERROR_OUT_OF_MEMORY"} */
    public String errorName() {
        return errorName;
    }
}
