package io.vram4j.train;

import io.vram4j.alloc.CachingAllocator;
import io.vram4j.alloc.config.AllocatorConfig;
import io.vram4j.compute.Kernels;
import io.vram4j.compute.cuda.CudaKernels;
import io.vram4j.device.DeviceBackend;
import io.vram4j.device.Devices;
import io.vram4j.device.cuda.CudaDevice;
import io.vram4j.device.cuda.CudaSegments;
import io.vram4j.tensor.Device;
import io.vram4j.testsupport.NativeTestBuild;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@code train --dry-run} (through {@link TrainJob}, so {@link Trainer#dryRun}) on {@code cuda} over the stand-in
 * driver and cuBLAS, and the same dry run on a {@code sim} standing for that GPU ({@code sim:TOTAL:ccX.Y}, with the
 * same CUDA kernels): the allocator makes the same calls (sizes, order, streams, places inside segments) and the
 * peaks, training and evaluation apart, are equal. With pin memory on (the MLP's default on {@code cuda}) both
 * rehearse the batches as {@code train --device cuda} brings them ({@link PinnedRehearsal}): allocated one ahead on a
 * side stream, freed there once the compute stream passed them; with {@code --no-pin-memory} nothing is on a side
 * stream. The control: the pinned and pageable dry runs differ, so a sim dry run that left the side stream out (as
 * before) would not match the pinned run on {@code cuda}.
 */
class CudaTrainDryRunAgreementTest {
    private static Map<String, String> env;

    @BeforeAll
    static void standIns() {
        env = Map.of("VRAM4J_LIBCUBLAS", NativeTestBuild.fakeCublas().toString());
    }

    /** A dry run's peaks and memory, and the allocator's trace. */
    record DryRun(String device, String figures, List<String> trace) {
    }

    private static TrainOptions options(boolean pin) {
        return TrainOptions.builder().hidden(256).layers(2).epochs(1).batchSize(64).limit(200).testLimit(100)
                .historySteps(0).pinMemory(pin).build();
    }

    private static DryRun dryRun(DeviceBackend backend, TrainOptions o, Path out) {
        try (CachingAllocator alloc = CachingAllocator.create(backend, AllocatorConfig.DEFAULT);
             Device opened = Device.of(alloc)) {
            AllocatorTrace trace = new AllocatorTrace();
            alloc.setListener(trace);
            try (CudaKernels kernels = CudaKernels.create(alloc, opened.stream(), env)) {
                Device dev = opened.withKernels(Kernels.checked(kernels));
                TrainJob.Result r = TrainJob.builder(o).data(TrainJobTest.BUNDLED).out(out).dryRun(true)
                        .allocatorConfig(AllocatorConfig.DEFAULT).on(dev, t -> {
                            throw new AssertionError("a dry run does not train");
                        }).build().run();
                DryRunResult d = r.dryRun();
                return new DryRun(backend.description(), d.batchSize() + " " + d.peaks() + " " + d.memory(),
                        trace.lines());
            }
        }
    }

    private static DryRun onCuda(TrainOptions o, Path out) {
        try (CudaDevice cuda = CudaDevice.open(NativeTestBuild.fakeDriver().toString(), 0,
                CudaSegments.LOWEST_ADDRESS_FIRST)) {
            return dryRun(cuda, o, out);
        }
    }

    private static DryRun onSim(TrainOptions o, Path out) {
        String spec;
        try (CudaDevice cuda = CudaDevice.open(NativeTestBuild.fakeDriver().toString(), 0)) {
            int[] cc = cuda.computeCapability();
            spec = "sim:" + cuda.memGetInfo().total() + ":cc" + cc[0] + "." + cc[1];
        }
        try (DeviceBackend sim = Devices.open(spec)) {
            assertTrue(sim.hasDeviceMemory(), spec + " stands for a GPU");
            return dryRun(sim, o, out);
        }
    }

    private static void assertAgree(DryRun cuda, DryRun sim) {
        assertEquals(cuda.figures(), sim.figures(), "peaks, " + cuda.device() + " vs " + sim.device());
        assertEquals(cuda.trace().size(), sim.trace().size(), "trace lengths");
        for (int i = 0; i < cuda.trace().size(); i++) {
            assertEquals(cuda.trace().get(i), sim.trace().get(i), "trace entry " + i + " of " + cuda.trace().size());
        }
    }

    @Test
    void pinnedDryRunOnSimMakesTheCallsOfTheDryRunOnCuda(@TempDir Path tmp) {
        DryRun cuda = onCuda(options(true), tmp.resolve("cuda"));
        DryRun sim = onSim(options(true), tmp.resolve("sim"));
        assertAgree(cuda, sim);
        assertTrue(sim.trace().stream().anyMatch(l -> l.startsWith("alloc ") && l.contains(" stream side1 ")),
                "the batches are allocated on the side stream");
        assertTrue(sim.trace().stream().anyMatch(l -> l.startsWith("free_completed ") && l.contains(" stream side1 ")),
                "their blocks go back to the side stream's pool once the compute stream passed them");

        // the control: without the side stream (pageable batches) the sim's dry run would not match cuda's pinned one
        DryRun pageable = onSim(options(false), tmp.resolve("sim-pageable"));
        assertNotEquals(cuda.trace(), pageable.trace());
    }

    @Test
    void withoutPinnedMemoryBothStayOnTheComputeStream(@TempDir Path tmp) {
        DryRun cuda = onCuda(options(false), tmp.resolve("cuda"));
        DryRun sim = onSim(options(false), tmp.resolve("sim"));
        assertAgree(cuda, sim);
        assertTrue(sim.trace().stream().noneMatch(l -> l.contains(" stream side")), "no side stream");
    }
}
