package io.vram4j.alloc.config;

import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * Immutable settings of the caching allocator, with the option names and value formats of PyTorch's
 * {@code PYTORCH_CUDA_ALLOC_CONF} (spec section 7).
 *
 * <p>Parse a string with {@link #parse(String)} on top of an existing config: as PyTorch does, each parse
 * first resets {@code max_split_size_mb}, {@code roundup_power2_divisions} and
 * {@code garbage_collection_threshold} to their defaults, while other options keep their previous values
 * unless given again. Invalid strings throw {@link AllocatorConfigException} and leave nothing changed.
 *
 * <p>Sizes are bytes. Instances are immutable and thread-safe.
 */
public final class AllocatorConfig {
    /** Number of size classes for {@code roundup_power2_divisions}: 1 MiB, 2 MiB, ... 32 GiB and above. */
    public static final int ROUNDUP_INTERVALS = 16;
    /** {@code max_split_size} value meaning "unlimited" (PyTorch's SIZE_MAX; reported as -1 in stats). */
    public static final long UNLIMITED = Long.MAX_VALUE;
    /** Default {@code max_non_split_rounding}: 20 MiB (kLargeBuffer). */
    public static final long DEFAULT_MAX_NON_SPLIT_ROUNDING = 20L << 20;

    /** Defaults: every option at PyTorch's default, empty conf string. */
    public static final AllocatorConfig DEFAULT = new Builder().build();

    private final String confString;
    private final long maxSplitSize;
    private final long maxNonSplitRounding;
    private final int[] roundupPower2Divisions;
    private final double garbageCollectionThreshold;
    private final boolean expandableSegments;
    private final boolean releaseLockOnCudaMalloc;
    private final boolean pinnedUseCudaHostRegister;
    private final int pinnedNumRegisterThreads;
    private final boolean pinnedUseBackgroundThreads;
    private final String backend;
    private final double perProcessMemoryFraction;
    /** The parser rules given by {@link #withRules}; {@code null}: the rules in force at each parse. */
    private final PyTorchRules rules;

    private AllocatorConfig(Builder b) {
        this.rules = b.rules;
        this.confString = b.confString;
        this.maxSplitSize = b.maxSplitSize;
        this.maxNonSplitRounding = b.maxNonSplitRounding;
        this.roundupPower2Divisions = b.roundupPower2Divisions.clone();
        this.garbageCollectionThreshold = b.garbageCollectionThreshold;
        this.expandableSegments = b.expandableSegments;
        this.releaseLockOnCudaMalloc = b.releaseLockOnCudaMalloc;
        this.pinnedUseCudaHostRegister = b.pinnedUseCudaHostRegister;
        this.pinnedNumRegisterThreads = b.pinnedNumRegisterThreads;
        this.pinnedUseBackgroundThreads = b.pinnedUseBackgroundThreads;
        this.backend = b.backend;
        this.perProcessMemoryFraction = b.perProcessMemoryFraction;
    }

    /**
     * Applies a {@code PYTORCH_ALLOC_CONF}-format string on top of this config, following the settings parser of
     * the PyTorch release {@link #rules()} names (2.9 unless {@value PyTorchRules#VARIABLE} or {@link #withRules}
     * select 2.8; the differences are listed on {@link PyTorchRules}; grammar, options, the {@code >} rule of
     * roundup lists and the few places where vram4j is stricter are described on the package-private
     * {@code AllocConfParser}).
     * {@code max_split_size}, {@code roundup_power2_divisions} and {@code garbage_collection_threshold} are reset
     * to their defaults first; the result's {@link #confString()} is {@code conf}.
     *
     * @param conf e.g. {@code "max_split_size_mb:128,roundup_power2_divisions:[256:1,>:4]"}; spaces are ignored;
     *     {@code null} or {@code ""} only reset the three options above ({@code null} keeps the conf string)
     * @return the new config (this one is unchanged)
     * @throws AllocatorConfigException naming the option and what it accepts, when the string is invalid, or naming
     *     {@value PyTorchRules#VARIABLE} when that is invalid
     */
    public AllocatorConfig parse(String conf) {
        return AllocConfParser.parse(this, rules(), conf);
    }

    /**
     * The PyTorch release whose parser rules {@link #parse} follows: the one given to {@link #withRules}, else the
     * rules in force ({@link PyTorchRules#inForce()}: {@value PyTorchRules#VARIABLE}, default 2.9).
     *
     * @return the rules
     * @throws AllocatorConfigException when no rules were given and {@value PyTorchRules#VARIABLE} is invalid
     */
    public PyTorchRules rules() {
        return rules != null ? rules : PyTorchRules.inForce();
    }

    /**
     * This config with later {@link #parse} calls following {@code rules} whatever the environment says; the
     * settings themselves are unchanged.
     *
     * @param rules the release, e.g. {@link PyTorchRules#V2_8} for recordings made with PyTorch 2.4 – 2.8
     * @return the new config
     */
    public AllocatorConfig withRules(PyTorchRules rules) {
        Builder b = toBuilder();
        b.rules = Objects.requireNonNull(rules, "rules");
        return b.build();
    }

    /**
     * The environment variable {@link #fromEnvironment} takes the settings from: the first one set of
     * {@code VRAM4J_ALLOC_CONF}, {@code PYTORCH_ALLOC_CONF} (read by PyTorch 2.9 and newer only) and
     * {@code PYTORCH_CUDA_ALLOC_CONF} (deprecated since 2.9, the only one 2.8 reads). An empty value counts as set.
     *
     * @param env   the environment
     * @param rules the release whose order applies
     * @return the variable's name, or {@code null} when none is set
     */
    public static String settingsVariable(Map<String, String> env, PyTorchRules rules) {
        List<String> order = rules == PyTorchRules.V2_8
                ? List.of("VRAM4J_ALLOC_CONF", "PYTORCH_CUDA_ALLOC_CONF")
                : List.of("VRAM4J_ALLOC_CONF", "PYTORCH_ALLOC_CONF", "PYTORCH_CUDA_ALLOC_CONF");
        for (String name : order) {
            if (env.get(name) != null) {
                return name;
            }
        }
        return null;
    }

    /**
     * Reads the settings from the environment: the rules from {@value PyTorchRules#VARIABLE} (default 2.9), the
     * string from the variable {@link #settingsVariable} names ({@code VRAM4J_ALLOC_CONF}, then
     * {@code PYTORCH_ALLOC_CONF}, then the deprecated {@code PYTORCH_CUDA_ALLOC_CONF}; under 2.8 rules
     * {@code PYTORCH_ALLOC_CONF} is not read, as PyTorch 2.8 does not). Taking the deprecated variable logs the
     * warning PyTorch prints ("PYTORCH_CUDA_ALLOC_CONF is deprecated, use PYTORCH_ALLOC_CONF instead") under 2.9
     * rules, at level WARNING of the {@code System.Logger} named after this class.
     *
     * @param env the environment (normally {@link System#getenv()})
     * @return the parsed config, pinned to the rules read, or the defaults under those rules when no variable is set
     * @throws AllocatorConfigException naming the variable when its value is invalid
     */
    public static AllocatorConfig fromEnvironment(Map<String, String> env) {
        PyTorchRules rules = PyTorchRules.fromEnvironment(env);
        AllocatorConfig base = DEFAULT.withRules(rules);
        String name = settingsVariable(env, rules);
        if (name == null) {
            return base;
        }
        if (name.equals("PYTORCH_CUDA_ALLOC_CONF") && rules != PyTorchRules.V2_8) {
            System.getLogger(AllocatorConfig.class.getName()).log(System.Logger.Level.WARNING,
                    "PYTORCH_CUDA_ALLOC_CONF is deprecated, use PYTORCH_ALLOC_CONF instead");
        }
        try {
            return base.parse(env.get(name));
        } catch (AllocatorConfigException e) {
            throw new AllocatorConfigException(name + ": " + e.getMessage(), e);
        }
    }

    /** @return the last parsed string, shown in snapshots as {@code allocator_settings["PYTORCH_CUDA_ALLOC_CONF"]} */
    public String confString() {
        return confString;
    }

    /** @return {@code max_split_size} in bytes, or {@link #UNLIMITED} */
    public long maxSplitSize() {
        return maxSplitSize;
    }

    /** @return {@code max_non_split_rounding} in bytes (default 20 MiB) */
    public long maxNonSplitRounding() {
        return maxNonSplitRounding;
    }

    /**
     * @param classIndex size class, 0 = [1 MiB, 2 MiB) ... 15 = 32 GiB and above
     * @return the divisions for that class; 0 or 1 = no power-of-two rounding
     */
    public int roundupPower2Divisions(int classIndex) {
        return roundupPower2Divisions[classIndex];
    }

    /** @return a copy of the 16 division values */
    public int[] roundupPower2Divisions() {
        return roundupPower2Divisions.clone();
    }

    /** @return {@code garbage_collection_threshold}, 0 = off */
    public double garbageCollectionThreshold() {
        return garbageCollectionThreshold;
    }

    /** @return {@code expandable_segments} */
    public boolean expandableSegments() {
        return expandableSegments;
    }

    /** @return {@code release_lock_on_cudamalloc} */
    public boolean releaseLockOnCudaMalloc() {
        return releaseLockOnCudaMalloc;
    }

    /** @return {@code pinned_use_cuda_host_register} */
    public boolean pinnedUseCudaHostRegister() {
        return pinnedUseCudaHostRegister;
    }

    /** @return {@code pinned_num_register_threads} (default 1) */
    public int pinnedNumRegisterThreads() {
        return pinnedNumRegisterThreads;
    }

    /** @return {@code pinned_use_background_threads} */
    public boolean pinnedUseBackgroundThreads() {
        return pinnedUseBackgroundThreads;
    }

    /** @return {@code backend}: {@code "native"} (default) or {@code "cudaMallocAsync"} */
    public String backend() {
        return backend;
    }

    /** @return {@code per_process_memory_fraction} in [0, 1], or NaN when not given */
    public double perProcessMemoryFraction() {
        return perProcessMemoryFraction;
    }

    /**
     * The {@code allocator_settings} dict of a memory snapshot, as PyTorch's {@code _snapshot()} builds it
     * (spec 10.2), in this key order:
     * {@code PYTORCH_CUDA_ALLOC_CONF} (String, the last parsed string), {@code max_split_size} (Long bytes,
     * -1 when unlimited), {@code garbage_collection_threshold} (Double), {@code expandable_segments} (Boolean),
     * {@code pinned_num_register_threads} (Long), {@code release_lock_on_cudamalloc} (Boolean),
     * {@code pinned_use_cuda_host_register} (Boolean) and {@code roundup_power2_divisions} (a map from the
     * class's lower bound in MiB as a string, "1", "2", "4", ... "32768", to its divisions as Long).
     * Integral values are Longs because PyTorch stores them as int64.
     *
     * @return a new, modifiable {@link LinkedHashMap}
     */
    public Map<String, Object> toSettingsMap() {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("PYTORCH_CUDA_ALLOC_CONF", confString);
        m.put("max_split_size", maxSplitSize == UNLIMITED ? -1L : maxSplitSize);
        m.put("garbage_collection_threshold", garbageCollectionThreshold);
        m.put("expandable_segments", expandableSegments);
        m.put("pinned_num_register_threads", (long) pinnedNumRegisterThreads);
        m.put("release_lock_on_cudamalloc", releaseLockOnCudaMalloc);
        m.put("pinned_use_cuda_host_register", pinnedUseCudaHostRegister);
        Map<String, Object> roundup = new LinkedHashMap<>();
        for (int i = 0; i < ROUNDUP_INTERVALS; i++) {
            roundup.put(Long.toString(1L << i), (long) roundupPower2Divisions[i]);
        }
        m.put("roundup_power2_divisions", roundup);
        return m;
    }

    /**
     * Settings from the structured fields of a snapshot's {@code allocator_settings} (spec 10.2), the inverse of
     * {@link #toSettingsMap()}; the replay uses it when the snapshot's {@code PYTORCH_CUDA_ALLOC_CONF} string is
     * empty or absent (settings applied with
     * {@code _set_allocator_settings} or by other means still show in the fields): {@code max_split_size} (bytes,
     * -1 = unlimited), {@code max_non_split_rounding} (bytes, newer versions), {@code garbage_collection_threshold}
     * (a fraction, 0 = off), {@code expandable_segments}, {@code release_lock_on_cudamalloc}, and
     * {@code roundup_power2_divisions} (a dict from a class's lower bound in MiB, "1" ... "32768", to its
     * divisions). Absent fields keep their defaults.
     *
     * @param settings the {@code allocator_settings} dict, possibly empty
     * @return the settings, with an empty {@code PYTORCH_CUDA_ALLOC_CONF} string
     * @throws AllocatorConfigException when a field has the wrong type or an invalid value, naming the field
     */
    public static AllocatorConfig fromSettingsMap(Map<String, Object> settings) {
        Builder b = DEFAULT.toBuilder();
        Object v = settings.get("max_split_size");
        if (v != null) {
            long bytes = integer("max_split_size", v);
            if (bytes != -1 && bytes <= 0) {
                throw new AllocatorConfigException("allocator_settings.max_split_size: expected -1 or a positive byte count, got " + bytes);
            }
            b.maxSplitSize(bytes == -1 ? UNLIMITED : bytes);
        }
        v = settings.get("max_non_split_rounding");
        if (v != null) {
            long bytes = integer("max_non_split_rounding", v);
            if (bytes <= 0) {
                throw new AllocatorConfigException("allocator_settings.max_non_split_rounding: expected a positive byte count, got " + bytes);
            }
            b.maxNonSplitRounding(bytes);
        }
        v = settings.get("garbage_collection_threshold");
        if (v != null) {
            if (!(v instanceof Number n)) {
                throw new AllocatorConfigException("allocator_settings.garbage_collection_threshold: expected a number, got " + v);
            }
            double t = n.doubleValue();
            if (!(t >= 0 && t < 1)) {
                throw new AllocatorConfigException("allocator_settings.garbage_collection_threshold: expected 0 (off) or a fraction in (0, 1), got " + t);
            }
            b.garbageCollectionThreshold(t);
        }
        v = settings.get("expandable_segments");
        if (v != null) {
            b.expandableSegments(bool("expandable_segments", v));
        }
        v = settings.get("release_lock_on_cudamalloc");
        if (v != null) {
            b.releaseLockOnCudaMalloc(bool("release_lock_on_cudamalloc", v));
        }
        v = settings.get("roundup_power2_divisions");
        if (v != null) {
            if (!(v instanceof Map<?, ?> m)) {
                throw new AllocatorConfigException("allocator_settings.roundup_power2_divisions: expected a dict, got " + v);
            }
            for (Map.Entry<?, ?> e : m.entrySet()) {
                String field = "allocator_settings.roundup_power2_divisions['" + e.getKey() + "']";
                long mib;
                try {
                    mib = Long.parseLong(String.valueOf(e.getKey()));
                } catch (NumberFormatException ex) {
                    throw new AllocatorConfigException(field + ": expected a power of two in MiB as the key");
                }
                if (mib <= 0 || Long.bitCount(mib) != 1 || Long.numberOfTrailingZeros(mib) >= ROUNDUP_INTERVALS) {
                    throw new AllocatorConfigException(field + ": expected a power of two from 1 to 32768 MiB as the key");
                }
                long n = integer(field.substring("allocator_settings.".length()), e.getValue());
                if (n < 0 || (n != 0 && Long.bitCount(n) != 1) || n > Integer.MAX_VALUE) {
                    throw new AllocatorConfigException(field + ": expected 0 or a power of two, got " + n);
                }
                b.roundupPower2Divisions(Long.numberOfTrailingZeros(mib), (int) n);
            }
        }
        return b.confString("").build();
    }

    private static long integer(String field, Object v) {
        if (v instanceof Integer || v instanceof Long) {
            return ((Number) v).longValue();
        }
        if (v instanceof java.math.BigInteger big) {
            return big.longValue(); // SIZE_MAX stored as uint64 by some versions: -1 as int64
        }
        throw new AllocatorConfigException("allocator_settings." + field + ": expected an integer, got " + v);
    }

    private static boolean bool(String field, Object v) {
        if (v instanceof Boolean on) {
            return on;
        }
        throw new AllocatorConfigException("allocator_settings." + field + ": expected True or False, got " + v);
    }

    /** @return a builder holding this config's values */
    public Builder toBuilder() {
        Builder b = new Builder();
        b.confString = confString;
        b.maxSplitSize = maxSplitSize;
        b.maxNonSplitRounding = maxNonSplitRounding;
        b.roundupPower2Divisions = roundupPower2Divisions.clone();
        b.garbageCollectionThreshold = garbageCollectionThreshold;
        b.expandableSegments = expandableSegments;
        b.releaseLockOnCudaMalloc = releaseLockOnCudaMalloc;
        b.pinnedUseCudaHostRegister = pinnedUseCudaHostRegister;
        b.pinnedNumRegisterThreads = pinnedNumRegisterThreads;
        b.pinnedUseBackgroundThreads = pinnedUseBackgroundThreads;
        b.backend = backend;
        b.perProcessMemoryFraction = perProcessMemoryFraction;
        b.rules = rules;
        return b;
    }

    /** Equal settings; the parser rules of later parses ({@link #withRules}) are not compared. */
    @Override
    public boolean equals(Object o) {
        return o instanceof AllocatorConfig c
                && confString.equals(c.confString)
                && maxSplitSize == c.maxSplitSize
                && maxNonSplitRounding == c.maxNonSplitRounding
                && Arrays.equals(roundupPower2Divisions, c.roundupPower2Divisions)
                && Double.compare(garbageCollectionThreshold, c.garbageCollectionThreshold) == 0
                && expandableSegments == c.expandableSegments
                && releaseLockOnCudaMalloc == c.releaseLockOnCudaMalloc
                && pinnedUseCudaHostRegister == c.pinnedUseCudaHostRegister
                && pinnedNumRegisterThreads == c.pinnedNumRegisterThreads
                && pinnedUseBackgroundThreads == c.pinnedUseBackgroundThreads
                && backend.equals(c.backend)
                && Double.compare(perProcessMemoryFraction, c.perProcessMemoryFraction) == 0;
    }

    @Override
    public int hashCode() {
        return Objects.hash(confString, maxSplitSize, Arrays.hashCode(roundupPower2Divisions), expandableSegments);
    }

    @Override
    public String toString() {
        return "AllocatorConfig[" + (confString.isEmpty() ? "defaults" : confString) + "]";
    }

    /** Mutable builder; used by the parser and by programmatic set-up. Not thread-safe. */
    public static final class Builder {
        String confString = "";
        long maxSplitSize = UNLIMITED;
        long maxNonSplitRounding = DEFAULT_MAX_NON_SPLIT_ROUNDING;
        int[] roundupPower2Divisions = new int[ROUNDUP_INTERVALS];
        double garbageCollectionThreshold = 0.0;
        boolean expandableSegments = false;
        boolean releaseLockOnCudaMalloc = false;
        boolean pinnedUseCudaHostRegister = false;
        int pinnedNumRegisterThreads = 1;
        boolean pinnedUseBackgroundThreads = false;
        String backend = "native";
        double perProcessMemoryFraction = Double.NaN;
        PyTorchRules rules;

        /** @param v the string to report as the last parsed conf @return this */
        public Builder confString(String v) { confString = v; return this; }
        /** @param bytes {@code max_split_size} in bytes or {@link #UNLIMITED} @return this */
        public Builder maxSplitSize(long bytes) { maxSplitSize = bytes; return this; }
        /** @param bytes {@code max_non_split_rounding} in bytes @return this */
        public Builder maxNonSplitRounding(long bytes) { maxNonSplitRounding = bytes; return this; }
        /** @param classIndex 0..15 @param divisions 0 or a power of two @return this */
        public Builder roundupPower2Divisions(int classIndex, int divisions) { roundupPower2Divisions[classIndex] = divisions; return this; }
        /** @param t threshold in (0, 1), 0 = off @return this */
        public Builder garbageCollectionThreshold(double t) { garbageCollectionThreshold = t; return this; }
        /** @param on {@code expandable_segments} @return this */
        public Builder expandableSegments(boolean on) { expandableSegments = on; return this; }
        /** @param on {@code release_lock_on_cudamalloc} @return this */
        public Builder releaseLockOnCudaMalloc(boolean on) { releaseLockOnCudaMalloc = on; return this; }
        /** @param on {@code pinned_use_cuda_host_register} @return this */
        public Builder pinnedUseCudaHostRegister(boolean on) { pinnedUseCudaHostRegister = on; return this; }
        /** @param n power of two ≤ 128 @return this */
        public Builder pinnedNumRegisterThreads(int n) { pinnedNumRegisterThreads = n; return this; }
        /** @param on {@code pinned_use_background_threads} @return this */
        public Builder pinnedUseBackgroundThreads(boolean on) { pinnedUseBackgroundThreads = on; return this; }
        /** @param name {@code native} or {@code cudaMallocAsync} @return this */
        public Builder backend(String name) { backend = name; return this; }
        /** @param f fraction in [0, 1] or NaN for none @return this */
        public Builder perProcessMemoryFraction(double f) { perProcessMemoryFraction = f; return this; }

        /** @return the immutable config */
        public AllocatorConfig build() {
            return new AllocatorConfig(this);
        }
    }
}
