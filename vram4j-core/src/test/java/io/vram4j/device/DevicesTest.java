package io.vram4j.device;

import org.junit.jupiter.api.Test;

import java.util.List;
import java.util.SortedMap;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class DevicesTest {

    @Test
    void opensHostDevicesWithAGivenCapacity() {
        try (DeviceBackend d = Devices.open("host:64MiB")) {
            assertEquals("host", d.type());
            assertTrue(d.hasStorage());
            assertEquals(64L << 20, d.totalMemory());
            assertEquals("host:64MiB", d.description());
            assertEquals(0, d.index());
        }
        try (DeviceBackend d = Devices.open(" HOST : 1.5GiB ")) {
            assertEquals(1_610_612_736L, d.totalMemory());
            assertEquals("host:1.5GiB", d.description());
        }
    }

    @Test
    void opensSimDevices() {
        try (DeviceBackend d = Devices.open("sim")) {
            assertEquals("sim", d.type());
            assertFalse(d.hasStorage());
            assertEquals(80L << 30, d.totalMemory());
            assertEquals(Devices.SIM_DEFAULT_CAPACITY, d.totalMemory());
            assertEquals("sim:80GiB", d.description());
        }
        try (DeviceBackend d = Devices.open("sim:80GB")) {
            assertEquals(80_000_000_000L, d.totalMemory());
        }
    }

    @Test
    void opensSimDevicesFromPresets() {
        try (DeviceBackend d = Devices.open("sim:A100-80GB")) {
            assertEquals(84_987_740_160L, d.totalMemory());
            assertEquals("sim:A100-80GB", d.description());
        }
        try (DeviceBackend d = Devices.open("Sim:h100-80gb")) {
            assertEquals(Devices.presets().get("H100-80GB"), d.totalMemory());
            assertEquals("sim:H100-80GB", d.description(), "the canonical preset name");
        }
    }

    @Test
    void presetsAreTheRealGpusSortedByName() {
        SortedMap<String, Long> presets = Devices.presets();
        for (String name : List.of("A100-40GB", "A100-80GB", "H100-80GB", "H200", "L4", "T4", "V100-16GB",
                "V100-32GB", "RTX4090", "RTX3090", "A10G", "L40S")) {
            assertTrue(presets.containsKey(name), name);
        }
        String previous = "";
        for (var e : presets.entrySet()) {
            assertTrue(e.getKey().compareTo(previous) > 0, "sorted");
            previous = e.getKey();
            // CUDA reports a little less than the marketing size, and more than 90% of it
            long marketing = Long.parseLong(e.getKey().replaceAll("^.*-(\\d+)GB$", "$1")
                    .replaceAll("^(T4|L4|H200|RTX4090|RTX3090|A10G|L40S)$", "0"));
            if (marketing > 0) {
                assertTrue(e.getValue() < marketing * (1L << 30), e.getKey());
                assertTrue(e.getValue() > marketing * (1L << 30) * 9 / 10, e.getKey());
            }
        }
        assertEquals(15_843_721_216L, presets.get("T4"));
        assertEquals(143_156L << 20, presets.get("H200"));
        assertThrows(UnsupportedOperationException.class, () -> presets.put("X", 1L));
    }

    @Test
    void rejectsUnknownTypesNamingTheSpecAndTheAcceptedForms() {
        for (String spec : new String[] {"tpu", "gpu:1", "cudax", "", "hostx:1GiB"}) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> Devices.open(spec));
            assertTrue(e.getMessage().startsWith("unknown device '" + spec + "'"), e.getMessage());
            assertTrue(e.getMessage().contains("expected host[:SIZE], sim[:SIZE|PRESET[:ccMAJOR.MINOR|:host]] or cuda[:N]"), e.getMessage());
            assertTrue(e.getMessage().contains("A100-80GB"), "lists the presets: " + e.getMessage());
        }
        assertThrows(NullPointerException.class, () -> Devices.open(null));
    }

    @Test
    void rejectsBadSizes() {
        IllegalArgumentException abc = assertThrows(IllegalArgumentException.class, () -> Devices.open("host:abc"));
        assertTrue(abc.getMessage().startsWith("invalid device 'host:abc': not a size: 'abc'"), abc.getMessage());
        assertTrue(abc.getMessage().contains("expected host[:SIZE]"), abc.getMessage());

        IllegalArgumentException negative = assertThrows(IllegalArgumentException.class,
                () -> Devices.open("sim:-1GiB"));
        assertTrue(negative.getMessage().contains("'sim:-1GiB'"), negative.getMessage());
        assertTrue(negative.getMessage().contains("negative"), negative.getMessage());

        IllegalArgumentException nope = assertThrows(IllegalArgumentException.class, () -> Devices.open("sim:NOPE"));
        assertTrue(nope.getMessage().contains("'NOPE' is neither a size nor a preset"), nope.getMessage());
        assertTrue(nope.getMessage().contains("presets: A100-40GB, A100-80GB"), nope.getMessage());

        IllegalArgumentException zero = assertThrows(IllegalArgumentException.class, () -> Devices.open("sim:0"));
        assertTrue(zero.getMessage().contains("must be positive"), zero.getMessage());
        IllegalArgumentException empty = assertThrows(IllegalArgumentException.class, () -> Devices.open("host:"));
        assertTrue(empty.getMessage().contains("no size after ':'"), empty.getMessage());
        IllegalArgumentException absurd = assertThrows(IllegalArgumentException.class,
                () -> Devices.open("sim:2000TiB"));
        assertTrue(absurd.getMessage().contains("exceeds the maximum of 1PiB"), absurd.getMessage());
        assertThrows(IllegalArgumentException.class, () -> Devices.open("host:0.1B"), "rounds to 0 bytes");
    }
}
