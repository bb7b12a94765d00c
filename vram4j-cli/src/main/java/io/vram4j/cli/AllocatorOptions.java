package io.vram4j.cli;

import io.vram4j.alloc.config.AllocatorConfig;
import picocli.CommandLine.Option;

/** The allocator's settings, shared by {@code train} and {@code find-batch-size} (a picocli mixin): {@code --alloc-conf}. */
final class AllocatorOptions {
    @Option(names = "--alloc-conf", paramLabel = "CONF", defaultValue = "", description = "allocator settings in PYTORCH_CUDA_ALLOC_CONF format "
            + "(default: $VRAM4J_ALLOC_CONF / $PYTORCH_CUDA_ALLOC_CONF)")
    String allocConf;

    /**
     * @return the environment's settings with {@code --alloc-conf} applied on top
     * @throws UserException naming the environment or {@code --alloc-conf}, whichever is invalid
     */
    AllocatorConfig config() {
        return config(allocConf);
    }

    /**
     * @param allocConf settings in PYTORCH_CUDA_ALLOC_CONF format (blank: none)
     * @return the environment's settings with {@code allocConf} applied on top
     * @throws UserException naming the environment or {@code --alloc-conf}, whichever is invalid
     */
    static AllocatorConfig config(String allocConf) {
        AllocatorConfig config;
        try {
            config = AllocatorConfig.fromEnvironment(System.getenv());
        } catch (IllegalArgumentException e) {
            throw new UserException("allocator settings from the environment: " + e.getMessage(), e);
        }
        if (!allocConf.isBlank()) {
            try {
                config = config.parse(allocConf);
            } catch (IllegalArgumentException e) {
                throw new UserException("--alloc-conf: " + e.getMessage(), e);
            }
        }
        return config;
    }
}
