package io.vram4j.train;

import io.vram4j.alloc.config.AllocatorConfig;
import io.vram4j.testsupport.GpuTests;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The main job's techniques on {@code cuda} compute what they compute on {@code host}: for the MLP and the small
 * transformer, baseline, checkpointing, bf16 and fp16 autocast (with the GradScaler), and for the MLP accumulation
 * and micro-batching too (they change the loop, not the kernels), four steps through {@link TrainJob} on each device, with the same step losses within float32's agreement between
 * two summation orders (1e-4 relative; 1e-2 with 16-bit autocast, whose roundings may fall differently; on the
 * emulated GPU every row agreed within 5e-6, and a cuBLAS product 5% off failed both tests), and a run
 * folder with the memory statistics on {@code cuda}. Tagged {@code gpu}: skipped with the reason where no GPU opens, failed
 * instead with {@code VRAM4J_REQUIRE_GPU=1}; in CI it runs on the emulated GPU.
 */
@Tag("gpu")
class GpuTrainTechniquesTest {

    private static List<Double> stepLosses(TrainOptions o, String device, Path out) {
        List<Double> losses = new ArrayList<>();
        TrainListener listener = new TrainListener() {
            @Override
            public void stepDone(StepInfo info) {
                losses.add(info.loss());
            }
        };
        TrainJob.builder(o).data(null).device(device).out(out).listener(listener)
                .report(new PrintWriter(new StringWriter(), true)).allocatorConfig(AllocatorConfig.fromEnvironment(Map.of()))
                .build().run();
        return losses;
    }

    /** Baseline, checkpointing, bf16 and fp16 autocast: what runs other kernels (or the same at other types). */
    private static List<TrainOptions> kernelRows(TrainOptions base) {
        return List.of(base, base.withCheckpoint(2), base.withAmp(Precision.BF16), base.withAmp(Precision.FP16));
    }

    private static void agree(List<TrainOptions> rows, Path tmp) throws Exception {
        int n = 0;
        for (TrainOptions o : rows) {
            TrainOptions row = o.withMaxSteps(4).withEpochs(1);
            String name = row.isTransformer() ? row.describe(0, 96) : row.describe(784, 10);
            Path out = tmp.resolve("row" + n++);
            List<Double> host = stepLosses(row, "host", out.resolve("host"));
            List<Double> cuda = stepLosses(row, "cuda", out.resolve("cuda"));
            assertEquals(host.size(), cuda.size(), name + ": steps");
            assertTrue(host.size() >= 4, name + ": steps " + host.size());
            double tolerance = row.amp() == Precision.OFF ? 1e-4 : 1e-2;
            for (int i = 0; i < host.size(); i++) {
                double h = host.get(i);
                double c = cuda.get(i);
                assertTrue(Double.isFinite(c) && Math.abs(h - c) <= tolerance * Math.abs(h),
                        name + ": step " + i + " loss on cuda " + c + ", on host " + h);
            }
            assertTrue(Files.isRegularFile(out.resolve("cuda").resolve("memory_stats.json")),
                    name + ": the run folder on cuda holds the memory statistics");
        }
    }

    @Test
    void mlpTechniquesOnTheGpuComputeWhatTheyComputeOnHost(@TempDir Path tmp) throws Exception {
        GpuTests.require(GpuTests.unavailableReason());
        TrainOptions base = TrainOptions.defaults().withHidden(64).withLayers(2).withBatchSize(32).withHistorySteps(0)
                .withSchedule("constant").withLimit(256).withTestLimit(64);
        List<TrainOptions> rows = new ArrayList<>(kernelRows(base));
        rows.addAll(List.of(base.withAccumulate(2), base.withMicroBatch(8)));
        agree(rows, tmp);
    }

    @Test
    void transformerTechniquesOnTheGpuComputeWhatTheyComputeOnHost(@TempDir Path tmp) throws Exception {
        GpuTests.require(GpuTests.unavailableReason());
        agree(kernelRows(TrainTechniquesTest.lm().withTestLimit(32)), tmp);
    }
}
