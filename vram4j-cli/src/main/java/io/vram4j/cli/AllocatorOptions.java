package io.vram4j.cli;

import io.vram4j.alloc.config.AllocatorConfig;
import picocli.CommandLine.Option;

/**
 * The allocator's settings, shared by {@code train} and {@code find-batch-size} (a picocli mixin):
 * {@code --alloc-conf} and {@code --memory-fraction}.
 */
final class AllocatorOptions {
    @Option(names = "--alloc-conf", paramLabel = "CONF", defaultValue = "", description = "allocator settings in PYTORCH_CUDA_ALLOC_CONF format "
            + "(default: $VRAM4J_ALLOC_CONF / $PYTORCH_CUDA_ALLOC_CONF)")
    String allocConf;

    @Option(names = "--memory-fraction", paramLabel = "F", description = "cap reserved memory at floor(F x the device's "
            + "total), F in (0, 1], as torch.cuda.set_per_process_memory_fraction(F) (overrides per_process_memory_fraction); "
            + "the same F on cuda and on sim:TOTAL:ccX.Y gives both the same limit")
    String memoryFraction;

    /**
     * @return the environment's settings with {@code --alloc-conf} and then {@code --memory-fraction} applied on top
     * @throws UserException naming the environment, {@code --alloc-conf} or {@code --memory-fraction}, whichever is
     *     invalid
     */
    AllocatorConfig config() {
        AllocatorConfig config = config(allocConf);
        return memoryFraction == null ? config
                : config.toBuilder().perProcessMemoryFraction(fraction(memoryFraction)).build();
    }

    /**
     * @param text a decimal, as given after {@code --memory-fraction}
     * @return it, when in (0, 1]
     * @throws UserException naming {@code --memory-fraction} and the range otherwise (0 included: nothing would fit)
     */
    static double fraction(String text) {
        double f;
        try {
            f = Double.parseDouble(text.strip());
        } catch (NumberFormatException e) {
            throw new UserException("--memory-fraction: '" + text + "' is not a number; expected a fraction of the "
                    + "device's memory in (0, 1], e.g. 0.9", e);
        }
        if (!(f > 0 && f <= 1)) {
            throw new UserException("--memory-fraction: " + text.strip() + " is outside (0, 1]; expected a fraction of "
                    + "the device's memory, e.g. 0.9 (0 would let nothing fit)");
        }
        return f;
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
