package io.vram4j.alloc.config;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.vram4j.alloc.CachingAllocator;
import io.vram4j.device.DeviceBackend;
import io.vram4j.device.Devices;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Conformance of the two rule sets: what PyTorch 2.9's {@code AcceleratorAllocatorConfig} changed against 2.8's
 * {@code CUDAAllocatorConfig::parseArgs} (spec 7.1 and 7.3), pinned side by side, and where the rules come from.
 */
class PyTorchRulesTest {
    private static final long MIB = 1L << 20;
    private static final AllocatorConfig V28 = AllocatorConfig.DEFAULT.withRules(PyTorchRules.V2_8);
    private static final AllocatorConfig V29 = AllocatorConfig.DEFAULT.withRules(PyTorchRules.V2_9);

    private static String rejected(AllocatorConfig base, String conf) {
        return assertThrows(AllocatorConfigException.class, () -> base.parse(conf)).getMessage();
    }

    // ---- max_split_size_mb / max_non_split_rounding_mb: > 20 (2.8), >= 20 (2.9) --------------------------

    @Test
    void maxSplitSizeOf20IsAcceptedBy29Only() {
        assertEquals(20 * MIB, V29.parse("max_split_size_mb:20").maxSplitSize());
        assertEquals(20 * MIB, V29.parse("max_non_split_rounding_mb:20").maxNonSplitRounding());
        assertTrue(rejected(V28, "max_split_size_mb:20")
                .startsWith("CachingAllocator option max_split_size_mb too small, must be > 20 ("));
        assertTrue(rejected(V28, "max_non_split_rounding_mb:20")
                .startsWith("CachingAllocator option max_non_split_rounding_mb too small, must be > 20 ("));
    }

    @ParameterizedTest
    @ValueSource(strings = {"19", "0", "-5"})
    void below20Is29sMessage(String v) {
        String m = rejected(V29, "max_split_size_mb:" + v);
        assertTrue(m.startsWith("CachingAllocator option max_split_size_mb too small, must be >= 20 (got " + v
                + "; max_split_size_mb accepts an integer number of MiB of at least 20"), m);
    }

    // ---- the '>' entry of a roundup_power2_divisions list --------------------------------------------------

    @Test
    void documentationExampleUnder29KeepsFourDivisionsForOneToTwoGiB() {
        // 256 -> class 8 (and fills 0..7), 512 -> 9, 1024 -> 10; 2.9's '>' starts after class 10
        assertArrayEquals(new int[] {1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 4, 8, 8, 8, 8, 8},
                V29.parse("roundup_power2_divisions:[256:1,512:2,1024:4,>:8]").roundupPower2Divisions());
        assertArrayEquals(new int[] {1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 8, 8, 8, 8, 8, 8},
                V28.parse("roundup_power2_divisions:[256:1,512:2,1024:4,>:8]").roundupPower2Divisions());
    }

    @Test
    void greaterThanEdgeCasesUnder29() {
        // before any key the last class is 0: 2.9 fills from class 1, 2.8 from class 0
        assertArrayEquals(new int[] {0, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4},
                V29.parse("roundup_power2_divisions:[>:4]").roundupPower2Divisions());
        assertArrayEquals(new int[] {0, 0, 0, 0, 0, 0, 0, 4, 4, 4, 4, 4, 4, 4, 4, 4},
                V29.parse("roundup_power2_divisions:[64:0,>:4]").roundupPower2Divisions());
        // the last class named: nothing is left for '>' under 2.9; 2.8 overwrites it
        int[] twos = new int[16];
        java.util.Arrays.fill(twos, 2);
        assertArrayEquals(twos, V29.parse("roundup_power2_divisions:[32768:2,>:8]").roundupPower2Divisions());
        twos[15] = 8;
        assertArrayEquals(twos, V28.parse("roundup_power2_divisions:[32768:2,>:8]").roundupPower2Divisions());
    }

    /** The rule reaches the allocator: a 1100 MiB request rounds to 1280 MiB with 4 divisions, 1152 with 8. */
    @Test
    void greaterThanRuleChangesTheBlockSize() {
        String conf = "roundup_power2_divisions:[256:1,512:2,1024:4,>:8]";
        assertEquals(1280 * MIB, allocatedFor(V29.parse(conf), 1100 * MIB));
        assertEquals(1152 * MIB, allocatedFor(V28.parse(conf), 1100 * MIB));
    }

    private static long allocatedFor(AllocatorConfig config, long request) {
        try (DeviceBackend device = Devices.open("sim:8GiB")) {
            CachingAllocator a = CachingAllocator.create(device, config);
            long p = a.malloc(request);
            long allocated = a.memoryAllocated();
            a.free(p);
            a.close();
            return allocated;
        }
    }

    // ---- messages that changed ---------------------------------------------------------------------------

    @ParameterizedTest
    @ValueSource(strings = {"1.2", "0", "1.0"})
    void garbageCollectionThresholdMessageOf29(String v) {
        String m = rejected(V29, "garbage_collection_threshold:" + v);
        assertTrue(m.startsWith("garbage_collect_threshold is invalid, set it in (0.0, 1.0) (got " + v), m);
    }

    @Test
    void unknownKeyMessageOf29() {
        String m = rejected(V29, "foo:1,bar:2");
        assertTrue(m.startsWith("Unrecognized key 'foo' in CUDA allocator config. (known options: backend, "), m);
        assertTrue(rejected(V28, "foo:1").startsWith("Unrecognized CachingAllocator option: foo ("));
    }

    @Test
    void laterParsesKeepTheRules() {
        AllocatorConfig c = V28.parse("expandable_segments:True");
        assertEquals(PyTorchRules.V2_8, c.rules());
        assertThrows(AllocatorConfigException.class, () -> c.parse("max_split_size_mb:20"));
        assertEquals(V29.parse("expandable_segments:True"), c); // equal settings, whatever the rules
    }

    // ---- where the rules and the string come from -------------------------------------------------------

    @Test
    void rulesVariable() {
        assertEquals(PyTorchRules.V2_9, PyTorchRules.fromEnvironment(Map.of()));
        assertEquals(PyTorchRules.V2_9, PyTorchRules.fromEnvironment(Map.of("VRAM4J_PYTORCH_RULES", "")));
        assertEquals(PyTorchRules.V2_8, PyTorchRules.fromEnvironment(Map.of("VRAM4J_PYTORCH_RULES", "2.8")));
        assertEquals(PyTorchRules.V2_8, PyTorchRules.fromEnvironment(Map.of("VRAM4J_PYTORCH_RULES", "2.5")));
        assertEquals(PyTorchRules.V2_9, PyTorchRules.fromEnvironment(Map.of("VRAM4J_PYTORCH_RULES", " 2.9 ")));
        for (String bad : new String[] {"3.0", "2.3", "newest", "2.8.1"}) {
            AllocatorConfigException e = assertThrows(AllocatorConfigException.class,
                    () -> PyTorchRules.fromEnvironment(Map.of("VRAM4J_PYTORCH_RULES", bad)));
            assertEquals("VRAM4J_PYTORCH_RULES: expected a PyTorch version, 2.8 (the rules of 2.4 to 2.8) or 2.9"
                    + " (the newest, the default), got '" + bad + "'", e.getMessage());
        }
    }

    @Test
    void settingsVariableOrder() {
        Map<String, String> all = Map.of("VRAM4J_ALLOC_CONF", "max_split_size_mb:64",
                "PYTORCH_ALLOC_CONF", "max_split_size_mb:32", "PYTORCH_CUDA_ALLOC_CONF", "max_split_size_mb:40");
        assertEquals(64 * MIB, AllocatorConfig.fromEnvironment(all).maxSplitSize());
        Map<String, String> pytorch = Map.of(
                "PYTORCH_ALLOC_CONF", "max_split_size_mb:32", "PYTORCH_CUDA_ALLOC_CONF", "max_split_size_mb:40");
        assertEquals(32 * MIB, AllocatorConfig.fromEnvironment(pytorch).maxSplitSize());
        assertEquals("PYTORCH_ALLOC_CONF", AllocatorConfig.settingsVariable(pytorch, PyTorchRules.V2_9));
        // the deprecated variable alone is still read
        assertEquals(40 * MIB, AllocatorConfig.fromEnvironment(
                Map.of("PYTORCH_CUDA_ALLOC_CONF", "max_split_size_mb:40")).maxSplitSize());
        // 2.8 does not know PYTORCH_ALLOC_CONF
        Map<String, String> old = Map.of("VRAM4J_PYTORCH_RULES", "2.8",
                "PYTORCH_ALLOC_CONF", "max_split_size_mb:32", "PYTORCH_CUDA_ALLOC_CONF", "max_split_size_mb:40");
        assertEquals(40 * MIB, AllocatorConfig.fromEnvironment(old).maxSplitSize());
        assertNull(AllocatorConfig.settingsVariable(Map.of("PYTORCH_ALLOC_CONF", "x"), PyTorchRules.V2_8));
    }

    @Test
    void environmentPicksTheRulesAndNamesTheVariable() {
        AllocatorConfig newest = AllocatorConfig.fromEnvironment(Map.of("PYTORCH_ALLOC_CONF", "max_split_size_mb:20"));
        assertEquals(20 * MIB, newest.maxSplitSize());
        assertEquals(PyTorchRules.V2_9, newest.rules());
        AllocatorConfigException e = assertThrows(AllocatorConfigException.class, () -> AllocatorConfig.fromEnvironment(
                Map.of("VRAM4J_PYTORCH_RULES", "2.8", "PYTORCH_CUDA_ALLOC_CONF", "max_split_size_mb:20")));
        assertTrue(e.getMessage().startsWith(
                "PYTORCH_CUDA_ALLOC_CONF: CachingAllocator option max_split_size_mb too small, must be > 20"),
                e.getMessage());
        assertEquals(PyTorchRules.V2_8,
                AllocatorConfig.fromEnvironment(Map.of("VRAM4J_PYTORCH_RULES", "2.8")).rules());
    }
}
