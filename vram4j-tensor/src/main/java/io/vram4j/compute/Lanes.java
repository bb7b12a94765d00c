package io.vram4j.compute;

import jdk.incubator.vector.DoubleVector;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.VectorShuffle;
import jdk.incubator.vector.VectorSpecies;

/**
 * Horizontal sums of vector lanes in one fixed order, so a kernel gives the same bits interpreted, in C1 and in
 * C2.
 *
 * <p>Why not {@code reduceLanes(VectorOperators.ADD)}: for floating-point lanes its order of additions is
 * unspecified, and it is not the same in the Java fallback (lane by lane, used by the interpreter and C1) and in
 * C2's intrinsic (a tree). The sums then differ in the last bit once the JIT compiles a kernel, which broke
 * activation checkpointing's bitwise recomputation. Here the lanes are folded in halves by rotations (lane
 * {@code i} plus lane {@code i + L/2}, then {@code i + L/4}, ...), each fold an ordinary lane-wise addition with
 * one rounding per lane, and lane 0 holds the sum. Cost: {@code log2(L)} shuffles and additions. Shapes wider
 * than 16 floats (8 doubles) are summed lane by lane, also in one fixed order.
 */
final class Lanes {

    private static final VectorSpecies<Float> FS = VectorGemm.SP;
    private static final VectorSpecies<Double> DS = DoubleVector.SPECIES_PREFERRED;
    private static final int FL = FS.length();
    private static final int DL = DS.length();
    // rotations by 8, 4, 2, 1 lanes (wrapping); only those below the species length are used
    private static final VectorShuffle<Float> F8 = VectorShuffle.iota(FS, 8 % FL, 1, true);
    private static final VectorShuffle<Float> F4 = VectorShuffle.iota(FS, 4 % FL, 1, true);
    private static final VectorShuffle<Float> F2 = VectorShuffle.iota(FS, 2 % FL, 1, true);
    private static final VectorShuffle<Float> F1 = VectorShuffle.iota(FS, 1 % FL, 1, true);
    private static final VectorShuffle<Double> D4 = VectorShuffle.iota(DS, 4 % DL, 1, true);
    private static final VectorShuffle<Double> D2 = VectorShuffle.iota(DS, 2 % DL, 1, true);
    private static final VectorShuffle<Double> D1 = VectorShuffle.iota(DS, 1 % DL, 1, true);

    private Lanes() {
    }

    /** @return the sum of the lanes of {@code v} (a vector of {@link VectorGemm#SP}), in a fixed order */
    static float sum(FloatVector v) {
        if (FL > 16) { // wider shapes (e.g. SVE beyond 512 bits): lane by lane, also a fixed order
            float s = 0f;
            for (int i = 0; i < FL; i++) {
                s += v.lane(i);
            }
            return s;
        }
        if (FL == 16) {
            v = v.add(v.rearrange(F8));
        }
        if (FL >= 8) {
            v = v.add(v.rearrange(F4));
        }
        if (FL >= 4) {
            v = v.add(v.rearrange(F2));
        }
        if (FL >= 2) {
            v = v.add(v.rearrange(F1));
        }
        return v.lane(0);
    }

    /** @return the sum of the lanes of {@code v} (a vector of the preferred double species), in a fixed order */
    static double sum(DoubleVector v) {
        if (DL > 8) {
            double s = 0;
            for (int i = 0; i < DL; i++) {
                s += v.lane(i);
            }
            return s;
        }
        if (DL == 8) {
            v = v.add(v.rearrange(D4));
        }
        if (DL >= 4) {
            v = v.add(v.rearrange(D2));
        }
        if (DL >= 2) {
            v = v.add(v.rearrange(D1));
        }
        return v.lane(0);
    }
}
