package io.vram4j.amp;

import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * How {@link Autocast} treats an op (PyTorch's {@code at::autocast::CastPolicy} in
 * {@code aten/src/ATen/autocast_mode.h}), and the table of ops this runtime has, following the CUDA lists of
 * {@code aten/src/ATen/autocast_mode.cpp} (documented at "Autocast Op Reference" in the {@code torch.amp}
 * docs). Ops absent from the table run on their inputs as they are: element-wise ops ({@code add},
 * {@code sub}, {@code mul}, {@code div}) then produce the widest input type by ordinary type promotion
 * (float32 with a float32 operand; float32 for float16 with bfloat16), as in PyTorch.
 */
public enum CastPolicy {
    /**
     * Cast every floating-point input to the autocast dtype ({@code lower_precision_fp}); float32 leaf tensors
     * that require grad (weights) are cast once per autocast region and cached.
     */
    LOWER_PRECISION_FP,
    /** Cast every floating-point input to float32 ({@code fp32}). */
    FP32,
    /**
     * Run in float32 when the first input is floating point ({@code fp32_set_opt_dtype}: PyTorch sets the
     * op's output dtype; this runtime, which computes in float32 anyway, casts the input).
     */
    FP32_SET_OPT_DTYPE,
    /**
     * Run in the widest floating type among the autocast dtype and the inputs ({@code promote}: PyTorch's
     * {@code promote_type} starts from the autocast dtype, so float16 inputs under bfloat16 autocast run in
     * float32).
     */
    PROMOTE;

    private static final Map<String, CastPolicy> TABLE;

    static {
        Map<String, CastPolicy> t = new LinkedHashMap<>();
        // lower_precision_fp: matrix products (autocast_mode.cpp, CUDA "lower_precision_fp" list)
        for (String op : new String[] {"matmul", "mm", "bmm", "addmm", "baddbmm", "linear",
                "scaled_dot_product_attention"}) {
            t.put(op, LOWER_PRECISION_FP);
        }
        // fp32: ops whose range or precision needs float32 (CUDA "fp32" list)
        for (String op : new String[] {"exp", "log", "layer_norm", "nll_loss", "cross_entropy_loss"}) {
            t.put(op, FP32);
        }
        // fp32_set_opt_dtype: ops with an optional output dtype (CUDA "fp32_set_opt_dtype" list)
        for (String op : new String[] {"softmax", "log_softmax", "sum"}) {
            t.put(op, FP32_SET_OPT_DTYPE);
        }
        // Not in PyTorch's lists (its mean accumulates in float32 internally and returns the input dtype);
        // here a mean is a scaled sum, so it follows sum and returns float32.
        t.put("mean", FP32_SET_OPT_DTYPE);
        // promote: ops combining several tensors (CUDA "promote" list); none of them is a primitive here yet
        for (String op : new String[] {"cat", "stack", "dot", "addcmul", "addcdiv"}) {
            t.put(op, PROMOTE);
        }
        TABLE = Collections.unmodifiableMap(t);
    }

    /**
     * @param op a PyTorch op name, e.g. {@code matmul}
     * @return its policy, or null when autocast leaves the op alone
     */
    public static CastPolicy of(String op) {
        return TABLE.get(op);
    }

    /** @return the whole table, op name to policy, in a fixed order */
    public static Map<String, CastPolicy> table() {
        return TABLE;
    }
}
