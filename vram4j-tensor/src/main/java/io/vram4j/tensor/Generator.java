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
}
