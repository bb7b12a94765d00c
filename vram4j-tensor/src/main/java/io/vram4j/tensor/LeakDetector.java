package io.vram4j.tensor;

import java.lang.ref.Cleaner;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Reports tensor storages that became unreachable without being closed, as Netty's
 * {@code ResourceLeakDetector} reports buffers that were not released.
 *
 * <p>Levels: {@link Level#OFF}; {@link Level#SAMPLED} (the default: one storage in
 * {@link #samplingInterval()}, 128 unless set, is tracked); {@link Level#PARANOID} (every storage). Tracked
 * storages capture their allocation stack. The level is read once from the system property
 * {@code vram4j.leakDetection} ({@code off}, {@code sampled}, {@code paranoid}; case-insensitive) and the
 * interval from {@code vram4j.leakDetection.samplingInterval}; {@link #setLevel} changes it at run time for
 * storages allocated afterwards.
 *
 * <p>A leak is detected through a {@link Cleaner}: when a tracked storage is garbage-collected before its
 * reference count reached zero, a {@link LeakReport} is printed to {@code System.err} and kept in a list that
 * {@link #reports()} returns. <b>The detector never frees the leaked memory</b>: the block stays allocated in
 * the caching allocator (and is listed when the allocator is closed), so the garbage collector never decides
 * when device memory is freed.
 *
 * <p>Thread-safe.
 */
public final class LeakDetector {
    /** How many storages are tracked. */
    public enum Level {
        /** No tracking. */
        OFF,
        /** One storage in {@link #samplingInterval()} is tracked, with its allocation stack. */
        SAMPLED,
        /** Every storage is tracked, with its allocation stack. */
        PARANOID
    }

    /** System property naming the level. */
    public static final String PROPERTY = "vram4j.leakDetection";
    /** System property giving the sampling interval of {@link Level#SAMPLED}. */
    public static final String INTERVAL_PROPERTY = "vram4j.leakDetection.samplingInterval";

    private static final Cleaner CLEANER = Cleaner.create();
    private static final AtomicLong COUNTER = new AtomicLong();
    private static final List<LeakReport> REPORTS = new ArrayList<>();
    private static volatile Level level = parseLevel(System.getProperty(PROPERTY));
    private static volatile int interval = parseInterval(System.getProperty(INTERVAL_PROPERTY));

    private LeakDetector() {
    }

    static Level parseLevel(String v) {
        if (v == null || v.isBlank()) {
            return Level.SAMPLED;
        }
        return switch (v.strip().toLowerCase(Locale.ROOT)) {
            case "off", "disabled", "none" -> Level.OFF;
            case "sampled", "simple" -> Level.SAMPLED;
            case "paranoid" -> Level.PARANOID;
            default -> {
                System.err.println("vram4j: ignoring " + PROPERTY + "=" + v + " (expected off, sampled or paranoid)");
                yield Level.SAMPLED;
            }
        };
    }

    private static int parseInterval(String v) {
        try {
            int i = v == null ? 128 : Integer.parseInt(v.strip());
            return i >= 1 ? i : 128;
        } catch (NumberFormatException e) {
            return 128;
        }
    }

    /** @return the current level */
    public static Level level() {
        return level;
    }

    /** @param newLevel the level for storages allocated from now on */
    public static void setLevel(Level newLevel) {
        level = java.util.Objects.requireNonNull(newLevel, "level");
    }

    /** @return one storage in this many is tracked at {@link Level#SAMPLED} */
    public static int samplingInterval() {
        return interval;
    }

    /** @param samplingInterval at least 1 */
    public static void setSamplingInterval(int samplingInterval) {
        if (samplingInterval < 1) {
            throw new IllegalArgumentException("samplingInterval: " + samplingInterval + " (expected: >= 1)");
        }
        interval = samplingInterval;
    }

    /** @return a copy of the leaks reported so far */
    public static List<LeakReport> reports() {
        synchronized (REPORTS) {
            return List.copyOf(REPORTS);
        }
    }

    /** Forgets the reports kept so far. */
    public static void clearReports() {
        synchronized (REPORTS) {
            REPORTS.clear();
        }
    }

    /** Starts tracking a storage when the level selects it; returns null otherwise. */
    static Tracker track(Storage storage, String device, long address, long bytes) {
        Level l = level;
        if (l == Level.OFF || (l == Level.SAMPLED && COUNTER.getAndIncrement() % interval != 0)) {
            return null;
        }
        Tracker t = new Tracker(device, address, bytes, new Throwable());
        t.cleanable = CLEANER.register(storage, t);
        return t;
    }

    static void report(LeakReport r) {
        synchronized (REPORTS) {
            REPORTS.add(r);
        }
        System.err.println(r.message());
    }

    /** The cleaning action; must not reference the storage. */
    static final class Tracker implements Runnable {
        private final String device;
        private final long address;
        private final long bytes;
        private final Throwable site;
        private volatile boolean released;
        private Cleaner.Cleanable cleanable;

        Tracker(String device, long address, long bytes, Throwable site) {
            this.device = device;
            this.address = address;
            this.bytes = bytes;
            this.site = site;
        }

        /** Called when the storage is released properly: no report. */
        void released() {
            released = true;
            cleanable.clean();
        }

        @Override
        public void run() {
            if (!released) {
                StringBuilder sb = new StringBuilder();
                for (StackTraceElement e : site.getStackTrace()) {
                    if (e.getClassName().equals(LeakDetector.class.getName())
                            || e.getClassName().equals(Storage.class.getName())) {
                        continue;
                    }
                    sb.append("\tat ").append(e).append('\n');
                }
                report(new LeakReport(device, address, bytes, sb.toString()));
            }
        }
    }
}
