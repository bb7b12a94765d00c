package io.vram4j.alloc.config;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Strings that must be rejected, and the wording of the messages, under PyTorch 2.8's rules (the 2.9 wording of the
 * messages that changed is pinned by {@link PyTorchRulesTest}).
 */
class AllocConfParserErrorTest {
    private static final AllocatorConfig V28 = AllocatorConfig.DEFAULT.withRules(PyTorchRules.V2_8);
    private static final String MAX_SPLIT_ACCEPTS = "max_split_size_mb accepts an integer number of MiB greater than 20";
    private static final String ROUNDUP_ACCEPTS = "roundup_power2_divisions accepts a power of two N, or a list"
            + " [K:N,...,>:N] where K is a power of two in MiB and N is 0 or a power of two";
    private static final String GC_ACCEPTS = "garbage_collection_threshold accepts a decimal strictly between 0.0 and 1.0";
    private static final String THREADS_ACCEPTS = "pinned_num_register_threads accepts a power of two from 1 to 128";

    /**
     * Parses {@code conf} expecting a failure whose message starts with PyTorch's text, contains every fragment
     * and quotes the whole string.
     */
    private static String assertRejected(String conf, String pytorchText, String... fragments) {
        AllocatorConfigException e = assertThrows(AllocatorConfigException.class,
                () -> V28.parse(conf));
        String m = e.getMessage();
        assertTrue(m.startsWith(pytorchText), () -> "message should start with <" + pytorchText + ">: " + m);
        for (String f : fragments) {
            assertTrue(m.contains(f), () -> "message should contain <" + f + ">: " + m);
        }
        assertTrue(m.contains("\"" + conf + "\""), () -> "message should quote the string: " + m);
        return m;
    }

    // ---- the must-raise strings of test_allocator_settings (spec 11.4 step 6) ---------------------------------

    @Test
    void unknownOptionListsTheKnownOnes() {
        String m = assertRejected("foo:1,bar:2", "Unrecognized CachingAllocator option: foo (known options: backend, ");
        for (String known : AllocConfParser.KNOWN_OPTIONS) {
            assertTrue(m.contains(known), known);
        }
        assertTrue(m.contains("at character 0 of"), m);
    }

    @Test
    void garbageCollectionThresholdTooBig() {
        assertRejected("garbage_collection_threshold:1.2", "garbage_collect_threshold too big, set it 0.0~1.0",
                "got 1.2", GC_ACCEPTS);
    }

    @Test
    void maxSplitSizeTooSmallFullMessage() {
        AllocatorConfigException e = assertThrows(AllocatorConfigException.class,
                () -> V28.parse("max_split_size_mb:2"));
        assertEquals("CachingAllocator option max_split_size_mb too small, must be > 20 (got 2; " + MAX_SPLIT_ACCEPTS
                + "; at character 18 of \"max_split_size_mb:2\")", e.getMessage());
    }

    @Test
    void releaseLockNone() {
        assertRejected("release_lock_on_cudamalloc:none",
                "Expected a single True/False argument for release_lock_on_cudamalloc",
                "got 'none'", "release_lock_on_cudamalloc accepts exactly True or False");
    }

    @Test
    void pinnedUseCudaHostRegisterNone() {
        assertRejected("pinned_use_cuda_host_register:none",
                "Expected a single True/False argument for pinned_use_cuda_host_register",
                "got 'none'", "pinned_use_cuda_host_register accepts exactly True or False");
    }

    @Test
    void pinnedNumRegisterThreadsNone() {
        assertRejected("pinned_num_register_threads:none", "Invalid value 'none' for pinned_num_register_threads",
                "not an integer", THREADS_ACCEPTS);
    }

    @Test
    void pinnedNumRegisterThreadsTooMany() {
        assertRejected("pinned_num_register_threads:1024",
                "Number of register threads should be less than or equal to 128", "got 1024", THREADS_ACCEPTS);
    }

    // ---- more bad values ----------------------------------------------------------------------------------

    @ParameterizedTest
    @ValueSource(strings = {"0", "3", "-4", "96"})
    void pinnedNumRegisterThreadsNotPowerOfTwo(String v) {
        assertRejected("pinned_num_register_threads:" + v, "Number of register threads has to be power of 2 (got "
                + v + ";", THREADS_ACCEPTS);
    }

    @ParameterizedTest
    @ValueSource(strings = {"20", "0", "-5", "-2147483648"})
    void maxSplitSizeAtOrBelow20(String v) {
        assertRejected("max_split_size_mb:" + v, "CachingAllocator option max_split_size_mb too small, must be > 20",
                "got " + v + ";", MAX_SPLIT_ACCEPTS);
    }

    @Test
    void maxNonSplitRoundingTooSmall() {
        assertRejected("max_non_split_rounding_mb:20",
                "CachingAllocator option max_non_split_rounding_mb too small, must be > 20",
                "max_non_split_rounding_mb accepts an integer number of MiB greater than 20");
    }

    @ParameterizedTest
    @ValueSource(strings = {"abc", "40abc", "4.5", "0x40", "1e3"})
    void maxSplitSizeNotAnInteger(String v) {
        assertRejected("max_split_size_mb:" + v, "Invalid value '" + v + "' for max_split_size_mb",
                "not an integer", MAX_SPLIT_ACCEPTS);
    }

    @ParameterizedTest
    @ValueSource(strings = {"2147483648", "99999999999999999999999", "-9223372036854775809"})
    void integersOutOfRange(String v) {
        assertRejected("max_split_size_mb:" + v, "Invalid value '" + v + "' for max_split_size_mb",
                "integer out of range", MAX_SPLIT_ACCEPTS);
        assertRejected("roundup_power2_divisions:" + v, "Invalid value '" + v + "' for roundup_power2_divisions",
                "integer out of range", ROUNDUP_ACCEPTS);
    }

    @ParameterizedTest
    @ValueSource(strings = {"0", "0.0", "-0.5"})
    void garbageCollectionThresholdTooSmall(String v) {
        assertRejected("garbage_collection_threshold:" + v, "garbage_collect_threshold too small, set it 0.0~1.0",
                "got " + v + ";", GC_ACCEPTS);
    }

    @ParameterizedTest
    @ValueSource(strings = {"1", "1.0", "1e999"})
    void garbageCollectionThresholdOneOrMore(String v) {
        assertRejected("garbage_collection_threshold:" + v, "garbage_collect_threshold too big, set it 0.0~1.0",
                GC_ACCEPTS);
    }

    @ParameterizedTest
    @ValueSource(strings = {"nan", "half", "0.5.1", "0.5f"})
    void garbageCollectionThresholdNotADecimal(String v) {
        assertRejected("garbage_collection_threshold:" + v, "Invalid value '" + v + "' for garbage_collection_threshold",
                "not a decimal number", GC_ACCEPTS);
    }

    @ParameterizedTest
    @ValueSource(strings = {"true", "TRUE", "1", "yes", "False!"})
    void booleansAreExactlyTrueOrFalse(String v) {
        assertRejected("expandable_segments:" + v, "Expected a single True/False argument for expandable_segments",
                "got '" + v + "'", "expandable_segments accepts exactly True or False");
        assertRejected("pinned_use_background_threads:" + v,
                "Expected a single True/False argument for pinned_use_background_threads",
                "pinned_use_background_threads accepts exactly True or False");
        assertRejected("graph_capture_record_stream_reuse:" + v,
                "Expected a single True/False argument for graph_capture_record_stream_reuse");
    }

    @Test
    void onlySpacesAreDeletedNotTabs() {
        assertRejected("expandable_segments:\tTrue", "Expected a single True/False argument for expandable_segments");
    }

    @ParameterizedTest
    @ValueSource(strings = {"3", "0", "-2", "6"})
    void singleDivisionsMustBePowersOfTwo(String v) {
        assertRejected("roundup_power2_divisions:" + v, "For roundups, the divisions has to be power of 2 (got " + v,
                ROUNDUP_ACCEPTS);
    }

    @ParameterizedTest
    @ValueSource(strings = {"3", "-8", "12"})
    void listDivisionsMustBeZeroOrPowersOfTwo(String v) {
        assertRejected("roundup_power2_divisions:[64:" + v + ",>:1]",
                "For roundups, the divisions has to be power of 2 or 0 to disable roundup (got " + v + " for 64",
                ROUNDUP_ACCEPTS);
        assertRejected("roundup_power2_divisions:[>:" + v + "]",
                "For roundups, the divisions has to be power of 2 or 0 to disable roundup (got " + v + " for >");
    }

    @ParameterizedTest
    @ValueSource(strings = {"100", "0", "-64", "abc", "48", "[", "99999999999999999999"})
    void listIntervalsMustBePowersOfTwo(String k) {
        assertRejected("roundup_power2_divisions:[" + k + ":4]", "For roundups, the intervals have to be power of 2 ",
                ROUNDUP_ACCEPTS);
    }

    @Test
    void listEntryWithoutDivisions() {
        assertRejected("roundup_power2_divisions:[64:]", "Error parsing roundup_power2_divisions value",
                "missing N after 64:", ROUNDUP_ACCEPTS);
        assertRejected("roundup_power2_divisions:[64:", "Error parsing roundup_power2_divisions value");
        assertRejected("roundup_power2_divisions:[64]", "Error parsing CachingAllocator settings, expected : (found ']'",
                "each list entry is K:N or >:N");
    }

    @Test
    void unbalancedBrackets() {
        for (String conf : new String[] {"roundup_power2_divisions:[64:8", "roundup_power2_divisions:[64:8,128:2",
                "roundup_power2_divisions:[64:8,", "roundup_power2_divisions:[",
                "roundup_power2_divisions:[64:8,expandable_segments:True"}) {
            String m;
            try {
                V28.parse(conf);
                throw new AssertionError("accepted " + conf);
            } catch (AllocatorConfigException e) {
                m = e.getMessage();
            }
            // the last string reads "expandable_segments" as a list key, then fails on its value "True"
            assertTrue(m.startsWith("Error parsing CachingAllocator settings, expected ")
                    || m.startsWith("Invalid value 'True' for roundup_power2_divisions"), m);
            assertTrue(m.contains("\"" + conf + "\""), m);
        }
        assertRejected("roundup_power2_divisions:[64:8", "Error parsing CachingAllocator settings, expected ]",
                "the roundup_power2_divisions list opened with [ is not closed", "at the end of");
        assertRejected("roundup_power2_divisions:[64:8]]", "Error parsing CachingAllocator settings, expected , (found ']'");
        assertRejected("roundup_power2_divisions:64:8]", "Error parsing CachingAllocator settings, expected , (found ':'");
        assertRejected("roundup_power2_divisions:[64:8 128:2]", "For roundups, the divisions has to be power of 2 or 0",
                "got 8128");
    }

    @Test
    void missingValues() {
        assertRejected("max_split_size_mb:", "Error, expecting max_split_size_mb value", "no value", MAX_SPLIT_ACCEPTS,
                "at the end of");
        assertRejected("max_split_size_mb:,expandable_segments:True", "Error, expecting max_split_size_mb value",
                "found ',' instead of a value", "at character 18");
        assertRejected("garbage_collection_threshold:", "Error, expecting garbage_collection_threshold value", GC_ACCEPTS);
        assertRejected("roundup_power2_divisions:", "Error, expecting roundup_power2_divisions value", ROUNDUP_ACCEPTS);
        assertRejected("roundup_power2_divisions:]", "Error, expecting roundup_power2_divisions value");
        assertRejected("pinned_num_register_threads:", "Error, expecting pinned_num_register_threads value",
                THREADS_ACCEPTS);
        assertRejected("expandable_segments:", "Expected a single True/False argument for expandable_segments",
                "no value");
        assertRejected("release_lock_on_cudamalloc:", "Expected a single True/False argument for release_lock_on_cudamalloc");
        assertRejected("pinned_use_cuda_host_register:", "Error, expecting pinned_use_cuda_host_register value");
        assertRejected("backend:", "Error parsing backend value", "backend accepts native");
        assertRejected("per_process_memory_fraction:", "Error, expecting per_process_memory_fraction value");
    }

    @Test
    void missingColon() {
        assertRejected("max_split_size_mb", "Error parsing CachingAllocator settings, expected : (found the end of the string",
                "max_split_size_mb needs a value: max_split_size_mb:<MiB>");
        assertRejected("expandable_segments=True", "Unrecognized CachingAllocator option: expandable_segments=True");
        assertRejected("expandable_segments,True", "Error parsing CachingAllocator settings, expected : (found ','",
                "expandable_segments needs a value");
    }

    @Test
    void missingComma() {
        assertRejected("roundup_power2_divisions:[64:8]expandable_segments:True",
                "Error parsing CachingAllocator settings, expected , (found 'expandable_segments'",
                "options are separated by commas", "at character 31");
        assertRejected("expandable_segments:True:False",
                "Error parsing CachingAllocator settings, expected , (found ':'");
        // without a separator the value and the next key run together into one token
        assertRejected("max_split_size_mb:40 expandable_segments:True", "Invalid value '40expandable_segments' for max_split_size_mb");
    }

    @Test
    void strayPunctuationWhereAnOptionIsExpected() {
        assertRejected(",expandable_segments:True", "Unrecognized CachingAllocator option: , (expected an option name; known options: ");
        assertRejected("expandable_segments:True,,max_split_size_mb:40",
                "Unrecognized CachingAllocator option: , (expected an option name", "at character 25");
    }

    @Test
    void errorPositionPointsAtTheOffendingToken() {
        assertRejected("expandable_segments:True, foo:1", "Unrecognized CachingAllocator option: foo",
                "at character 26 of \"expandable_segments:True, foo:1\"");
    }

    @Test
    void backends() {
        assertRejected("backend:cudaMallocAsync",
                "backend:cudaMallocAsync is not supported: vram4j implements the native backend only",
                "backend accepts native");
        assertRejected("backend:hipMallocAsync", "Unknown allocator backend, options are native and cudaMallocAsync",
                "got 'hipMallocAsync'", "vram4j implements the native backend only");
        assertRejected("backend:Native", "Unknown allocator backend, options are native and cudaMallocAsync");
    }

    @ParameterizedTest
    @ValueSource(strings = {"1.5", "-0.1", "2"})
    void perProcessMemoryFractionOutOfRange(String v) {
        assertRejected("per_process_memory_fraction:" + v, "per_process_memory_fraction is invalid, set it in [0.0, 1.0]",
                "got " + v, "per_process_memory_fraction accepts a decimal from 0.0 to 1.0 inclusive");
    }

    @ParameterizedTest
    @ValueSource(strings = {"0", "-1"})
    void pinnedReserveSegmentSizeMustBePositive(String v) {
        assertRejected("pinned_reserve_segment_size_mb:" + v, "Pinned reserve segment size has to be greater than 0",
                "pinned_reserve_segment_size_mb accepts an integer number of MiB greater than 0");
    }
}
