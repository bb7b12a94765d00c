package io.vram4j.compute;

import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;

/**
 * Picks the kernel implementation, once, at first use. The Vector API implementation is only ever reached
 * through reflection, so this class (and {@link Kernels}, {@link ScalarKernels}) load in a JVM started
 * without {@code --add-modules jdk.incubator.vector}; there, initialising {@code VectorKernels} fails with
 * a {@link LinkageError}, which is caught and turns into "vector unavailable". Every implementation it hands
 * out is wrapped in {@link CheckedKernels}, the one place kernel arguments are checked.
 *
 * <p>System properties, read once:
 * <ul>
 *   <li>{@code vram4j.compute}: {@code scalar} or {@code vector} (default: vector when available);</li>
 *   <li>{@code vram4j.compute.threads}: default sgemm parallelism (default: available processors).</li>
 * </ul>
 */
final class KernelSelector {

    static final String PROPERTY = "vram4j.compute";
    static final String THREADS_PROPERTY = "vram4j.compute.threads";

    private static final System.Logger LOG = System.getLogger("io.vram4j.compute");

    private KernelSelector() {
    }

    /** Lazily initialised holder: the vector kernels, or the reason they are unavailable. */
    private static final class VectorHolder {
        static final Kernels VECTOR;
        static final Throwable FAILURE;

        static {
            Kernels k = null;
            Throwable failure = null;
            try {
                Class<?> cls = Class.forName("io.vram4j.compute.VectorKernels", true,
                        KernelSelector.class.getClassLoader());
                MethodHandle create = MethodHandles.lookup().findStatic(cls, "create",
                        MethodType.methodType(Kernels.class, int.class));
                k = CheckedKernels.of((Kernels) create.invoke(defaultThreads()));
            } catch (LinkageError | ReflectiveOperationException | RuntimeException e) {
                failure = e;
            } catch (Throwable t) {
                throw new ExceptionInInitializerError(t);
            }
            VECTOR = k;
            FAILURE = failure;
            if (failure != null) {
                LOG.log(System.Logger.Level.DEBUG, "vector kernels unavailable: " + failure);
            }
        }
    }

    /** The scalar kernels behind the argument checks, the one instance {@link Kernels#scalar()} returns. */
    static final Kernels SCALAR = CheckedKernels.of(ScalarKernels.INSTANCE);

    private static final class BestHolder {
        static final Kernels BEST = choose(System.getProperty(PROPERTY, ""));
    }

    static int defaultThreads() {
        int cpus = Runtime.getRuntime().availableProcessors();
        String v = System.getProperty(THREADS_PROPERTY);
        if (v == null || v.isBlank()) {
            return cpus;
        }
        try {
            int t = Integer.parseInt(v.trim());
            return t >= 1 ? t : cpus;
        } catch (NumberFormatException e) {
            LOG.log(System.Logger.Level.WARNING, "ignoring " + THREADS_PROPERTY + "=" + v);
            return cpus;
        }
    }

    static boolean vectorAvailable() {
        return VectorHolder.VECTOR != null;
    }

    static Kernels vector() {
        if (VectorHolder.VECTOR == null) {
            throw new UnsupportedOperationException(
                    "vector kernels need --add-modules jdk.incubator.vector: " + VectorHolder.FAILURE,
                    VectorHolder.FAILURE);
        }
        return VectorHolder.VECTOR;
    }

    static Kernels best() {
        return BestHolder.BEST;
    }

    /** Picks the kernels for a {@code vram4j.compute} value: "scalar", "vector" or "" (automatic). */
    static Kernels choose(String property) {
        String want = property == null ? "" : property.trim();
        Kernels chosen;
        if (want.equalsIgnoreCase("scalar")) {
            chosen = SCALAR;
        } else {
            if (!want.isEmpty() && !want.equalsIgnoreCase("vector")) {
                LOG.log(System.Logger.Level.WARNING, "unknown " + PROPERTY + "=" + want + "; choosing automatically");
            }
            chosen = vectorAvailable() ? VectorHolder.VECTOR : SCALAR;
            if (want.equalsIgnoreCase("vector") && !vectorAvailable()) {
                LOG.log(System.Logger.Level.WARNING, PROPERTY + "=vector but the Vector API is unavailable ("
                        + VectorHolder.FAILURE + "); using scalar kernels");
            }
        }
        LOG.log(System.Logger.Level.DEBUG, "compute kernels: " + chosen.name() + " (threads " + chosen.threads() + ")");
        return chosen;
    }
}
