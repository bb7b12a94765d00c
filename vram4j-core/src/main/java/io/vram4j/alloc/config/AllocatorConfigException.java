package io.vram4j.alloc.config;

/**
 * An invalid allocator configuration string. The message names the option and what it accepts, in the
 * wording of PyTorch's {@code CUDAAllocatorConfig} where PyTorch has one.
 */
public class AllocatorConfigException extends IllegalArgumentException {
    /** @param message what was wrong */
    public AllocatorConfigException(String message) {
        super(message);
    }

    /** @param message what was wrong @param cause the underlying error */
    public AllocatorConfigException(String message, Throwable cause) {
        super(message, cause);
    }
}
