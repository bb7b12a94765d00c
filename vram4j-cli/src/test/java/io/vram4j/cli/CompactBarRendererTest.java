package io.vram4j.cli;

import io.vram4j.train.StepInfo;
import me.tongfei.progressbar.ProgressBar;
import me.tongfei.progressbar.ProgressBarBuilder;
import me.tongfei.progressbar.ProgressBarConsumer;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

class CompactBarRendererTest {
    /** Renders a bar at {@code columns} through progressbar's own machinery and returns the last line drawn. */
    static String render(int columns, String extra, long current, long max) {
        List<String> lines = new ArrayList<>();
        ProgressBarConsumer consumer = new ProgressBarConsumer() {
            @Override
            public int getMaxRenderedLength() {
                return columns;
            }

            @Override
            public void accept(String rendered) {
                lines.add(rendered);
            }

            @Override
            public void close() {
            }
        };
        try (ProgressBar bar = new ProgressBarBuilder().setTaskName("epoch 10/10").setInitialMax(max).setRenderer(new CompactBarRenderer())
                .setConsumer(consumer).setUpdateIntervalMillis(10_000).build()) {
            bar.stepTo(current);
            bar.setExtraMessage(extra);
            bar.refresh();
        }
        return lines.getLast();
    }

    @Test
    void at80ColumnsLossAccuracySpeedAndMemoryAllShow() {
        // a large run: six-figure speed, GiB-scale memory in MiB
        StepInfo s = new StepInfo(10, 10, 4_000, 4_690, 46_000, 0.43219, 0.8512, 123_456.7, 1_234_567_890L, 2_147_483_648L);
        String extra = TrainProgress.barMessage(s, "samples");
        assertEquals("loss 0.4322 acc 85.1% 123,457 samples/s 1177.4/2048.0 MiB", extra);
        String line = render(80, extra, 4_000, 4_690);
        assertTrue(line.length() <= 80, line.length() + ": " + line);
        assertTrue(line.endsWith(extra), line);
        assertTrue(line.startsWith("epoch 10/10 ") && line.contains(" 85% "), line);
        assertTrue(line.contains("█"), "a bar is drawn: " + line);
        // the transformer counts characters
        assertTrue(TrainProgress.barMessage(s, "chars").contains(" chars/s "));
    }

    @Test
    void aNarrowTerminalDropsTheBarBeforeTheFigures() {
        String extra = "loss 0.4322 acc 85.1% 123,457 samples/s 1177.4/2048.0 MiB";
        String line = render(70, extra, 1, 2);
        assertTrue(line.length() <= 70 && line.endsWith(extra) && !line.contains("█"), line);
        assertEquals(" ".repeat(10), CompactBarRenderer.bar(0, 10));
        assertEquals("█".repeat(10), CompactBarRenderer.bar(1, 10));
        assertEquals("█████     ", CompactBarRenderer.bar(0.5, 10));
        assertEquals("▌", CompactBarRenderer.bar(0.5, 1));
    }
}
