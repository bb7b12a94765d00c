package io.vram4j.alloc.config;

/** Parser for the {@code PYTORCH_CUDA_ALLOC_CONF} string format (spec section 7.2). */
final class AllocConfParser {
    private AllocConfParser() {
    }

    static AllocatorConfig parse(AllocatorConfig base, String conf) {
        throw new UnsupportedOperationException("not yet implemented");
    }
}
