package io.vram4j.train;

import io.vram4j.alloc.CachingAllocator;
import io.vram4j.alloc.config.AllocatorConfig;
import io.vram4j.compute.Kernels;
import io.vram4j.compute.cuda.CudaKernels;
import io.vram4j.data.Batch;
import io.vram4j.data.CharVocabulary;
import io.vram4j.device.cuda.CudaDevice;
import io.vram4j.tensor.Device;
import io.vram4j.tensor.Tensor;
import io.vram4j.testsupport.NativeTestBuild;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.util.Map;
import java.util.Random;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * On a GPU the host queues work and the device runs it later; each time the host waits for the device (a stream
 * synchronize, a synchronous copy) the queue runs dry and the GPU idles until the host has queued more. A training
 * step should wait only where it reads values back (the loss and the predictions, as {@code loss.item()} in
 * PyTorch's loop), and only once all its work is queued (a wait before the backward pass would leave the GPU idle
 * while the host queues it). Counted here on {@code cuda} over the stand-in driver ({@code fake_cuda_live("host_waits")}):
 * writes from the host, zero fills and device-to-device copies are queued on the compute stream, and the waits of a
 * step do not grow with the model's depth. Values still come back right: the stand-in runs queued copies and fills
 * in stream order when the host waits, so a write queued out of order would read back wrong.
 */
class StepHostWaitsTest {
    private static final Map<String, String> ENV = Map.of("VRAM4J_LIBCUBLAS", NativeTestBuild.fakeCublas().toString());

    private CudaDevice cuda;
    private CachingAllocator alloc;
    private Device opened;
    private CudaKernels kernels;
    private Device dev;

    @BeforeEach
    void open() {
        cuda = CudaDevice.open(NativeTestBuild.fakeDriver().toString(), 0);
        alloc = CachingAllocator.create(cuda, AllocatorConfig.DEFAULT);
        opened = Device.of(alloc);
        kernels = CudaKernels.create(alloc, opened.stream(), ENV);
        dev = opened.withKernels(Kernels.checked(kernels));
    }

    @AfterEach
    void close() {
        kernels.close();
        opened.close();
        alloc.close();
        cuda.close();
    }

    private static long waits() {
        return NativeTestBuild.fakeDriverLive("host_waits");
    }

    @Test
    void writesZeroFillsAndCopiesAreQueuedAndReadBackInOrder() {
        float[] data = {1, 2, 3, 4, 5, 6};
        long before = waits();
        try (Tensor a = dev.tensor(data, 2, 3); Tensor zeros = dev.zeros(2, 3); Tensor b = dev.empty(io.vram4j.tensor.DType.FLOAT32, 2, 3)) {
            b.copyFrom(a);   // device to device, same dtype and layout: one queued copy
            a.zero();        // queued after the copy: b keeps the values
            assertEquals(before, waits(), "uploading, zero-filling and copying on the device wait for nothing");
            assertArrayEquals(data, b.toFloatArray());
            assertArrayEquals(new float[6], a.toFloatArray());
            assertArrayEquals(new float[6], zeros.toFloatArray());
            assertTrue(waits() > before, "reading values back waits for the device (the counter counts)");
        }
    }

    /** The host waits and the kernel launches of one training step (the second: the first allocates state). */
    private record StepCounts(long waits, long launches) {
    }

    private StepCounts stepCounts(Trainer trainer, Batch batch) {
        trainer.trainStep(batch);    // the first step allocates the optimizer state
        long before = waits();
        long launchedBefore = NativeTestBuild.fakeDriverLive("launches");
        NativeTestBuild.fakeDriverResetFirstWait();
        trainer.trainStep(batch);
        long launched = NativeTestBuild.fakeDriverLive("launches");
        if (trainer.options().amp() != Precision.FP16) {   // fp16's GradScaler reads found_inf before stepping
            assertEquals(launched, NativeTestBuild.fakeDriverLive("launches_at_first_wait"),
                    "every kernel of the step (forward, backward, optimizer) is queued before the step first waits");
        }
        return new StepCounts(waits() - before, launched - launchedBefore);
    }

    private long stepWaits(Trainer trainer, Batch batch) {
        return stepCounts(trainer, batch).waits();
    }

    private long mlpStepWaits(int layers) {
        TrainOptions o = TrainOptions.builder().hidden(64).layers(layers).batchSize(16).historySteps(0).build();
        Random r = new Random(1);
        float[] x = new float[16 * 784];
        int[] y = new int[16];
        for (int i = 0; i < x.length; i++) {
            x[i] = r.nextFloat();
        }
        for (int i = 0; i < y.length; i++) {
            y[i] = r.nextInt(10);
        }
        try (Trainer t = Trainer.on(dev, o, 784, 10, null)) {
            return stepWaits(t, new Batch(0, 16, 784, x, y));
        }
    }

    private long transformerStepWaits(int blocks, Precision amp) {
        return transformerStep(blocks, amp, 4, 16).waits();
    }

    private StepCounts transformerStep(int blocks, Precision amp, int batch, int context) {
        TrainOptions o = TrainOptions.defaults(ModelKind.TRANSFORMER).withLayers(blocks).withHidden(32).withHeads(2)
                .withBlockSize(context).withBatchSize(batch).withHistorySteps(0).withAmp(amp);
        CharVocabulary v = CharVocabulary.of("abcdefghij klmnop");
        int f = o.blockSize() + 1;
        Random r = new Random(2);
        float[] x = new float[batch * f];
        for (int i = 0; i < x.length; i++) {
            x[i] = r.nextInt(v.size());
        }
        try (Trainer t = Trainer.on(dev, o, f, v.size(), v)) {
            return stepCounts(t, new Batch(0, batch, f, x, new int[batch]));
        }
    }

    @Test
    void anMlpStepWaitsOnlyToReadItsResultsBack() {
        long two = mlpStepWaits(2);
        long six = mlpStepWaits(6);
        assertEquals(two, six, "host waits of a step with 2 and with 6 hidden layers");
        assertTrue(two > 0 && two <= 6, "the loss and the predictions are read back: " + two + " waits");
    }

    @Test
    void aTransformerStepWaitsOnlyToReadItsResultsBack() {
        for (Precision amp : new Precision[] {Precision.OFF, Precision.BF16}) {
            long one = transformerStepWaits(1, amp);
            long four = transformerStepWaits(4, amp);
            assertEquals(one, four, amp + ": host waits of a step with 1 and with 4 blocks");
            assertTrue(one > 0 && one <= 6, amp + ": the loss and the predictions are read back: " + one + " waits");
        }
    }

    /**
     * What one Transformer block adds to a training step's kernel launches (its matrix products, which cuBLAS runs,
     * not counted), at 288 rows, so that the column sums take two launches: at most 25 in float32 and 47 under bf16
     * autocast, the counts of 2026-11-28. That day the q, k, v gradients stopped being copied into the projection's
     * (3 launches a block), a bias gradient's 16-bit sum stopped needing a cast (4 under bf16) and a layer norm's
     * dgamma and dbeta came to be summed by one launch (2): 30 and 56 before. A change that adds launches a block
     * fails here, and must raise the budget with its reason.
     */
    @Test
    void aTransformerBlockLaunchesNoMoreKernelsThanItsBudget() {
        long[] budget = {25, 47};
        Precision[] amp = {Precision.OFF, Precision.BF16};
        long[] perBlock = new long[2];
        for (int i = 0; i < 2; i++) {
            perBlock[i] = transformerStep(2, amp[i], 4, 72).launches() - transformerStep(1, amp[i], 4, 72).launches();
        }
        String what = "launches a block in float32 and bf16: " + perBlock[0] + " and " + perBlock[1] + ", budget "
                + budget[0] + " and " + budget[1];
        assertTrue(perBlock[0] <= budget[0] && perBlock[1] <= budget[1], what);
    }

    /**
     * A step's kernel launches follow the model's structure, not its sizes: a kernel launched per row or per element
     * (a strided copy looping on the host) would cost a GPU tens of thousands of launches a step at GPT-2's sizes.
     */
    @Test
    void aTransformerStepLaunchesAsManyKernelsAtEveryBatchAndContextSize() {
        for (Precision amp : new Precision[] {Precision.OFF, Precision.BF16, Precision.FP16}) {
            long small = transformerStep(2, amp, 2, 8).launches();
            assertEquals(small, transformerStep(2, amp, 4, 8).launches(), amp + ": launches at batch 2 and 4");
            assertEquals(small, transformerStep(2, amp, 2, 24).launches(), amp + ": launches at context 8 and 24");
        }
    }
}
