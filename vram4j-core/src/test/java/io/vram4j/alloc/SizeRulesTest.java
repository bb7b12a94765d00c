package io.vram4j.alloc;

import io.vram4j.alloc.config.AllocatorConfig;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import static org.junit.jupiter.api.Assertions.assertEquals;

/** The worked values of spec 2.1 and 2.2. */
class SizeRulesTest {

    private static AllocatorConfig divisions(int n) {
        AllocatorConfig.Builder b = AllocatorConfig.DEFAULT.toBuilder();
        for (int i = 0; i < AllocatorConfig.ROUNDUP_INTERVALS; i++) {
            b.roundupPower2Divisions(i, n);
        }
        return b.build();
    }

    @ParameterizedTest
    @CsvSource({
        "1, 4, 512",
        "1200, 4, 1536",
        "2048, 4, 2048",
        "2049, 4, 2560",
        "1000000, 2, 1048576",
        "88080384, 4, 100663296",
        "88080384, 8, 92274688",
        "419430400, 2, 536870912",
        "88080384, 0, 88080384",
        "88080384, 1, 88080384",
        "513, 0, 1024",
    })
    void roundSizeWorkedValues(long size, int n, long expected) {
        assertEquals(expected, SizeRules.roundSize(size, divisions(n)));
    }

    @ParameterizedTest
    @CsvSource({"1200, 4, 1280", "1024, 4, 1024", "3, 4, 4", "1025, 1024, 1025"})
    void nextDivisionHelper(long size, int n, long expected) {
        assertEquals(expected, SizeRules.roundupPower2NextDivision(size, n));
    }

    @ParameterizedTest
    @CsvSource({
        "512, 2097152", "1048576, 2097152", "1049088, 20971520", "10485248, 20971520",
        "10485760, 10485760", "10486272, 12582912", "209715200, 209715200",
    })
    void allocationSize(long rounded, long segment) {
        assertEquals(segment, SizeRules.allocationSize(rounded));
    }

    @ParameterizedTest
    @CsvSource({"1, 0", "2097151, 0", "2097152, 1", "88080384, 6", "419430400, 8", "34359738368, 15", "4611686018427387904, 15"})
    void intervalIndex(long size, int index) {
        assertEquals(index, SizeRules.roundupIntervalIndex(size));
    }
}
