package io.vram4j.alloc.config;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.regex.Pattern;

/**
 * Parser for the {@code PYTORCH_ALLOC_CONF} / {@code PYTORCH_CUDA_ALLOC_CONF} string format (spec section 7.2),
 * written from the behaviour of PyTorch's settings parsers: {@code CUDAAllocatorConfig::parseArgs} of releases
 * 2.4 – 2.8 and the {@code AcceleratorAllocatorConfig} of 2.9, selected by {@link PyTorchRules} (the differences
 * are listed there).
 *
 * <h2>Lexer and grammar</h2>
 * The characters {@code , : [ ]} are single-character tokens; space characters ({@code ' '} only, as PyTorch)
 * are deleted everywhere, so {@code "max_split_size_mb : 1 28"} reads as {@code max_split_size_mb:128}; every
 * other run of characters is one token. The grammar is {@code key:value(,key:value)*}; like PyTorch, a single
 * trailing comma is tolerated ({@code "expandable_segments:True,"}), and so is a trailing comma inside a
 * roundup list.
 *
 * <h2>Reset rule</h2>
 * Each parse first resets {@code max_split_size} (unlimited), all {@code roundup_power2_divisions} (0) and
 * {@code garbage_collection_threshold} (0); every other option keeps the base config's value unless given.
 *
 * <h2>{@code roundup_power2_divisions} list form</h2>
 * {@code [K:N,...,>:N]}: {@code K} is a power of two in MiB and names the size class [K MiB, 2K MiB) (class index
 * log2(K), clamped to 0..15); {@code N} is 0 or a power of two. The first listed {@code K} also fills every lower
 * class. {@code >:N} fills every class after the last listed key's class ({@link PyTorchRules#V2_9}); under
 * {@link PyTorchRules#V2_8} it starts at that class itself, overwriting its value, so that
 * {@code [256:1,512:2,1024:4,>:8]} gives 4 divisions for [1 GiB, 2 GiB) under 2.9 and 8 under 2.8. Before any
 * key the "last key's class" is class 0, so a leading {@code >:N} fills every class under 2.8 and every class but
 * [1 MiB, 2 MiB) under 2.9.
 *
 * <h2>Where vram4j differs (stricter, never more permissive)</h2>
 * <ul>
 *   <li>Numbers must be whole tokens: PyTorch's {@code stoi("40abc")} reads 40, vram4j rejects the token.
 *       Integers must fit a 32-bit {@code int} as with {@code stoi} (interval keys: a 64-bit long).</li>
 *   <li>Negative integers are rejected by the option's own range check (PyTorch converts them to a huge
 *       {@code size_t} and may accept them).</li>
 *   <li>An unterminated roundup list ({@code "[64:8"}) is a syntax error (undefined behaviour in PyTorch).</li>
 *   <li>{@code backend:cudaMallocAsync} is rejected: vram4j implements the native backend only.</li>
 *   <li>The newer options {@code per_process_memory_fraction}, {@code graph_capture_record_stream_reuse} and
 *       {@code pinned_reserve_segment_size_mb} are accepted and validated; the last two have no effect.</li>
 *   <li>A failed parse changes nothing (PyTorch may have applied the options before the bad one).</li>
 * </ul>
 *
 * <h2>Messages</h2>
 * Every {@link AllocatorConfigException} message starts with PyTorch's own text of the selected release (e.g.
 * {@code "CachingAllocator option max_split_size_mb too small, must be >= 20"} under 2.9), followed by a parenthesised
 * explanation naming the option, what it accepts, the offending token, its character position and the whole
 * string. Stateless and thread-safe.
 */
final class AllocConfParser {
    /** The option names vram4j accepts, listed in error messages for unknown keys. */
    static final List<String> KNOWN_OPTIONS = List.of(
            "backend", "max_split_size_mb", "max_non_split_rounding_mb", "roundup_power2_divisions",
            "garbage_collection_threshold", "expandable_segments", "release_lock_on_cudamalloc",
            "pinned_use_cuda_host_register", "pinned_num_register_threads", "pinned_use_background_threads",
            "per_process_memory_fraction", "graph_capture_record_stream_reuse", "pinned_reserve_segment_size_mb");

    /** Upper bound of {@code pinned_num_register_threads} (PyTorch's pinned_max_register_threads()). */
    static final int PINNED_MAX_REGISTER_THREADS = 128;
    /** {@code kLargeBuffer / 1 MiB}: the lower bound of the two *_mb size options (exclusive in 2.8, inclusive in 2.9). */
    private static final int LARGE_BUFFER_MB = 20;

    private static final Pattern INTEGER = Pattern.compile("[+-]?[0-9]+");
    private static final Pattern DECIMAL = Pattern.compile("[+-]?([0-9]+(\\.[0-9]*)?|\\.[0-9]+)([eE][+-]?[0-9]+)?");

    private AllocConfParser() {
    }

    /**
     * Applies {@code conf} on top of {@code base}.
     *
     * @param base  the config to start from; never modified
     * @param rules the release whose rules apply
     * @param conf the string, or {@code null}: {@code null} and {@code ""} both only reset the three resettable
     *     options (as PyTorch's parseArgs without / with an empty value); {@code null} keeps base's conf string
     * @return the new config
     * @throws AllocatorConfigException if the string is invalid
     */
    static AllocatorConfig parse(AllocatorConfig base, PyTorchRules rules, String conf) {
        AllocatorConfig.Builder b = base.toBuilder();
        b.maxSplitSize = AllocatorConfig.UNLIMITED;
        b.roundupPower2Divisions = new int[AllocatorConfig.ROUNDUP_INTERVALS];
        b.garbageCollectionThreshold = 0.0;
        if (conf == null) {
            return b.build();
        }
        b.confString = conf;
        new Run(conf, rules, b).parseAll();
        return b.build();
    }

    /** One token and the index of its first character in the original string. */
    record Token(String text, int pos) {
        boolean is(char c) {
            return text.length() == 1 && text.charAt(0) == c;
        }

        boolean isPunctuation() {
            return text.length() == 1 && isSeparator(text.charAt(0));
        }
    }

    private static boolean isSeparator(char c) {
        return c == ',' || c == ':' || c == '[' || c == ']';
    }

    /**
     * PyTorch's {@code lexArgs}: {@code , : [ ]} are single-character tokens, spaces are dropped, every other
     * run of characters is one token.
     */
    static List<Token> lex(String conf) {
        List<Token> out = new ArrayList<>();
        StringBuilder buf = new StringBuilder();
        int start = -1;
        for (int i = 0; i < conf.length(); i++) {
            char c = conf.charAt(i);
            if (isSeparator(c)) {
                if (!buf.isEmpty()) {
                    out.add(new Token(buf.toString(), start));
                    buf.setLength(0);
                }
                out.add(new Token(String.valueOf(c), i));
            } else if (c != ' ') {
                if (buf.isEmpty()) {
                    start = i;
                }
                buf.append(c);
            }
        }
        if (!buf.isEmpty()) {
            out.add(new Token(buf.toString(), start));
        }
        return out;
    }

    /** State of one parse. */
    private static final class Run {
        private final String conf;
        private final List<Token> tokens;
        private final AllocatorConfig.Builder b;
        private final boolean v28;

        Run(String conf, PyTorchRules rules, AllocatorConfig.Builder b) {
            this.conf = conf;
            this.v28 = rules == PyTorchRules.V2_8;
            this.tokens = lex(conf);
            this.b = b;
        }

        void parseAll() {
            int n = tokens.size();
            for (int i = 0; i < n; i++) {
                Token keyTok = tokens.get(i);
                String key = keyTok.text();
                i = switch (key) {
                    case "max_split_size_mb" -> {
                        int j = mbValue(i, key);
                        b.maxSplitSize = (long) intAt(j) << 20;
                        yield j;
                    }
                    case "max_non_split_rounding_mb" -> {
                        int j = mbValue(i, key);
                        b.maxNonSplitRounding = (long) intAt(j) << 20;
                        yield j;
                    }
                    case "garbage_collection_threshold" -> garbageCollectionThreshold(i);
                    case "roundup_power2_divisions" -> roundupPower2Divisions(i);
                    case "backend" -> backend(i);
                    case "expandable_segments" -> {
                        int j = bool(i, "expandable_segments", false);
                        b.expandableSegments = isTrue(j);
                        yield j;
                    }
                    case "release_lock_on_cudamalloc", "release_lock_on_hipmalloc" -> {
                        int j = bool(i, "release_lock_on_cudamalloc", false);
                        b.releaseLockOnCudaMalloc = isTrue(j);
                        yield j;
                    }
                    case "pinned_use_cuda_host_register", "pinned_use_hip_host_register" -> {
                        int j = bool(i, "pinned_use_cuda_host_register", true);
                        b.pinnedUseCudaHostRegister = isTrue(j);
                        yield j;
                    }
                    case "pinned_use_background_threads" -> {
                        int j = bool(i, "pinned_use_background_threads", true);
                        b.pinnedUseBackgroundThreads = isTrue(j);
                        yield j;
                    }
                    case "graph_capture_record_stream_reuse" -> bool(i, "graph_capture_record_stream_reuse", true);
                    case "pinned_num_register_threads" -> pinnedNumRegisterThreads(i);
                    case "per_process_memory_fraction" -> perProcessMemoryFraction(i);
                    case "pinned_reserve_segment_size_mb" -> pinnedReserveSegmentSize(i);
                    default -> throw error(v28 ? "Unrecognized CachingAllocator option: " + key
                                    : "Unrecognized key '" + key + "' in CUDA allocator config.",
                            (keyTok.isPunctuation() ? "expected an option name; " : "")
                                    + "known options: " + String.join(", ", KNOWN_OPTIONS),
                            i);
                };
                if (i + 1 < n) {
                    expect(++i, ',', "options are separated by commas: key:value,key:value");
                }
            }
        }

        // ---- options -------------------------------------------------------------------------------------

        /**
         * max_split_size_mb / max_non_split_rounding_mb: integer MiB, > 20 (2.8) or >= 20 (2.9). Returns the value
         * token index.
         */
        private int mbValue(int i, String key) {
            String accepts = key + " accepts an integer number of MiB " + (v28 ? "greater than " : "of at least ")
                    + LARGE_BUFFER_MB;
            expect(++i, ':', key + " needs a value: " + key + ":<MiB>");
            int j = valueToken(++i, "Error, expecting " + key + " value", accepts);
            int v = parseInt(j, key, accepts);
            if (v28 ? v <= LARGE_BUFFER_MB : v < LARGE_BUFFER_MB) {
                throw error("CachingAllocator option " + key + " too small, must be " + (v28 ? "> " : ">= ")
                                + LARGE_BUFFER_MB,
                        "got " + v + "; " + accepts, j);
            }
            return j;
        }

        private int garbageCollectionThreshold(int i) {
            String key = "garbage_collection_threshold";
            String accepts = key + " accepts a decimal strictly between 0.0 and 1.0";
            expect(++i, ':', key + " needs a value: " + key + ":<fraction>");
            int j = valueToken(++i, "Error, expecting " + key + " value", accepts);
            double v = parseDecimal(j, key, accepts);
            String got = "got " + tokens.get(j).text() + "; " + accepts;
            if (!v28 && !(v > 0 && v < 1.0)) {
                throw error("garbage_collect_threshold is invalid, set it in (0.0, 1.0)", got, j);
            }
            if (!(v > 0)) {
                throw error("garbage_collect_threshold too small, set it 0.0~1.0", got, j);
            }
            if (!(v < 1.0)) {
                throw error("garbage_collect_threshold too big, set it 0.0~1.0", got, j);
            }
            b.garbageCollectionThreshold = v;
            return j;
        }

        private int roundupPower2Divisions(int i) {
            String key = "roundup_power2_divisions";
            String accepts = key + " accepts a power of two N, or a list [K:N,...,>:N] where K is a power of"
                    + " two in MiB and N is 0 or a power of two";
            expect(++i, ':', key + " needs a value: " + key + ":N or " + key + ":[K:N,...,>:N]");
            int n = tokens.size();
            if (++i < n && tokens.get(i).is('[')) {
                int[] div = b.roundupPower2Divisions;
                int lastIndex = 0;
                boolean firstValue = true;
                while (++i < n && !tokens.get(i).is(']')) {
                    int keyIdx = i;
                    String interval = tokens.get(i).text();
                    expect(++i, ':', "each list entry is K:N or >:N");
                    if (i + 1 >= n || tokens.get(i + 1).isPunctuation()) {
                        throw error("Error parsing roundup_power2_divisions value", "missing N after "
                                + interval + ":; " + accepts, i + 1);
                    }
                    int valIdx = ++i;
                    int val = parseInt(valIdx, key, accepts);
                    if (val != 0 && !isPowerOfTwo(val)) {
                        throw error("For roundups, the divisions has to be power of 2 or 0 to disable roundup ",
                                "got " + val + " for " + interval + "; " + accepts, valIdx);
                    }
                    if (interval.equals(">")) {
                        // 2.8 starts at the last key's class, 2.9 after it (the class of key 1 MiB before any key)
                        int from = v28 ? lastIndex : lastIndex + 1;
                        Arrays.fill(div, from, div.length, val);
                    } else {
                        long k = intervalValue(keyIdx, accepts);
                        int index = Math.min(63 - Long.numberOfLeadingZeros(k), div.length - 1);
                        if (firstValue) {
                            Arrays.fill(div, 0, index, val);
                            firstValue = false;
                        }
                        div[index] = val;
                        lastIndex = index;
                    }
                    if (i + 1 >= n) {
                        throw unterminated(i + 1);
                    }
                    if (!tokens.get(i + 1).is(']')) {
                        expect(++i, ',', "list entries are separated by commas and the list ends with ]");
                    }
                }
                if (i >= n) {
                    throw unterminated(i);
                }
                return i;
            }
            int j = valueToken(i, "Error, expecting " + key + " value", accepts);
            int v = parseInt(j, key, accepts);
            if (!isPowerOfTwo(v)) {
                throw error("For roundups, the divisions has to be power of 2 ", "got " + v + "; " + accepts, j);
            }
            Arrays.fill(b.roundupPower2Divisions, v);
            return j;
        }

        private AllocatorConfigException unterminated(int i) {
            return error("Error parsing CachingAllocator settings, expected ]",
                    "the roundup_power2_divisions list opened with [ is not closed", i);
        }

        /** An interval key K of the roundup list: a power of two (MiB) that fits a long. */
        private long intervalValue(int idx, String accepts) {
            String text = tokens.get(idx).text();
            String pytorch = "For roundups, the intervals have to be power of 2 ";
            if (!INTEGER.matcher(text).matches()) {
                throw error(pytorch, "got '" + text + "', expected a power of two in MiB or >; " + accepts, idx);
            }
            long k;
            try {
                k = Long.parseLong(text);
            } catch (NumberFormatException e) {
                throw error(pytorch, "'" + text + "' is out of range; " + accepts, idx);
            }
            if (!isPowerOfTwo(k)) {
                throw error(pytorch, "got " + k + "; " + accepts, idx);
            }
            return k;
        }

        private int backend(int i) {
            String accepts = "backend accepts native (vram4j implements the native backend only)";
            expect(++i, ':', "backend needs a value: backend:native");
            int j = valueToken(++i, "Error parsing backend value", accepts);
            String v = tokens.get(j).text();
            if (v.equals("cudaMallocAsync")) {
                throw error("backend:cudaMallocAsync is not supported: vram4j implements the native backend only",
                        accepts, j);
            }
            if (!v.equals("native")) {
                throw error("Unknown allocator backend, options are native and cudaMallocAsync",
                        "got '" + v + "'; " + accepts, j);
            }
            b.backend = "native";
            return j;
        }

        private int pinnedNumRegisterThreads(int i) {
            String key = "pinned_num_register_threads";
            String accepts = key + " accepts a power of two from 1 to " + PINNED_MAX_REGISTER_THREADS;
            expect(++i, ':', key + " needs a value: " + key + ":<threads>");
            int j = valueToken(++i, "Error, expecting " + key + " value", accepts);
            int v = parseInt(j, key, accepts);
            if (!isPowerOfTwo(v)) {
                throw error("Number of register threads has to be power of 2 ", "got " + v + "; " + accepts, j);
            }
            if (v > PINNED_MAX_REGISTER_THREADS) {
                throw error("Number of register threads should be less than or equal to "
                        + PINNED_MAX_REGISTER_THREADS, "got " + v + "; " + accepts, j);
            }
            b.pinnedNumRegisterThreads = v;
            return j;
        }

        private int perProcessMemoryFraction(int i) {
            String key = "per_process_memory_fraction";
            String accepts = key + " accepts a decimal from 0.0 to 1.0 inclusive";
            expect(++i, ':', key + " needs a value: " + key + ":<fraction>");
            int j = valueToken(++i, "Error, expecting " + key + " value", accepts);
            double v = parseDecimal(j, key, accepts);
            if (!(v >= 0.0 && v <= 1.0)) {
                throw error("per_process_memory_fraction is invalid, set it in [0.0, 1.0]",
                        "got " + tokens.get(j).text() + "; " + accepts, j);
            }
            b.perProcessMemoryFraction = v;
            return j;
        }

        /** Validated only: vram4j has no pinned host allocator reserve (no effect). */
        private int pinnedReserveSegmentSize(int i) {
            String key = "pinned_reserve_segment_size_mb";
            String accepts = key + " accepts an integer number of MiB greater than 0";
            expect(++i, ':', key + " needs a value: " + key + ":<MiB>");
            int j = valueToken(++i, "Error, expecting " + key + " value", accepts);
            int v = parseInt(j, key, accepts);
            if (v <= 0) {
                throw error("Pinned reserve segment size has to be greater than 0", "got " + v + "; " + accepts, j);
            }
            return j;
        }

        /**
         * A True/False option. {@code separateMissingMessage}: PyTorch's helper-function options report a missing
         * value as "Error, expecting KEY value"; expandable_segments and release_lock_on_cudamalloc always say
         * "Expected a single True/False argument for KEY".
         */
        private int bool(int i, String key, boolean separateMissingMessage) {
            String accepts = key + " accepts exactly True or False";
            String wrong = "Expected a single True/False argument for " + key;
            expect(++i, ':', key + " needs a value: " + key + ":True or " + key + ":False");
            int j = valueToken(++i, separateMissingMessage ? "Error, expecting " + key + " value" : wrong, accepts);
            String v = tokens.get(j).text();
            if (!v.equals("True") && !v.equals("False")) {
                throw error(wrong, "got '" + v + "'; " + accepts, j);
            }
            return j;
        }

        // ---- token helpers -----------------------------------------------------------------------------

        private boolean isTrue(int j) {
            return tokens.get(j).text().equals("True");
        }

        private int intAt(int j) {
            return Integer.parseInt(tokens.get(j).text());
        }

        /** Checks that token {@code i} exists and is not a separator; returns {@code i}. */
        private int valueToken(int i, String missingMessage, String accepts) {
            if (i >= tokens.size()) {
                throw error(missingMessage, "no value; " + accepts, i);
            }
            if (tokens.get(i).isPunctuation()) {
                throw error(missingMessage, "found '" + tokens.get(i).text() + "' instead of a value; " + accepts, i);
            }
            return i;
        }

        /** As C++ {@code stoi}, but the whole token must be the number. */
        private int parseInt(int j, String key, String accepts) {
            String text = tokens.get(j).text();
            if (!INTEGER.matcher(text).matches()) {
                throw error("Invalid value '" + text + "' for " + key, "not an integer; " + accepts, j);
            }
            try {
                return Integer.parseInt(text);
            } catch (NumberFormatException e) {
                throw error("Invalid value '" + text + "' for " + key,
                        "integer out of range [" + Integer.MIN_VALUE + ", " + Integer.MAX_VALUE + "]; " + accepts, j);
            }
        }

        /** As C++ {@code stod}, but the whole token must be a plain decimal number. */
        private double parseDecimal(int j, String key, String accepts) {
            String text = tokens.get(j).text();
            if (!DECIMAL.matcher(text).matches()) {
                throw error("Invalid value '" + text + "' for " + key, "not a decimal number; " + accepts, j);
            }
            return Double.parseDouble(text);
        }

        /** PyTorch's consumeToken. */
        private void expect(int i, char c, String hint) {
            if (i < tokens.size() && tokens.get(i).is(c)) {
                return;
            }
            String found = i < tokens.size() ? "found '" + tokens.get(i).text() + "'" : "found the end of the string";
            throw error("Error parsing CachingAllocator settings, expected " + c, found + "; " + hint, i);
        }

        /**
         * Builds the exception: PyTorch's text, then "(detail; at character N of "conf")", where N is the 0-based
         * index of token {@code tokenIndex} (or "at the end of" when past the last token).
         */
        private AllocatorConfigException error(String pytorchText, String detail, int tokenIndex) {
            String where = tokenIndex < tokens.size()
                    ? "at character " + tokens.get(tokenIndex).pos() + " of \"" + conf + "\""
                    : "at the end of \"" + conf + "\"";
            String sep = pytorchText.endsWith(" ") ? "" : " ";
            return new AllocatorConfigException(pytorchText + sep + "(" + detail + "; " + where + ")");
        }
    }

    private static boolean isPowerOfTwo(long v) {
        return v > 0 && (v & (v - 1)) == 0;
    }
}
