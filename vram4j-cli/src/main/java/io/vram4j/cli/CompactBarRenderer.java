package io.vram4j.cli;

import me.tongfei.progressbar.ProgressBarRenderer;
import me.tongfei.progressbar.ProgressState;

import java.util.Locale;

/**
 * Draws {@code train}'s progress bar so that the figures survive a narrow terminal: the task, a bar that takes
 * what the line leaves (at most 30 cells), the percentage, then the extra message (loss, accuracy, speed,
 * memory). On a narrower terminal the bar goes first, then the task name, and only then is the line cut. At 80 columns:
 * {@code epoch 1/3 ██████▋       45% loss 0.4321 acc 85.1% 12,345 samples/s 12.3/20.0 MiB}.
 */
final class CompactBarRenderer implements ProgressBarRenderer {
    private static final String BLOCKS = " ▏▎▍▌▋▊▉█";
    private static final int MAX_BAR = 30;

    @Override
    public String render(ProgressState state, int maxLength) {
        double p = state.getMax() <= 0 ? 0 : Math.min(1.0, (double) state.getCurrent() / state.getMax());
        String head = state.getTaskName() + " ";
        String tail = String.format(Locale.ROOT, " %3d%% %s", (int) Math.floor(100 * p), state.getExtraMessage());
        int width = Math.min(MAX_BAR, maxLength - head.length() - tail.length());
        String line = head + (width >= 5 ? bar(p, width) : "") + tail;
        if (line.length() > maxLength) {
            line = tail.substring(1); // the task goes next: the epoch is on the line above
        }
        return line.length() <= maxLength ? line : line.substring(0, Math.max(0, maxLength));
    }

    /** @return {@code width} cells filled to {@code p}, in eighths of a cell */
    static String bar(double p, int width) {
        int eighths = (int) Math.round(p * width * 8);
        StringBuilder sb = new StringBuilder(width);
        for (int i = 0; i < width; i++) {
            int cell = Math.max(0, Math.min(8, eighths - 8 * i));
            sb.append(BLOCKS.charAt(cell));
        }
        return sb.toString();
    }
}
