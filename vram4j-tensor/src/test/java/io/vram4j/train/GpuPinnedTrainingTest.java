package io.vram4j.train;

import io.vram4j.alloc.config.AllocatorConfig;
import io.vram4j.testsupport.GpuTests;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@code train --device cuda} with pinned batches copied on a side stream against the pageable path: the same
 * losses step by step, the same test loss and accuracy. Tagged {@code gpu}: skipped with the reason where no GPU
 * opens, failed instead with {@code VRAM4J_REQUIRE_GPU=1} (gpu/run.sh sets it).
 */
@Tag("gpu")
class GpuPinnedTrainingTest {

    private record Run(List<Double> stepLosses, TrainResult result, String report) {
    }

    /** The job on the first 1,000 / 500 images of the data {@code train} finds (the bundled subset at least), 2 epochs. */
    private static Run train(boolean pinMemory, Path out) {
        List<Double> losses = new ArrayList<>();
        TrainListener listener = new TrainListener() {
            @Override
            public void stepDone(StepInfo info) {
                losses.add(info.loss());
            }
        };
        StringWriter report = new StringWriter();
        TrainOptions o = TrainOptions.builder().epochs(2).batchSize(100).limit(1000).testLimit(500).historySteps(0)
                .pinMemory(pinMemory).build();
        TrainJob.Result r = TrainJob.builder(o).data(null).device("cuda").out(out).listener(listener)
                .report(new PrintWriter(report, true)).allocatorConfig(AllocatorConfig.fromEnvironment(Map.of())).build()
                .run();
        return new Run(losses, r.training(), report.toString());
    }

    @Test
    void pinnedBatchesTrainExactlyAsPageableOnes(@TempDir Path tmp) {
        GpuTests.require(GpuTests.unavailableReason());
        Run pinned = train(true, tmp.resolve("pinned"));
        Run pageable = train(false, tmp.resolve("pageable"));
        assertTrue(pinned.report().contains("data loader: pinned memory, batches copied one ahead on a side stream"),
                pinned.report());
        assertFalse(pageable.report().contains("data loader: pinned memory"), pageable.report());
        assertEquals(20, pinned.stepLosses().size());
        assertEquals(pageable.stepLosses(), pinned.stepLosses(), "step by step, bit for bit");
        for (int e = 0; e < 2; e++) {
            EpochResult p = pinned.result().epochs().get(e);
            EpochResult q = pageable.result().epochs().get(e);
            assertEquals(q.loss(), p.loss());
            assertEquals(q.test().loss(), p.test().loss());
            assertEquals(q.test().accuracy(), p.test().accuracy());
        }
        assertTrue(pinned.result().epochs().get(1).test().accuracy() > 0.5, "it learns");
    }
}
