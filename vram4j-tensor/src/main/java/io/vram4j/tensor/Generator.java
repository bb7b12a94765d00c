package io.vram4j.tensor;

/**
 * A seeded, replayable source of random numbers for initialisation and dropout (as {@code torch.Generator}).
 * The whole state is one {@code long} ({@link #state()}, {@link #setState}), so a checkpointing scheme can
 * save it before a forward pass and restore it to replay the same dropout masks. The sequence is SplitMix64,
 * identical on every JVM. Dropout draws one seed per call on every device; random fills draw nothing on
 * {@code sim}, which has no data.
 *
 * <p>Not thread-safe.
 */
public final class Generator {
    private static final long GOLDEN = 0x9E3779B97F4A7C15L;
    private static final ThreadLocal<Observation> OBSERVER = new ThreadLocal<>();
    /** Open observations on all threads: a cheap gate so draws skip the thread-local lookup when zero. */
    private static volatile int observations;
    private long state;
    private double spare = Double.NaN;

    /** @param seed any value; equal seeds give equal sequences */
    public Generator(long seed) {
        this.state = seed;
    }

    /** @return the current state (also clears the cached second Gaussian, so state round trips are exact) */
    public long state() {
        return state;
    }

    /** @param newState a value from {@link #state()} */
    public void setState(long newState) {
        this.state = newState;
        this.spare = Double.NaN;
    }

    /** @return an independent copy in the same state */
    public Generator copy() {
        Generator g = new Generator(state);
        g.spare = spare;
        return g;
    }

    /** @return 64 random bits */
    public long nextLong() {
        if (observations != 0) {
            for (Observation o = OBSERVER.get(); o != null; o = o.previous) {
                o.observer.beforeDraw(this);
            }
        }
        spare = Double.NaN;
        return mix(state += GOLDEN);
    }

    static long mix(long z) {
        z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L;
        z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
        return z ^ (z >>> 31);
    }

    /** @return a uniform double in [0, 1) */
    public double nextDouble() {
        return (nextLong() >>> 11) * 0x1.0p-53;
    }

    /** @return a uniform float in [0, 1) */
    public float nextFloat() {
        return (nextLong() >>> 40) * 0x1.0p-24f;
    }

    /** @return a standard normal sample (Box-Muller) */
    public double nextGaussian() {
        double u1 = nextDouble();
        double u2 = nextDouble();
        double r = Math.sqrt(-2 * Math.log(1 - u1));
        return r * Math.cos(2 * Math.PI * u2);
    }

    /**
     * Told about every draw from any generator on the observing thread, before the draw changes its state.
     * Activation checkpointing uses it to remember the state of each generator a checkpointed region draws
     * from, so the recomputation replays the same dropout masks (PyTorch's {@code preserve_rng_state}).
     */
    @FunctionalInterface
    public interface DrawObserver {
        /** @param g the generator about to draw (its {@link #state()} is still the pre-draw state) */
        void beforeDraw(Generator g);
    }

    /** An open observation; closing it restores the previous observer of this thread. */
    public static final class Observation implements AutoCloseable {
        private final Observation previous;
        private final DrawObserver observer;
        private boolean closed;

        private Observation(DrawObserver observer) {
            this.previous = OBSERVER.get();
            this.observer = observer;
            OBSERVER.set(this);
            synchronized (Generator.class) {
                observations++;
            }
        }

        /** Stops observing. Idempotent. @throws IllegalStateException when an inner observation is open */
        @Override
        public void close() {
            if (closed) {
                return;
            }
            if (OBSERVER.get() != this) {
                throw new IllegalStateException("generator observations must be closed innermost first");
            }
            closed = true;
            OBSERVER.set(previous);
            synchronized (Generator.class) {
                observations--;
            }
        }
    }

    /**
     * Observes draws on this thread until the returned block closes. Blocks nest: every open observer of the
     * thread is told, innermost first. Draws on other threads are not observed.
     *
     * @param observer the observer
     * @return the block
     */
    public static Observation observe(DrawObserver observer) {
        if (observer == null) {
            throw new IllegalArgumentException("observer must not be null");
        }
        return new Observation(observer);
    }
}
