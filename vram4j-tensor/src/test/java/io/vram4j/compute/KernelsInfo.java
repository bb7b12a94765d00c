package io.vram4j.compute;

/** Prints the kernels {@link Kernels#best()} picks; run in a child JVM by {@link KernelSelectionTest}. */
public final class KernelsInfo {

    private KernelsInfo() {
    }

    public static void main(String[] args) {
        Kernels k = Kernels.best();
        System.out.println("best=" + k.name() + " vectorAvailable=" + Kernels.vectorAvailable() + " threads=" + k.threads());
        // the chosen kernels work
        try (java.lang.foreign.Arena arena = java.lang.foreign.Arena.ofConfined()) {
            java.lang.foreign.MemorySegment s = arena.allocate(64);
            k.fill(4, 2f, s, 0);
            k.sgemm(false, false, 2, 2, 2, 1f, s, 0, 2, s, 0, 2, 0f, s, 8, 2);
            System.out.println("sum=" + k.sum(4, s, 8));
        }
    }
}
