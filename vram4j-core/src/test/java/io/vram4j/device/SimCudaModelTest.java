package io.vram4j.device;

import io.vram4j.device.sim.SimDevice;
import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.Optional;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Which {@code sim} specs stand for a CUDA GPU (and of which compute capability), and what their data calls do. */
class SimCudaModelTest {

    private static SimDevice sim(String spec) {
        return (SimDevice) Devices.open(spec);
    }

    @Test
    void aPresetStandsForItsGpuUnderCuda() {
        try (SimDevice h100 = sim("sim:h100-80gb"); SimDevice t4 = sim("sim:T4")) {
            assertEquals(Optional.of(new ComputeCapability(9, 0)), h100.cudaModel());
            assertEquals("sim:H100-80GB", h100.description());
            assertEquals(85_028_896_768L, h100.totalMemory());
            assertTrue(h100.hasDeviceMemory());
            assertFalse(h100.hasStorage());
            assertTrue(h100.isSimulated());
            assertEquals(new ComputeCapability(7, 5), t4.cudaModel().orElseThrow());
        }
        assertEquals(new ComputeCapability(8, 0), Devices.presetCapability("a100-40gb"));
        for (String preset : Devices.presets().keySet()) {
            assertTrue(Devices.presetCapability(preset).major() >= 7, preset + " has a capability");
        }
        IllegalArgumentException unknown = assertThrows(IllegalArgumentException.class,
                () -> Devices.presetCapability("B200"));
        assertTrue(unknown.getMessage().contains("unknown preset 'B200'"), unknown.getMessage());
    }

    @Test
    void aSizeStandsForHostUnlessACapabilityIsGiven() {
        try (SimDevice plain = sim("sim:80GiB"); SimDevice cuda = sim("sim:85028896768:cc9.0");
             SimDevice upper = sim("sim:1GiB:CC8.6"); SimDevice presetHost = sim("sim:H100-80GB:host");
             SimDevice sizeHost = sim("sim:2GiB:host"); SimDevice bare = sim("sim")) {
            assertEquals(Optional.empty(), plain.cudaModel());
            assertFalse(plain.hasDeviceMemory());
            assertTrue(plain.isSimulated());
            assertEquals(Optional.empty(), bare.cudaModel());
            assertEquals(new ComputeCapability(9, 0), cuda.cudaModel().orElseThrow());
            assertEquals(85_028_896_768L, cuda.totalMemory());
            assertEquals("sim:79.19GiB:cc9.0", cuda.description());
            assertEquals(new ComputeCapability(8, 6), upper.cudaModel().orElseThrow());
            assertEquals("sim:1GiB:cc8.6", upper.description());
            assertEquals(Optional.empty(), presetHost.cudaModel());
            assertEquals(85_028_896_768L, presetHost.totalMemory());
            assertEquals("sim:H100-80GB:host", presetHost.description());
            assertFalse(presetHost.hasDeviceMemory());
            assertEquals(Optional.empty(), sizeHost.cudaModel());
            assertEquals("sim:2GiB", sizeHost.description());
        }
        try (SimDevice overridden = sim("sim:A100-80GB:cc9.0")) {
            assertEquals(new ComputeCapability(9, 0), overridden.cudaModel().orElseThrow());
            assertEquals("sim:A100-80GB:cc9.0", overridden.description());
        }
    }

    @Test
    void badModelsAreRefusedNamingTheSpec() {
        for (String[] bad : new String[][] {
                {"sim:80GiB:cc9", "'9' is not a compute capability"},
                {"sim:80GiB:cc", "'' is not a compute capability"},
                {"sim:80GiB:cc9.10", "'9.10' is not a compute capability"},
                {"sim:80GiB:cc0.0", "compute capability 0.0 is out of range"},
                {"sim:80GiB:ccx.y", "'x.y' is not a compute capability"},
                {"sim:80GiB:gpu", "'gpu' is neither host nor a compute capability such as cc9.0"},
                {"sim:80GiB:", "'' is neither host nor a compute capability"},
                {"sim:H100-80GB:9.0", "'9.0' is neither host nor a compute capability"},
                {"sim::cc9.0", "no size after ':'"},
                {"sim:NOPE:cc9.0", "'NOPE' is neither a size nor a preset"}}) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> Devices.open(bad[0]), bad[0]);
            assertTrue(e.getMessage().contains("invalid device '" + bad[0] + "'"), e.getMessage());
            assertTrue(e.getMessage().contains(bad[1]), e.getMessage());
            assertTrue(e.getMessage().contains("sim[:SIZE|PRESET[:ccMAJOR.MINOR|:host]]"), e.getMessage());
        }
    }

    @Test
    void computeCapabilityParsesMajorDotMinorOnly() {
        assertEquals(new ComputeCapability(12, 0), ComputeCapability.parse(" 12.0 "));
        assertEquals("8.9", ComputeCapability.parse("8.9").toString());
        for (String bad : new String[] {"", "9", "9.", ".0", "9.0.1", "sm_90", "100.0", "-1.0", "9,0"}) {
            assertThrows(IllegalArgumentException.class, () -> ComputeCapability.parse(bad), bad);
        }
        assertThrows(IllegalArgumentException.class, () -> new ComputeCapability(9, 10));
        assertThrows(IllegalArgumentException.class, () -> new ComputeCapability(0, 5));
    }

    @Test
    void standingForCudaDataCallsCheckRangesKeepNothingAndReadZeros() {
        try (SimDevice d = sim("sim:1GiB:cc9.0"); Arena a = Arena.ofConfined()) {
            long p = d.malloc(4096);
            MemorySegment host = a.allocate(16);
            host.fill((byte) 7);
            d.copyFromHost(host, p + 100);
            d.fill(p, 4096, (byte) 1);
            d.copyDeviceToDevice(p, p + 2048, 2048);
            d.copyToHost(p + 100, host);
            assertEquals(0L, host.get(ValueLayout.JAVA_LONG, 0), "nothing was kept: zeros come back");
            assertEquals(0L, host.get(ValueLayout.JAVA_LONG, 8));
            IllegalArgumentException past = assertThrows(IllegalArgumentException.class,
                    () -> d.copyFromHost(host, p + 4090));
            assertTrue(past.getMessage().contains("past the end of the segment"), past.getMessage());
            assertThrows(IllegalArgumentException.class, () -> d.copyToHost(p + (1L << 30), host));
            assertThrows(IllegalArgumentException.class, () -> d.copyDeviceToDevice(p, p + 4000, 200));
            assertThrows(UnsupportedOperationException.class, () -> d.segment(p, 8), "no host view of device memory");
            d.free(p);
            assertThrows(IllegalArgumentException.class, () -> d.fill(p, 8, (byte) 0), "freed");
        }
    }

    @Test
    void standingForHostDataCallsThrowAsBefore() {
        try (SimDevice d = sim("sim:1GiB"); Arena a = Arena.ofConfined()) {
            long p = d.malloc(4096);
            MemorySegment host = a.allocate(16);
            assertThrows(UnsupportedOperationException.class, () -> d.copyFromHost(host, p));
            assertThrows(UnsupportedOperationException.class, () -> d.copyToHost(p, host));
            assertThrows(UnsupportedOperationException.class, () -> d.fill(p, 8, (byte) 0));
            assertThrows(UnsupportedOperationException.class, () -> d.copyDeviceToDevice(p, p + 8, 8));
            d.free(p);
        }
    }
}
