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

import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Issue 10's agreement, without a GPU: the batch-size search on {@code cuda} (core's stand-in driver,
 * {@code fake_libcuda.c}, and a stand-in cuBLAS, {@code fake_libcublas.c}: kernels and products are recorded or
 * checked and compute nothing) and its dry run on a {@code sim} standing for that GPU ({@code sim:TOTAL:cc9.0},
 * the fake's total and compute capability), both capped by the same per-process memory fraction, find the same
 * largest batch with the same peaks for the baseline, checkpointing, bf16 autocast and both, for the MLP (SGD) and
 * the small transformer (AdamW); every try has the same outcome and peaks, and the allocator makes the same calls
 * (sizes, order, streams, places inside segments) on both. The GPU is opened as {@code train} and
 * {@code find-batch-size} open it, with segments placed as {@code sim} places them
 * ({@link CudaSegments#LOWEST_ADDRESS_FIRST}); with the driver's placement (the stand-in's {@code posix_memalign},
 * often descending) best fit broke ties between equal free blocks otherwise and the checkpointing row's peaks
 * differed. fp16 is left out: its GradScaler skips steps by the values of the gradients, which the stand-in does not
 * compute.
 *
 * <p>The MLP's jobs pin memory (the default): on {@code cuda} and on the sim standing for it, each try's batches
 * come as {@link Trainer#fit} brings them ({@link PinnedRehearsal}): allocated one batch ahead on a side stream
 * ({@code side1} in the traces) and handed to the compute stream with {@code recordStream}; the traces are compared
 * whole, side-stream allocations and deferred frees included. With {@code --no-pin-memory} every allocation is on the
 * compute stream, as before, and the two agree as well. The second control: the pinned and pageable traces differ,
 * so a dry run that left the side stream out (the finder before it rehearsed pinned batches) would not agree.
 *
 * <p>The control: a {@code sim} of the same capacity standing for {@code host} (no CUDA kernels' allocations) does
 * not agree, first of all by the 32 MiB cuBLAS workspace a compute capability 9.0 GPU takes at the first product.
 */
class CudaDryRunAgreementTest {
    /** One sixteenth of the fake GPU: 64 MiB of its 1 GiB, well below its free memory (the fake's context takes 8 MiB). */
    private static final double FRACTION = 0.0625;
    private static final int MAX_BATCH = 1 << 16;
    static final TrainOptions MLP = TrainOptions.defaults().withHidden(256).withLayers(2);
    static final TrainOptions GPT = TrainOptions.defaults(ModelKind.TRANSFORMER).withHidden(32).withHeads(2)
            .withLayers(2).withBlockSize(32);
    static final TrainOptions MLP_PAGEABLE = MLP.withPinMemory(false);
    private static Map<String, String> env;
    /** The MLP's searches on the fake GPU, shared by the agreement and the control (the slower half of a run). */
    private static Run mlpOnCuda;

    @BeforeAll
    static void standIns() {
        env = Map.of("VRAM4J_LIBCUBLAS", NativeTestBuild.fakeCublas().toString());
    }

    /** A search's outcome without its wall times. */
    record Outcome(String technique, int largest, long peakAllocated, long peakReserved, List<String> tries) {
        static Outcome of(BatchSizeFinder.Result r) {
            return new Outcome(r.technique(), r.largest(), r.peakAllocated(), r.peakReserved(), r.attempts().stream()
                    .map(a -> a.batchSize() + (a.fits() ? " fits" : " out of memory in " + a.failedIn())
                            + ", peak allocated " + a.peakAllocated() + ", reserved " + a.peakReserved() + ", " + a.phases())
                    .toList());
        }
    }

    /** The searches of one device and the allocator's trace of all of them. */
    record Run(String device, List<Outcome> outcomes, List<String> trace) {
    }

    private static Run search(DeviceBackend backend, TrainOptions base, boolean cudaKernels) {
        return search(backend, base, cudaKernels ? env : null, FRACTION);
    }

    /**
     * The four settings (bf16 the mixed precision) searched under a memory fraction, with the allocator's trace.
     *
     * @param cudaEnv the environment of {@code CudaKernels} (where cuBLAS is found), or null for the device's own kernels
     */
    static Run search(DeviceBackend backend, TrainOptions base, Map<String, String> cudaEnv, double fraction) {
        AllocatorConfig capped = AllocatorConfig.DEFAULT.toBuilder().perProcessMemoryFraction(fraction).build();
        try (CachingAllocator alloc = CachingAllocator.create(backend, capped); Device opened = Device.of(alloc)) {
            AllocatorTrace trace = new AllocatorTrace();
            alloc.setListener(trace);
            CudaKernels kernels = cudaEnv != null ? CudaKernels.create(alloc, opened.stream(), cudaEnv) : null;
            try {
                Device dev = kernels == null ? opened : opened.withKernels(Kernels.checked(kernels));
                BatchSizeFinder finder = base.isTransformer()
                        ? BatchSizeFinder.forTransformer(dev, BatchSizeFinderTest.VOCAB, MAX_BATCH)
                        : BatchSizeFinder.forMlp(dev, 784, 10, MAX_BATCH);
                List<Outcome> outcomes = new ArrayList<>();
                for (TrainOptions o : BatchSizeFinder.standardSettings(base, base.isTransformer() ? base.layers() : 3,
                        Precision.BF16)) {
                    BatchSizeFinder.Result r = finder.find(o);
                    assertTrue(r.largest() > 1 && r.largest() < MAX_BATCH, r.technique() + " on " + backend.description()
                            + " ran into the limit: " + r.largest());
                    outcomes.add(Outcome.of(r));
                }
                return new Run(backend.description(), outcomes, trace.lines());
            } finally {
                if (kernels != null) {
                    kernels.close();
                }
                assertEquals(0, alloc.memoryAllocated(), "every try freed everything, the workspace with the kernels");
            }
        }
    }

    private static Run onCuda(TrainOptions base) {
        try (CudaDevice cuda = CudaDevice.open(NativeTestBuild.fakeDriver().toString(), 0,
                CudaSegments.LOWEST_ADDRESS_FIRST)) {
            assertEquals(CudaSegments.LOWEST_ADDRESS_FIRST, cuda.segments());
            NativeTestBuild.fakeCublasReset();
            Run r = search(cuda, base, true);
            assertTrue(NativeTestBuild.fakeCublasCount("gemm") + NativeTestBuild.fakeCublasCount("gemm_batched") > 0,
                    "the products reached cuBLAS");
            assertEquals(32L << 20, NativeTestBuild.fakeCublasCount("workspace_bytes"),
                    "compute capability 9.0: PyTorch's 32 MiB workspace, from the caching allocator");
            assertEquals(0, NativeTestBuild.fakeCublasCount("handles"), "the handle was destroyed with the kernels");
            return r;
        }
    }

    /** @return the fake GPU's total and compute capability as a sim spec: {@code sim:TOTAL:ccMAJOR.MINOR} */
    private static String simStandingForTheFake() {
        try (CudaDevice cuda = CudaDevice.open(NativeTestBuild.fakeDriver().toString(), 0)) {
            int[] cc = cuda.computeCapability();
            return "sim:" + cuda.memGetInfo().total() + ":cc" + cc[0] + "." + cc[1];
        }
    }

    private static Run onSim(String spec, TrainOptions base) {
        try (DeviceBackend sim = Devices.open(spec)) {
            return search(sim, base, sim.hasDeviceMemory());
        }
    }

    static void assertAgree(Run cuda, Run sim) {
        assertEquals(cuda.outcomes().size(), sim.outcomes().size());
        for (int i = 0; i < cuda.outcomes().size(); i++) {
            Outcome c = cuda.outcomes().get(i);
            Outcome s = sim.outcomes().get(i);
            assertEquals(c.tries(), s.tries(), c.technique() + ": every try, " + cuda.device() + " vs " + sim.device());
            assertEquals(c.largest(), s.largest(), c.technique() + ": largest batch");
            assertEquals(c.peakReserved(), s.peakReserved(), c.technique() + ": peak reserved");
            assertEquals(c.peakAllocated(), s.peakAllocated(), c.technique() + ": peak allocated");
        }
        assertEquals(cuda.trace().size(), sim.trace().size(), "trace lengths");
        for (int i = 0; i < cuda.trace().size(); i++) {
            assertEquals(cuda.trace().get(i), sim.trace().get(i), "trace entry " + i + " of " + cuda.trace().size());
        }
    }

    private static synchronized Run mlpOnCuda() {
        if (mlpOnCuda == null) {
            mlpOnCuda = onCuda(MLP);
        }
        return mlpOnCuda;
    }

    @Test
    void mlpSearchOnCudaAndItsDryRunOnSimAgreeExactly() {
        Run cuda = mlpOnCuda();
        Run sim = onSim(simStandingForTheFake(), MLP);
        assertAgree(cuda, sim);
        assertTrue(MLP.pinMemory());
        assertTrue(cuda.trace().stream().anyMatch(l -> l.startsWith("alloc ") && l.contains(" stream side1 ")),
                "the batches are allocated on the side stream");
        assertTrue(cuda.trace().stream().anyMatch(l -> l.startsWith("free_completed ") && l.contains(" stream side1 ")),
                "their blocks go back to the side stream's pool once the compute stream passed them");
        assertTrue(cuda.trace().contains("segment_alloc " + (32L << 20) + " stream 0 seg" + workspaceSegment(cuda)
                + " large"), "the workspace's own segment is in the trace");
    }

    /** {@code --no-pin-memory}: every batch on the compute stream, on both, as before pinned batches were rehearsed. */
    @Test
    void mlpWithoutPinnedMemoryAgreesOnTheComputeStreamOnly() {
        Run cuda = onCuda(MLP_PAGEABLE);
        Run sim = onSim(simStandingForTheFake(), MLP_PAGEABLE);
        assertAgree(cuda, sim);
        assertTrue(cuda.trace().stream().noneMatch(l -> l.contains(" stream side")), "no side stream");
        // the second control: the side stream's batches change the calls, so leaving them out of a dry run fails
        assertNotEquals(mlpOnCuda().trace(), sim.trace());
        assertNotEquals(mlpOnCuda().outcomes(), sim.outcomes());
    }

    @Test
    void transformerSearchOnCudaAndItsDryRunOnSimAgreeExactly() {
        assertAgree(onCuda(GPT), onSim(simStandingForTheFake(), GPT));
    }

    /** The control: without the CUDA kernels' allocations the dry run does not predict the GPU's. */
    @Test
    void aSimStandingForHostDoesNotAgree() {
        Run cuda = mlpOnCuda();
        String spec = simStandingForTheFake();
        Run host = onSim(spec.substring(0, spec.lastIndexOf(':')), MLP);
        assertNotEquals(cuda.trace(), host.trace());
        Outcome c = cuda.outcomes().getFirst();
        Outcome h = host.outcomes().getFirst();
        assertNotEquals(c.tries(), h.tries());
        assertTrue(c.peakReserved() - h.peakReserved() >= 32L << 20 || c.largest() < h.largest(),
                "the workspace: " + c + " vs " + h);
        String firstTry = c.tries().getFirst();
        String firstTryOnHost = h.tries().getFirst();
        long reserved = Long.parseLong(firstTry.replaceAll(".*reserved (\\d+),.*", "$1"));
        long reservedOnHost = Long.parseLong(firstTryOnHost.replaceAll(".*reserved (\\d+),.*", "$1"));
        assertTrue(reserved - reservedOnHost >= 32L << 20, "batch 1 reserves the workspace's segment more: "
                + firstTry + " vs " + firstTryOnHost);
    }

    private static long workspaceSegment(Run r) {
        for (String line : r.trace()) {
            if (line.startsWith("alloc " + (32L << 20) + " ")) {
                return Long.parseLong(line.replaceAll(".* seg(\\d+)\\+0$", "$1"));
            }
        }
        throw new AssertionError("no 32 MiB allocation in the trace");
    }
}
