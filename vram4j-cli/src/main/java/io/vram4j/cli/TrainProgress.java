package io.vram4j.cli;

import io.vram4j.memory.stats.FormatSize;
import io.vram4j.train.EpochResult;
import io.vram4j.train.StepInfo;
import io.vram4j.train.TrainListener;
import me.tongfei.progressbar.ConsoleProgressBarConsumer;
import me.tongfei.progressbar.ProgressBar;
import me.tongfei.progressbar.ProgressBarBuilder;

import java.io.PrintStream;
import java.io.PrintWriter;
import java.util.Locale;

/**
 * Shows {@code train}'s progress: a progress bar per epoch on a terminal (me.tongfei:progressbar on standard
 * error), plain lines at every tenth of an epoch otherwise (CI logs, redirected output), or nothing. After each
 * epoch, prints the epoch's result and a memory line in the style of users' {@code log_memory} helpers.
 */
final class TrainProgress implements TrainListener {
    enum Mode {
        /** a progress bar if standard error is a terminal, else lines */
        AUTO,
        /** a progress bar */
        BAR,
        /** plain lines */
        LINES,
        /** nothing but the per-epoch lines */
        NONE
    }

    private final Mode mode;
    private final PrintStream progressOut;
    private final PrintWriter report;
    private final String unit;
    private ProgressBar bar;
    private int lastLineDecile;

    /**
     * @param mode how to show progress ({@code AUTO} resolved already)
     * @param progressOut where bars and progress lines go (standard error)
     * @param report where the per-epoch lines go
     * @param unit what the speed counts: {@code "samples"} (the MLP's images) or {@code "chars"} (the language
     *     model's predicted characters)
     */
    TrainProgress(Mode mode, PrintStream progressOut, PrintWriter report, String unit) {
        this.mode = mode == Mode.AUTO ? (Terminal.stderrIsTerminal() ? Mode.BAR : Mode.LINES) : mode;
        this.progressOut = progressOut;
        this.report = report;
        this.unit = unit;
    }

    Mode mode() {
        return mode;
    }

    @Override
    public void epochStarted(int epoch, int epochs, int steps) {
        lastLineDecile = 0;
        if (mode == Mode.BAR) {
            bar = new ProgressBarBuilder()
                    .setTaskName(String.format(Locale.ROOT, "epoch %d/%d", epoch, epochs))
                    .setInitialMax(steps)
                    .setRenderer(new CompactBarRenderer())
                    .setUpdateIntervalMillis(200)
                    .setMaxRenderedLength(160)
                    .continuousUpdate()
                    .setConsumer(new ConsoleProgressBarConsumer(progressOut))
                    .build();
        }
    }

    @Override
    public void stepDone(StepInfo s) {
        switch (mode) {
            case BAR -> {
                if (bar != null) {
                    bar.stepTo(s.step());
                    bar.setExtraMessage(barMessage(s, unit));
                }
            }
            case LINES -> {
                int decile = (int) ((long) s.step() * 10 / s.steps());
                if (decile > lastLineDecile || s.step() == s.steps()) {
                    lastLineDecile = decile;
                    progressOut.printf(Locale.ROOT, "epoch %d/%d [%d/%d] loss %.4f acc %.2f%% %,.0f %s/s allocated %s reserved %s%n",
                            s.epoch(), s.epochs(), s.step(), s.steps(), s.loss(), 100 * s.accuracy(), s.samplesPerSec(), unit,
                            FormatSize.formatSize(s.allocated()), FormatSize.formatSize(s.reserved()));
                    progressOut.flush();
                }
            }
            default -> {
            }
        }
    }

    @Override
    public void trainingPartDone(int epoch) {
        closeBar();
    }

    @Override
    public void epochDone(EpochResult r) {
        closeBar();
        report.printf(Locale.ROOT, "epoch %d: train loss %.4f, train accuracy %.2f%%, test loss %.4f, test accuracy %.2f%%, %.1f s, %,.0f %s/s%n",
                r.epoch(), r.loss(), 100 * r.accuracy(), r.test().loss(), 100 * r.test().accuracy(), r.seconds(), r.samplesPerSec(), unit);
        report.println(r.memory().line("epoch " + r.epoch()));
        report.println(r.peaks().line("epoch " + r.epoch()));
        report.flush();
    }

    @Override
    public void historyCaptured(int steps) {
        if (mode == Mode.LINES) {
            progressOut.printf("memory history of the first %d step%s captured; recording stopped%n", steps, steps == 1 ? "" : "s");
        }
    }

    /**
     * @return the bar's figures in at most about 55 characters, so that an 80-column line keeps them all:
     *     {@code loss 0.4321 acc 85.1% 12,345 samples/s 12.3/20.0 MiB} (allocated / reserved)
     */
    static String barMessage(StepInfo s, String unit) {
        return String.format(Locale.ROOT, "loss %.4f acc %.1f%% %,.0f %s/s %.1f/%.1f MiB", s.loss(), 100 * s.accuracy(),
                s.samplesPerSec(), unit, s.allocated() / 1048576.0, s.reserved() / 1048576.0);
    }

    private void closeBar() {
        if (bar != null) {
            bar.close();
            bar = null;
            progressOut.flush();
        }
    }

    /** Closes a bar left open by an exception. */
    @Override
    public void trainingEnded() {
        closeBar();
    }
}
