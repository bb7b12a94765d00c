package io.vram4j.testsupport;

/**
 * How hard the fuzz and stress tests push. By default they run a bounded number of operations, so that the
 * suite stays within a few minutes on two cores; with {@code -Dvram4j.test.long=true} (as {@code .ci/run} sets)
 * they run at full strength.
 */
public final class TestStrength {
    private TestStrength() {
    }

    /** @return true in the long mode ({@code -Dvram4j.test.long=true}) */
    public static boolean isLong() {
        return Boolean.getBoolean("vram4j.test.long");
    }

    /**
     * @param bounded the count for the default mode
     * @param full the count for the long mode
     * @return {@code full} in the long mode, else {@code bounded}
     */
    public static int ops(int bounded, int full) {
        return isLong() ? full : bounded;
    }
}
