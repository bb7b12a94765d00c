package io.vram4j.train;

import io.vram4j.alloc.config.AllocatorConfig;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The library entry point of {@code vram4j train}: a short real job, a dry run, and refused jobs. */
class TrainJobTest {
    /** The bundled subset, from the source tree, so the test does not depend on the machine's data. */
    static final Path BUNDLED = Path.of("src/main/resources/io/vram4j/data/fashion-mnist");

    private static TrainOptions small() {
        return TrainOptions.builder().hidden(32).epochs(1).batchSize(50).limit(1000).historySteps(2).build();
    }

    @Test
    void aShortJobTrainsAndWritesTheRunFolder(@TempDir Path tmp) throws Exception {
        StringWriter text = new StringWriter();
        int[] steps = new int[1];
        int[] ended = new int[1];
        TrainListener listener = new TrainListener() {
            @Override
            public void stepDone(StepInfo info) {
                steps[0]++;
            }

            @Override
            public void trainingEnded() {
                ended[0]++;
            }
        };
        Path runDir = tmp.resolve("run");
        TrainJob.Result r = TrainJob.builder(small()).data(BUNDLED).device("host:256MiB").allocatorConfig(AllocatorConfig.fromEnvironment(Map.of()))
                .out(runDir).report(new PrintWriter(text)).listener(listener).build().run();
        assertEquals(20, steps[0], "1,000 samples in batches of 50");
        assertEquals(1, ended[0]);
        assertNull(r.dryRun());
        assertEquals(runDir, r.runDir());
        Map<String, Object> s = r.summary();
        assertEquals("ok", s.get("status"));
        assertEquals(r.training().test().accuracy(), s.get("accuracy"));
        assertTrue((double) s.get("accuracy") > 0.3, "well above chance (0.1) after 20 steps: " + s.get("accuracy"));
        assertEquals(runDir.toString(), s.get("run_dir"));
        for (String f : new String[] {"memory_summary.txt", "memory_stats.json", "memory_snapshot.pickle", "memory_timeline.html", "result.json"}) {
            assertTrue(Files.size(runDir.resolve(f)) > 0, f);
        }
        assertTrue(Files.readString(runDir.resolve("result.json")).contains("\"peak_allocated_bytes\""));
        String out = text.toString();
        assertTrue(out.startsWith("data: Fashion-MNIST from"), out);
        assertTrue(out.contains("test accuracy: "), out);
        assertTrue(out.contains("run folder: " + runDir + " (memory_summary.txt, memory_stats.json, memory_snapshot.pickle, "
                + "memory_timeline.html, result.json)"), out);
    }

    @Test
    void aDryRunOnASimulatedDeviceComputesNothing(@TempDir Path tmp) {
        TrainJob.Result r = TrainJob.builder(small()).data(BUNDLED).device("sim:1GiB").allocatorConfig(AllocatorConfig.fromEnvironment(Map.of()))
                .dryRun(true).out(tmp.resolve("dry")).build().run();
        assertNull(r.training());
        assertEquals(50, r.dryRun().batchSize());
        assertEquals(Boolean.TRUE, r.summary().get("dry_run"));
        assertTrue((long) r.summary().get("peak_allocated_bytes") > 0);
    }

    @Test
    void refusedJobsNameTheOptionAndLeaveNoRunFolder(@TempDir Path tmp) {
        Path runDir = tmp.resolve("never");
        TrainJob.Builder sim = TrainJob.builder(small()).data(BUNDLED).device("sim:1GiB").allocatorConfig(AllocatorConfig.fromEnvironment(Map.of()))
                .out(runDir);
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> sim.build().run());
        assertTrue(e.getMessage().startsWith("--device: ") && e.getMessage().contains("add --dry-run"), e.getMessage());
        assertFalse(Files.exists(runDir));
        TrainJob big = TrainJob.builder(small().withBatchSize(2000)).data(BUNDLED).allocatorConfig(AllocatorConfig.fromEnvironment(Map.of())).out(runDir).build();
        assertEquals("--batch-size 2,000 is larger than the training set (1,000 samples after --limit); use at most 1,000",
                assertThrows(IllegalArgumentException.class, big::run).getMessage());
        TrainJob missing = TrainJob.builder(small()).data(tmp.resolve("no-such-folder")).allocatorConfig(AllocatorConfig.fromEnvironment(Map.of())).build();
        assertTrue(assertThrows(IllegalArgumentException.class, missing::run).getMessage().startsWith("--data: "));
        assertEquals("--device: ", assertThrows(IllegalArgumentException.class,
                () -> TrainJob.builder(small()).data(BUNDLED).device("gpu:0").allocatorConfig(AllocatorConfig.fromEnvironment(Map.of())).build().run())
                .getMessage().substring(0, 10));
        assertThrows(IllegalArgumentException.class, () -> TrainJob.builder(small()).sampleChars(-1));
        assertFalse(Files.exists(runDir));
    }
}
