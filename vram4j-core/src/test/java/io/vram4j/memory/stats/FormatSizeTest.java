package io.vram4j.memory.stats;

import static org.junit.jupiter.api.Assertions.assertEquals;

import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

class FormatSizeTest {
    @ParameterizedTest(name = "{0} -> {1}")
    @CsvSource(delimiter = ';', value = {
        "0;0 bytes",
        "4;4 bytes",
        "512;512 bytes",
        "1024;1024 bytes",
        "1025;1.00 KiB",
        "1034;1.01 KiB",
        "1536;1.50 KiB",
        // exact ties are rounded half to even like C++ printf: 1.125 -> 1.12, 1.375 -> 1.38, 2.625 -> 2.62
        "1152;1.12 KiB",
        "1153;1.13 KiB",
        "1408;1.38 KiB",
        "2688;2.62 KiB",
        "1048575;1024.00 KiB",
        "1048576;1024.00 KiB",
        "1048577;1.00 MiB",
        "2097152;2.00 MiB",
        "20971520;20.00 MiB",
        "88080384;84.00 MiB",
        "1073741823;1024.00 MiB",
        "1073741824;1024.00 MiB",
        "1073741825;1.00 GiB",
        "1610612736;1.50 GiB",
        "85899345920;80.00 GiB",
        "858993459200000000;800000000.00 GiB",
        "9223372036854775807;8589934592.00 GiB",
        // read as uint64_t like C++: -1 is 2^64 - 1
        "-1;17179869184.00 GiB"})
    void formatsLikePyTorchCpp(long bytes, String expected) {
        assertEquals(expected, FormatSize.formatSize(bytes));
    }
}
