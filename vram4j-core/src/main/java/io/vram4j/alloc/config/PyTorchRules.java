package io.vram4j.alloc.config;

import java.util.Map;

/**
 * Which PyTorch release's settings rules a parse follows (spec section 7). PyTorch 2.9 moved the settings parser
 * into the device-generic {@code c10::CachingAllocator::AcceleratorAllocatorConfig} and changed three things
 * vram4j mirrors:
 * <ul>
 *   <li>{@code max_split_size_mb} and {@code max_non_split_rounding_mb} accept 20 (the bound became {@code >= 20};
 *       2.8 requires {@code > 20});</li>
 *   <li>the {@code >:N} entry of a {@code roundup_power2_divisions} list fills the size classes <em>after</em> the
 *       last listed key's class (2.8 also overwrote that key's own class);</li>
 *   <li>the settings are read from {@code PYTORCH_ALLOC_CONF}, with {@code PYTORCH_CUDA_ALLOC_CONF} kept as a
 *       deprecated fallback (2.8 reads only {@code PYTORCH_CUDA_ALLOC_CONF});</li>
 * </ul>
 * and the wording of a few messages ({@code "... must be >= 20"},
 * {@code "garbage_collect_threshold is invalid, set it in (0.0, 1.0)"},
 * {@code "Unrecognized key 'K' in CUDA allocator config."}).
 *
 * <p>The newest rules, {@link #V2_9}, are in force unless the environment variable {@value #VARIABLE} selects
 * {@code 2.8} (any of {@code 2.4} to {@code 2.8}), for replaying recordings made with an older PyTorch.
 * Immutable and thread-safe.
 */
public enum PyTorchRules {
    /** PyTorch 2.4 – 2.8: {@code CUDAAllocatorConfig::parseArgs}. */
    V2_8("2.8"),
    /** PyTorch 2.9 and newer: {@code AcceleratorAllocatorConfig} plus {@code CUDAAllocatorConfig}. */
    V2_9("2.9");

    /** The environment variable that selects the rules: {@code 2.4} ... {@code 2.8}, or {@code 2.9} (default). */
    public static final String VARIABLE = "VRAM4J_PYTORCH_RULES";

    /** The rules in force when {@value #VARIABLE} is unset: the newest. */
    public static final PyTorchRules NEWEST = V2_9;

    private final String version;

    PyTorchRules(String version) {
        this.version = version;
    }

    /** @return the release these rules are named after, {@code "2.8"} or {@code "2.9"} */
    public String version() {
        return version;
    }

    /**
     * The rules selected by {@value #VARIABLE} in {@code env}.
     *
     * @param env the environment (normally {@link System#getenv()})
     * @return {@link #NEWEST} when the variable is unset or empty, else the rules it names
     * @throws AllocatorConfigException naming the variable when its value is not a PyTorch version 2.4 to 2.10
     */
    public static PyTorchRules fromEnvironment(Map<String, String> env) {
        String v = env.get(VARIABLE);
        if (v == null || v.isBlank()) {
            return NEWEST;
        }
        return switch (v.strip()) {
            case "2.4", "2.5", "2.6", "2.7", "2.8" -> V2_8;
            case "2.9", "2.10" -> V2_9;
            default -> throw new AllocatorConfigException(VARIABLE + ": expected a PyTorch version, 2.8 (the rules of"
                    + " 2.4 to 2.8) or 2.9 (the newest, the default), got '" + v + "'");
        };
    }

    /**
     * The rules in force in this process: {@link #fromEnvironment} of {@link System#getenv()}, read on every call
     * (cheap) so that an invalid value is reported where the settings are parsed.
     *
     * @return the rules
     * @throws AllocatorConfigException naming {@value #VARIABLE} when its value is invalid
     */
    public static PyTorchRules inForce() {
        return fromEnvironment(System.getenv());
    }
}
