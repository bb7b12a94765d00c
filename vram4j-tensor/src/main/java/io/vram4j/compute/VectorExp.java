package io.vram4j.compute;

import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.IntVector;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorSpecies;

/**
 * {@code exp} on float vectors from IEEE additions, multiplications and fused multiply-adds only, so every
 * lane gets the same bits whether the code runs interpreted, in C1 or in C2.
 *
 * <p>Why not {@code lanewise(VectorOperators.EXP)}: C2 computes it with the platform's vector math library
 * (SVML on x86) while the interpreter and C1 evaluate {@code Math.exp} lane by lane, and the two can differ
 * in the last bit. A computation repeated in the same run (gradient checkpointing recomputes the forward
 * pass) then gave other bits when the JIT had compiled the kernel in between.
 *
 * <p>Method: {@code n = round(x / ln 2)}, {@code r = x - n ln 2} (ln 2 split in two parts, Cody and Waite),
 * {@code exp(r)} by its Taylor polynomial of degree 7 in Horner form ({@code |r| <= ln(2) / 2}, truncation
 * below {@code 5e-9} relative), then the result times {@code 2^n} in two steps so results near overflow and in
 * the subnormal range round once. Error: within 2 ulp of {@code Math.exp} for normal results (tested);
 * {@code +Inf} above 88.72, 0 below -103.97, NaN for NaN, {@code exp(-Inf) = 0}, {@code exp(+Inf) = +Inf}.
 */
final class VectorExp {

    private static final VectorSpecies<Float> SP = VectorGemm.SP;
    private static final float LOG2E = 1.44269504088896341f;
    /** ln 2 = LN2_HI + LN2_LO, LN2_HI with its low 12 bits zero so n * LN2_HI is exact for |n| < 2^12. */
    private static final float LN2_HI = 0.693145751953125f;
    private static final float LN2_LO = 1.42860682030941723212e-6f;
    /** 1.5 * 2^23: adding and subtracting it rounds a float below 2^22 in magnitude to the nearest integer. */
    private static final float ROUNDER = 12582912f;
    private static final float MAX_IN = 89f;
    private static final float MIN_IN = -104f;
    private static final FloatVector NEG_LN2_LO = FloatVector.broadcast(SP, -LN2_LO);
    private static final FloatVector C5 = FloatVector.broadcast(SP, 1f / 120f);
    private static final FloatVector C4 = FloatVector.broadcast(SP, 1f / 24f);
    private static final FloatVector C3 = FloatVector.broadcast(SP, 1f / 6f);
    private static final FloatVector C2 = FloatVector.broadcast(SP, 0.5f);
    private static final FloatVector ONE = FloatVector.broadcast(SP, 1f);

    private VectorExp() {
    }

    /** @return {@code exp(x)} lane by lane */
    static FloatVector exp(FloatVector x) {
        // clamping keeps n in [-150, 129]; min/max keep NaN lanes NaN
        FloatVector xc = x.max(MIN_IN).min(MAX_IN);
        FloatVector n = xc.mul(LOG2E).add(ROUNDER).sub(ROUNDER);
        FloatVector r = xc.sub(n.mul(LN2_HI)); // exact: n * LN2_HI has at most 20 significant bits
        r = n.fma(NEG_LN2_LO, r);
        FloatVector p = r.fma(1f / 5040f, 1f / 720f);
        p = p.fma(r, C5);
        p = p.fma(r, C4);
        p = p.fma(r, C3);
        p = p.fma(r, C2);
        p = p.fma(r, ONE);
        p = p.fma(r, ONE);
        // 2^n as 2^n1 * 2^n2 with n1 = floor(n / 2): both factors are normal floats for n in [-150, 129]
        IntVector ni = (IntVector) n.convert(VectorOperators.F2I, 0);
        IntVector n1 = ni.lanewise(VectorOperators.ASHR, 1);
        IntVector n2 = ni.sub(n1);
        FloatVector s1 = n1.add(127).lanewise(VectorOperators.LSHL, 23).reinterpretAsFloats();
        FloatVector s2 = n2.add(127).lanewise(VectorOperators.LSHL, 23).reinterpretAsFloats();
        return p.mul(s1).mul(s2);
    }
}
