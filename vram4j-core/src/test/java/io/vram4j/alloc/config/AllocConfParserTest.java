package io.vram4j.alloc.config;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Arrays;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.ValueSource;

class AllocConfParserTest {
    private static final long MIB = 1L << 20;

    private static AllocatorConfig parse(String conf) {
        return AllocatorConfig.DEFAULT.withRules(PyTorchRules.NEWEST).parse(conf);
    }

    private static int[] filled(int v) {
        int[] a = new int[AllocatorConfig.ROUNDUP_INTERVALS];
        Arrays.fill(a, v);
        return a;
    }

    /** Size class of a byte size: floor(log2(size)) - 20, clamped to 0..15 (spec 2.1). */
    private static int classOf(long size) {
        return Math.clamp(63 - Long.numberOfLeadingZeros(size) - 20, 0, AllocatorConfig.ROUNDUP_INTERVALS - 1);
    }

    // ---- lexer ------------------------------------------------------------------------------------------

    @Test
    void lexerSplitsSeparatorsDropsSpacesAndRecordsPositions() {
        List<AllocConfParser.Token> t = AllocConfParser.lex(" ab c:[1 6:2 ,>:4]");
        assertEquals(List.of("abc", ":", "[", "16", ":", "2", ",", ">", ":", "4", "]"),
                t.stream().map(AllocConfParser.Token::text).toList());
        assertEquals(List.of(1, 5, 6, 7, 10, 11, 13, 14, 15, 16, 17),
                t.stream().map(AllocConfParser.Token::pos).toList());
        assertEquals(List.of(), AllocConfParser.lex("    "));
    }

    // ---- defaults and simple values ---------------------------------------------------------------------

    @Test
    void defaultsMatchPyTorch() {
        AllocatorConfig c = AllocatorConfig.DEFAULT;
        assertEquals("", c.confString());
        assertEquals(AllocatorConfig.UNLIMITED, c.maxSplitSize());
        assertEquals(20 * MIB, c.maxNonSplitRounding());
        assertArrayEquals(filled(0), c.roundupPower2Divisions());
        assertEquals(0.0, c.garbageCollectionThreshold());
        assertFalse(c.expandableSegments());
        assertFalse(c.releaseLockOnCudaMalloc());
        assertFalse(c.pinnedUseCudaHostRegister());
        assertEquals(1, c.pinnedNumRegisterThreads());
        assertFalse(c.pinnedUseBackgroundThreads());
        assertEquals("native", c.backend());
        assertTrue(Double.isNaN(c.perProcessMemoryFraction()));
    }

    @Test
    void parsesEveryOption() {
        String conf = "backend:native,max_split_size_mb:128,max_non_split_rounding_mb:64,"
                + "roundup_power2_divisions:8,garbage_collection_threshold:0.6,expandable_segments:True,"
                + "release_lock_on_cudamalloc:True,pinned_use_cuda_host_register:True,"
                + "pinned_num_register_threads:16,pinned_use_background_threads:True,"
                + "per_process_memory_fraction:0.75,graph_capture_record_stream_reuse:True,"
                + "pinned_reserve_segment_size_mb:64";
        AllocatorConfig c = parse(conf);
        assertEquals(conf, c.confString());
        assertEquals("native", c.backend());
        assertEquals(128 * MIB, c.maxSplitSize());
        assertEquals(64 * MIB, c.maxNonSplitRounding());
        assertArrayEquals(filled(8), c.roundupPower2Divisions());
        assertEquals(0.6, c.garbageCollectionThreshold());
        assertTrue(c.expandableSegments());
        assertTrue(c.releaseLockOnCudaMalloc());
        assertTrue(c.pinnedUseCudaHostRegister());
        assertEquals(16, c.pinnedNumRegisterThreads());
        assertTrue(c.pinnedUseBackgroundThreads());
        assertEquals(0.75, c.perProcessMemoryFraction());
    }

    @Test
    void falseValuesAndRocmAliases() {
        AllocatorConfig on = parse("expandable_segments:True,release_lock_on_hipmalloc:True,"
                + "pinned_use_hip_host_register:True,pinned_use_background_threads:True");
        assertTrue(on.releaseLockOnCudaMalloc());
        assertTrue(on.pinnedUseCudaHostRegister());
        AllocatorConfig off = on.parse("expandable_segments:False,release_lock_on_cudamalloc:False,"
                + "pinned_use_cuda_host_register:False,pinned_use_background_threads:False");
        assertFalse(off.expandableSegments());
        assertFalse(off.releaseLockOnCudaMalloc());
        assertFalse(off.pinnedUseCudaHostRegister());
        assertFalse(off.pinnedUseBackgroundThreads());
    }

    @Test
    void optionsWithoutEffectAreAcceptedButChangeOnlyTheConfString() {
        AllocatorConfig c = parse("graph_capture_record_stream_reuse:False,pinned_reserve_segment_size_mb:1");
        assertEquals(AllocatorConfig.DEFAULT.toBuilder().confString(c.confString()).build(), c);
    }

    @ParameterizedTest
    @CsvSource({"21,22020096", "40,41943040", "2147483647,2251799812636672"})
    void maxSplitSizeIsStoredInBytes(String mb, long bytes) {
        assertEquals(bytes, parse("max_split_size_mb:" + mb).maxSplitSize());
        assertEquals(bytes, parse("max_non_split_rounding_mb:" + mb).maxNonSplitRounding());
    }

    @ParameterizedTest
    @CsvSource({"0.5,0.5", ".25,0.25", "5e-1,0.5", "0.999,0.999", "+0.1,0.1"})
    void garbageCollectionThresholdDecimals(String text, double expected) {
        assertEquals(expected, parse("garbage_collection_threshold:" + text).garbageCollectionThreshold());
    }

    @ParameterizedTest
    @CsvSource({"0,0.0", "1,1.0", "1.0,1.0", "0.25,0.25"})
    void perProcessMemoryFractionIsInclusive(String text, double expected) {
        assertEquals(expected, parse("per_process_memory_fraction:" + text).perProcessMemoryFraction());
    }

    @ParameterizedTest
    @ValueSource(ints = {1, 2, 4, 8, 16, 32, 64, 128})
    void pinnedNumRegisterThreadsPowersOfTwoUpTo128(int n) {
        assertEquals(n, parse("pinned_num_register_threads:" + n).pinnedNumRegisterThreads());
    }

    // ---- roundup_power2_divisions ------------------------------------------------------------------------

    @ParameterizedTest
    @ValueSource(ints = {1, 2, 4, 8, 16, 1024})
    void singleDivisionValueSetsAllSixteenClasses(int n) {
        assertArrayEquals(filled(n), parse("roundup_power2_divisions:" + n).roundupPower2Divisions());
    }

    @Test
    void listFormOfTestAllocatorSettings() {
        AllocatorConfig c = parse(
                "garbage_collection_threshold:0.5,roundup_power2_divisions:[64:8,128:2,256:2,512:2,1024:1,>:1]");
        // 64 is the first key: it also fills the classes below it; > fills from the last key's class (1024) on.
        assertArrayEquals(new int[] {8, 8, 8, 8, 8, 8, 8, 2, 2, 2, 1, 1, 1, 1, 1, 1}, c.roundupPower2Divisions());
        assertEquals(8, c.roundupPower2Divisions(6)); // [64 MiB, 128 MiB)
        assertEquals(2, c.roundupPower2Divisions(8)); // [256 MiB, 512 MiB)
        // spec 11.4 step 4: the 84 MiB tensor uses 8 divisions, the 400 MiB tensor 2
        assertEquals(8, c.roundupPower2Divisions(classOf(88_080_384L)));
        assertEquals(2, c.roundupPower2Divisions(classOf(419_430_400L)));
        assertEquals(0.5, c.garbageCollectionThreshold());
    }

    private static AllocatorConfig parse28(String conf) {
        return AllocatorConfig.DEFAULT.withRules(PyTorchRules.V2_8).parse(conf);
    }

    @Test
    void documentationExampleFollowsThePyTorch28Code() {
        int[] d = parse28("roundup_power2_divisions:[256:1,512:2,1024:4,>:8]").roundupPower2Divisions();
        // < 512 MiB -> 1; [512 MiB, 1 GiB) -> 2; [1 GiB, 2 GiB) -> 4 overwritten to 8 by '>'; >= 2 GiB -> 8
        assertArrayEquals(new int[] {1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 8, 8, 8, 8, 8, 8}, d);
        assertEquals(1, d[classOf(400 * MIB)]);
        assertEquals(2, d[classOf(600 * MIB)]);
        assertEquals(8, d[classOf(1536 * MIB)]);
        assertEquals(8, d[classOf(3L << 30)]);
    }

    @Test
    void listFormEdgeCases() {
        assertArrayEquals(filled(4), parse28("roundup_power2_divisions:[>:4]").roundupPower2Divisions());
        // '>' first does not count as the first key: 256 then fills the classes below it
        assertArrayEquals(new int[] {2, 2, 2, 2, 2, 2, 2, 2, 2, 4, 4, 4, 4, 4, 4, 4},
                parse("roundup_power2_divisions:[>:4,256:2]").roundupPower2Divisions());
        int[] one = filled(0);
        one[0] = 2;
        assertArrayEquals(one, parse("roundup_power2_divisions:[1:2]").roundupPower2Divisions());
        // keys above 32768 MiB are clamped into the last class
        assertArrayEquals(filled(4), parse("roundup_power2_divisions:[65536:4]").roundupPower2Divisions());
        assertArrayEquals(filled(2), parse("roundup_power2_divisions:[32768:2]").roundupPower2Divisions());
        // ≤2.8 rule: '>' overwrites the last key's own class (64 -> index 6)
        assertArrayEquals(new int[] {0, 0, 0, 0, 0, 0, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4},
                parse28("roundup_power2_divisions:[64:0,>:4]").roundupPower2Divisions());
        assertArrayEquals(filled(0), parse("roundup_power2_divisions:[]").roundupPower2Divisions());
        // trailing comma inside the list is tolerated, as in PyTorch
        assertArrayEquals(new int[] {8, 8, 8, 8, 8, 8, 8, 0, 0, 0, 0, 0, 0, 0, 0, 0},
                parse("roundup_power2_divisions:[64:8,]").roundupPower2Divisions());
    }

    // ---- reset / keep rules -----------------------------------------------------------------------------

    @Test
    void eachParseResetsTheThreeResettableOptions() {
        AllocatorConfig c1 = parse("roundup_power2_divisions:4");
        assertArrayEquals(filled(4), c1.roundupPower2Divisions());
        AllocatorConfig c2 = c1.parse("garbage_collection_threshold:0.5");
        assertArrayEquals(filled(0), c2.roundupPower2Divisions());
        assertEquals(0.5, c2.garbageCollectionThreshold());
        AllocatorConfig c3 = c2.parse("garbage_collection_threshold:0.5,max_split_size_mb:40");
        assertArrayEquals(filled(0), c3.roundupPower2Divisions());
        assertEquals(40 * MIB, c3.maxSplitSize());
        AllocatorConfig c4 = c3.parse("release_lock_on_cudamalloc:True");
        assertEquals(AllocatorConfig.UNLIMITED, c4.maxSplitSize());
        assertEquals(0.0, c4.garbageCollectionThreshold());
        assertTrue(c4.releaseLockOnCudaMalloc());
    }

    @Test
    void otherOptionsKeepTheirValues() {
        AllocatorConfig c = parse("expandable_segments:True,pinned_num_register_threads:8,"
                + "max_non_split_rounding_mb:64,per_process_memory_fraction:0.5,release_lock_on_cudamalloc:True");
        AllocatorConfig d = c.parse("max_split_size_mb:40");
        assertTrue(d.expandableSegments());
        assertEquals(8, d.pinnedNumRegisterThreads());
        assertEquals(64 * MIB, d.maxNonSplitRounding());
        assertEquals(0.5, d.perProcessMemoryFraction());
        assertTrue(d.releaseLockOnCudaMalloc());
        assertEquals("max_split_size_mb:40", d.confString());
    }

    @Test
    void nullAndEmptyOnlyReset() {
        AllocatorConfig c = parse("expandable_segments:True,max_split_size_mb:40,roundup_power2_divisions:2,"
                + "garbage_collection_threshold:0.3");
        for (String s : new String[] {"", null, "   "}) {
            AllocatorConfig d = c.parse(s);
            assertTrue(d.expandableSegments());
            assertEquals(AllocatorConfig.UNLIMITED, d.maxSplitSize());
            assertArrayEquals(filled(0), d.roundupPower2Divisions());
            assertEquals(0.0, d.garbageCollectionThreshold());
            assertEquals(s == null ? c.confString() : s, d.confString());
        }
        assertEquals(AllocatorConfig.DEFAULT, AllocatorConfig.DEFAULT.parse(""));
    }

    @Test
    void spacesAreIgnoredEverywhere() {
        String conf = " max_split_size_mb : 1 28 , expandable_segments : Tr ue , roundup_power2_divisions: [ 6 4 : 8 , > : 2 ] ";
        AllocatorConfig c = parse(conf);
        assertEquals(128 * MIB, c.maxSplitSize());
        assertTrue(c.expandableSegments());
        // 2.9: '>' starts after 64's class (6)
        assertArrayEquals(new int[] {8, 8, 8, 8, 8, 8, 8, 2, 2, 2, 2, 2, 2, 2, 2, 2}, c.roundupPower2Divisions());
        assertEquals(conf, c.confString());
    }

    @Test
    void trailingCommaIsTolerated() {
        assertTrue(parse("expandable_segments:True,").expandableSegments());
    }

    @Test
    void failedParseLeavesTheBaseIntact() {
        AllocatorConfig base = parse("expandable_segments:True,max_split_size_mb:40,roundup_power2_divisions:4");
        AllocatorConfig copy = base.toBuilder().build();
        assertThrows(AllocatorConfigException.class,
                () -> base.parse("expandable_segments:False,max_split_size_mb:64,foo:1"));
        assertEquals(copy, base);
        assertTrue(base.expandableSegments());
        assertEquals(40 * MIB, base.maxSplitSize());
        assertArrayEquals(filled(4), base.roundupPower2Divisions());
        base.roundupPower2Divisions()[0] = 99; // a copy
        assertEquals(4, base.roundupPower2Divisions(0));
    }

    // ---- settings map -------------------------------------------------------------------------------------

    @Test
    void settingsMapHasSnapshotKeysInOrder() {
        Map<String, Object> m = AllocatorConfig.DEFAULT.toSettingsMap();
        assertEquals(List.of("PYTORCH_CUDA_ALLOC_CONF", "max_split_size", "garbage_collection_threshold",
                "expandable_segments", "pinned_num_register_threads", "release_lock_on_cudamalloc",
                "pinned_use_cuda_host_register", "roundup_power2_divisions"), List.copyOf(m.keySet()));
        assertEquals("", m.get("PYTORCH_CUDA_ALLOC_CONF"));
        assertEquals(-1L, m.get("max_split_size"));
        assertEquals(0.0, m.get("garbage_collection_threshold"));
        assertEquals(false, m.get("expandable_segments"));
        assertEquals(1L, m.get("pinned_num_register_threads"));

        String conf = "max_split_size_mb:40,garbage_collection_threshold:0.25,expandable_segments:True,"
                + "pinned_num_register_threads:4,release_lock_on_cudamalloc:True,pinned_use_cuda_host_register:True,"
                + "roundup_power2_divisions:[256:1,512:2,1024:4,>:8]";
        Map<String, Object> s = parse(conf).toSettingsMap();
        assertEquals(conf, s.get("PYTORCH_CUDA_ALLOC_CONF"));
        assertEquals(40L << 20, s.get("max_split_size"));
        assertEquals(0.25, s.get("garbage_collection_threshold"));
        assertEquals(true, s.get("expandable_segments"));
        assertEquals(4L, s.get("pinned_num_register_threads"));
        assertEquals(true, s.get("release_lock_on_cudamalloc"));
        assertEquals(true, s.get("pinned_use_cuda_host_register"));
        @SuppressWarnings("unchecked")
        Map<String, Object> r = (Map<String, Object>) s.get("roundup_power2_divisions");
        assertEquals(List.of("1", "2", "4", "8", "16", "32", "64", "128", "256", "512", "1024", "2048", "4096",
                "8192", "16384", "32768"), List.copyOf(r.keySet()));
        assertEquals(1L, r.get("256"));
        assertEquals(2L, r.get("512"));
        assertEquals(4L, r.get("1024")); // 2.9: '>' no longer overwrites the last key's class
        assertEquals(8L, r.get("32768"));
        assertEquals(1L, r.get("1"));
    }

    @Test
    void settingsMapReadsBackAsTheSameSettings() {
        for (String conf : List.of("", "max_split_size_mb:40,garbage_collection_threshold:0.25,expandable_segments:True,"
                + "release_lock_on_cudamalloc:True,roundup_power2_divisions:[256:1,512:2,1024:4,>:8]",
                "roundup_power2_divisions:4,max_split_size_mb:64")) {
            AllocatorConfig c = parse(conf);
            assertEquals(c.toBuilder().confString("").build(), AllocatorConfig.fromSettingsMap(c.toSettingsMap()), conf);
        }
        assertEquals(AllocatorConfig.DEFAULT, AllocatorConfig.fromSettingsMap(Map.of()), "absent fields keep the defaults");
        Map<String, Object> bad = new java.util.HashMap<>(AllocatorConfig.DEFAULT.toSettingsMap());
        bad.put("max_split_size", "big");
        AllocatorConfigException e = assertThrows(AllocatorConfigException.class, () -> AllocatorConfig.fromSettingsMap(bad));
        assertEquals("allocator_settings.max_split_size: expected an integer, got big", e.getMessage());
    }

    // ---- fromEnvironment ---------------------------------------------------------------------------------

    @Test
    void environmentPrefersVram4jVariable() {
        assertEquals(AllocatorConfig.DEFAULT, AllocatorConfig.fromEnvironment(Map.of()));
        assertEquals(40 * MIB, AllocatorConfig.fromEnvironment(
                Map.of("PYTORCH_CUDA_ALLOC_CONF", "max_split_size_mb:40")).maxSplitSize());
        AllocatorConfig both = AllocatorConfig.fromEnvironment(Map.of(
                "VRAM4J_ALLOC_CONF", "max_split_size_mb:64", "PYTORCH_CUDA_ALLOC_CONF", "foo:1"));
        assertEquals(64 * MIB, both.maxSplitSize());
        assertEquals("max_split_size_mb:64", both.confString());
        // an empty VRAM4J_ALLOC_CONF still wins: it means "defaults"
        assertEquals(AllocatorConfig.DEFAULT, AllocatorConfig.fromEnvironment(Map.of(
                "VRAM4J_ALLOC_CONF", "", "PYTORCH_CUDA_ALLOC_CONF", "max_split_size_mb:40")));
    }

    @Test
    void environmentErrorsNameTheVariable() {
        AllocatorConfigException a = assertThrows(AllocatorConfigException.class,
                () -> AllocatorConfig.fromEnvironment(Map.of("VRAM4J_ALLOC_CONF", "max_split_size_mb:2")));
        assertTrue(a.getMessage().startsWith(
                "VRAM4J_ALLOC_CONF: CachingAllocator option max_split_size_mb too small, must be >= 20"), a.getMessage());
        AllocatorConfigException b = assertThrows(AllocatorConfigException.class,
                () -> AllocatorConfig.fromEnvironment(Map.of("PYTORCH_CUDA_ALLOC_CONF", "expandable_segments:yes")));
        assertTrue(b.getMessage().startsWith(
                "PYTORCH_CUDA_ALLOC_CONF: Expected a single True/False argument for expandable_segments"),
                b.getMessage());
        assertTrue(b.getMessage().contains("got 'yes'"), b.getMessage());
    }

    @Test
    void equalityDependsOnValues() {
        assertNotEquals(parse("max_split_size_mb:40"), parse("max_split_size_mb:41"));
        assertEquals(parse("max_split_size_mb:40"), parse("max_split_size_mb:40"));
    }
}
