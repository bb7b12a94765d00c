package io.vram4j.train;

import io.vram4j.alloc.CachingAllocator;
import io.vram4j.alloc.config.AllocatorConfig;
import io.vram4j.compute.Kernels;
import io.vram4j.nn.Parameter;
import io.vram4j.tensor.Device;
import io.vram4j.tensor.OpaqueDevice;
import io.vram4j.tensor.OpaqueKernels;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The training job on a device-memory backend: an {@link OpaqueDevice} (addresses the host cannot dereference, as a
 * GPU's) computing with the scalar kernels over its mirrored bytes ({@link OpaqueKernels}), against the same job on
 * host memory with the scalar kernels. Losses, accuracies and the final weights must be equal bit for bit, the
 * batches must reach the device through its copy calls, and the memory figures come from the device's allocator.
 * Nothing here runs on a GPU.
 */
class TrainJobOnDeviceMemoryTest {
    private static final long CAPACITY = 256L << 20;

    /** A job's summary, its final weights and the step-by-step memory it reported. */
    private record Run(Map<String, Object> summary, List<float[]> weights, List<Long> stepAllocated, TrainResult training) {
    }

    private static TrainOptions.Builder small() {
        return TrainOptions.builder().epochs(1).batchSize(50).limit(150).testLimit(100).historySteps(0);
    }

    private static Run run(Device dev, TrainOptions options, Path out) {
        List<float[]> weights = new ArrayList<>();
        List<Long> stepAllocated = new ArrayList<>();
        TrainListener listener = new TrainListener() {
            @Override
            public void stepDone(StepInfo info) {
                stepAllocated.add(info.allocated());
            }
        };
        TrainJob job = TrainJob.builder(options).data(options.isTransformer() ? null : TrainJobTest.BUNDLED).out(out)
                .listener(listener).sampleChars(24)
                .allocatorConfig(AllocatorConfig.fromEnvironment(Map.of())).on(dev, t -> {
                    for (Parameter p : t.model().parameters()) {
                        weights.add(p.toFloatArray());
                    }
                }).build();
        TrainJob.Result r = job.run();
        return new Run(r.summary(), weights, stepAllocated, r.training());
    }

    private static Run onHost(TrainOptions options, Path out) {
        try (Device owner = Device.open("host:" + CAPACITY, AllocatorConfig.fromEnvironment(Map.of()))) {
            return run(owner.withKernels(Kernels.scalar()), options, out);
        }
    }

    private static Run onOpaque(TrainOptions options, Path out, OpaqueDevice backend) {
        return onOpaque(options, out, backend, new OpaqueKernels.Counters());
    }

    private static Run onOpaque(TrainOptions options, Path out, OpaqueDevice backend, OpaqueKernels.Counters counters) {
        AtomicLong deviceSegments = new AtomicLong();
        try (CachingAllocator alloc = CachingAllocator.create(backend, AllocatorConfig.fromEnvironment(Map.of()))) {
            Device dev = Device.of(alloc).withKernels(OpaqueKernels.over(backend, Kernels.scalar(), deviceSegments, counters));
            Run r = run(dev, options, out);
            assertTrue(deviceSegments.get() > 0, "the kernels were given device memory");
            return r;
        }
    }

    private static void assertSameTraining(Run host, Run device) {
        for (String key : List.of("accuracy", "loss", "train_accuracy", "train_loss", "parameters", "model", "techniques",
                "allocated_bytes")) {
            assertEquals(host.summary().get(key), device.summary().get(key), key);
        }
        assertEquals(host.training().epochs().size(), device.training().epochs().size());
        for (int e = 0; e < host.training().epochs().size(); e++) {
            EpochResult h = host.training().epochs().get(e);
            EpochResult d = device.training().epochs().get(e);
            assertEquals(Double.doubleToRawLongBits(h.loss()), Double.doubleToRawLongBits(d.loss()), "epoch loss");
            assertEquals(Double.doubleToRawLongBits(h.test().loss()), Double.doubleToRawLongBits(d.test().loss()), "test loss");
            assertEquals(h.accuracy(), d.accuracy(), "epoch accuracy");
            assertEquals(h.test().accuracy(), d.test().accuracy(), "test accuracy");
        }
        assertEquals(host.weights().size(), device.weights().size());
        for (int i = 0; i < host.weights().size(); i++) {
            float[] h = host.weights().get(i);
            float[] d = device.weights().get(i);
            assertEquals(h.length, d.length);
            for (int j = 0; j < h.length; j++) {
                assertEquals(Float.floatToRawIntBits(h[j]), Float.floatToRawIntBits(d[j]), "parameter " + i + " element " + j);
            }
        }
        // the progress and the JSON report the device's allocator as on host; the peaks are not compared: on device
        // memory some ops take temporaries of their own (the peak here was 1.4 MiB above host's)
        assertEquals(host.stepAllocated().size(), device.stepAllocated().size());
        assertTrue(device.stepAllocated().stream().allMatch(a -> a > 0), device.stepAllocated().toString());
        assertTrue((long) device.summary().get("peak_allocated_bytes") >= device.stepAllocated().getLast());
        assertTrue((long) device.summary().get("peak_reserved_bytes") >= (long) device.summary().get("peak_allocated_bytes"));
    }

    @Test
    void theDefaultMlpTrainsOnDeviceMemoryAsOnHostBitForBit(@TempDir Path tmp) {
        TrainOptions o = small().build();
        Run host = onHost(o, tmp.resolve("host"));
        OpaqueDevice backend = new OpaqueDevice(CAPACITY);
        OpaqueKernels.Counters counters = new OpaqueKernels.Counters();
        Run device = onOpaque(o, tmp.resolve("opaque"), backend, counters);
        assertSameTraining(host, device);
        assertEquals(3, device.stepAllocated().size());
        assertEquals(784L * 512 + 512 + 512 * 512 + 512 + 512 * 10 + 10, device.summary().get("parameters")); // 784-512-512-10
        assertEquals(backend.description(), device.summary().get("device"));
        // the batches' inputs and labels, and the initial weights, went over copies queued on the device's stream
        long uploads = counters.byKernel().getOrDefault("copyFromHost", 0L);
        assertTrue(uploads >= 2 * (3 + 2), "host-to-device copies (x and y of 3 training and 2 test batches): " + uploads);
        assertTrue(backend.toHost.get() > 0);
        assertNotEquals(0.0, (double) device.summary().get("loss"));
    }

    @ParameterizedTest
    @ValueSource(strings = {"bf16", "checkpoint"})
    void techniquesTrainOnDeviceMemoryAsOnHostBitForBit(String technique, @TempDir Path tmp) {
        TrainOptions o = technique.equals("bf16") ? small().amp(Precision.BF16).build() : small().checkpoint(2).build();
        Run host = onHost(o, tmp.resolve("host"));
        Run device = onOpaque(o, tmp.resolve("opaque"), new OpaqueDevice(CAPACITY));
        assertSameTraining(host, device);
        assertTrue(String.valueOf(device.summary().get("techniques")).contains(technique.equals("bf16") ? "bf16" : "checkpoint"),
                String.valueOf(device.summary().get("techniques")));
    }

    @Test
    void theTransformerTrainsAndSamplesOnDeviceMemoryAsOnHostBitForBit(@TempDir Path tmp) {
        TrainOptions o = CharTransformerTest.tiny().withEpochs(1).withMaxSteps(3).withLimit(96).withTestLimit(32);
        Run host = onHost(o, tmp.resolve("host"));
        Run device = onOpaque(o, tmp.resolve("opaque"), new OpaqueDevice(CAPACITY));
        assertSameTraining(host, device);
        assertEquals(3, device.stepAllocated().size());
        assertEquals(host.summary().get("sample"), device.summary().get("sample"));
        assertEquals(1 + 24, String.valueOf(device.summary().get("sample")).length()); // the prompt "\n" and 24 characters
    }

    @Test
    void aDryRunOnDeviceMemoryComputesOnRealBatches(@TempDir Path tmp) {
        OpaqueDevice backend = new OpaqueDevice(CAPACITY);
        try (CachingAllocator alloc = CachingAllocator.create(backend, AllocatorConfig.fromEnvironment(Map.of()))) {
            Device dev = Device.of(alloc).withKernels(OpaqueKernels.over(backend, Kernels.scalar(), new AtomicLong()));
            TrainJob.Result r = TrainJob.builder(small().build()).data(TrainJobTest.BUNDLED).out(tmp).dryRun(true)
                    .allocatorConfig(AllocatorConfig.fromEnvironment(Map.of())).on(dev, t -> {
                        throw new AssertionError("a dry run does not train");
                    }).build().run();
            assertEquals(true, r.summary().get("dry_run"));
            // a simulated step reads nothing back; a real one reads its loss and predictions from the device
            assertTrue(backend.toHost.get() > 0, "device-to-host copies: " + backend.toHost.get());
        }
    }
}
