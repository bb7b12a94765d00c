package io.vram4j.compute.cuda;

import org.junit.jupiter.api.Test;

import java.nio.charset.StandardCharsets;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

/**
 * Holds the Java launch descriptors to the compiled kernels without a GPU: a launch whose parameters differ in
 * number or type from the kernel's {@code .entry} would read garbage on the device (or fail with
 * CUDA_ERROR_INVALID_VALUE), so every descriptor must name an entry of the committed PTX with exactly its
 * parameter types, and every entry must have a descriptor (no kernel compiled and never launched).
 */
class CudaKernelTableTest {
    private static final PtxEntries PTX = PtxEntries.parse(
            new String(CudaKernelTable.ptx(), StandardCharsets.US_ASCII), CudaKernelTable.PTX_RESOURCE);

    @Test
    void everyDescriptorMatchesItsEntryExactly() {
        for (CudaKernel k : CudaKernelTable.ALL) {
            List<String> declared = PTX.entries().get(k.name());
            if (declared == null) {
                fail("no .entry " + k.name() + " in " + CudaKernelTable.PTX_RESOURCE + "; entries: " + PTX.entries().keySet());
            }
            List<String> expected = k.params().stream().map(KernelParam::ptxType).toList();
            assertEquals(declared, expected, k.name() + ": PTX parameters vs the Java descriptor");
        }
    }

    @Test
    void everyEntryIsLaunchedByADescriptorAndNamesAreUnique() {
        Set<String> described = new HashSet<>();
        for (CudaKernel k : CudaKernelTable.ALL) {
            assertTrue(described.add(k.name()), "described twice: " + k.name());
        }
        Set<String> unused = new TreeSet<>(PTX.entries().keySet());
        unused.removeAll(described);
        assertEquals(Set.of(), unused, "entries of the PTX that no descriptor launches");
        assertEquals(described.size(), PTX.entries().size());
    }

    @Test
    void thePtxTargetsAVirtualArchitectureTheDriverCompiles() {
        assertEquals("sm_80", PTX.target());
        assertTrue(PTX.isaVersion().matches("\\d+\\.\\d+"), PTX.isaVersion());
    }

    @Test
    void parsesEntriesWithoutParametersAndAlignedArrays() {
        String ptx = """
                .version 8.0
                .target sm_80
                .address_size 64
                .visible .entry none()
                {
                \tret;
                }
                .entry withStruct(
                \t.param .align 8 .b8 withStruct_param_0[16],
                \t.param .f32 withStruct_param_1
                )
                """;
        PtxEntries e = PtxEntries.parse(ptx, "t.ptx");
        assertEquals(Map.of("none", List.of(), "withStruct", List.of(".b8[16]", ".f32")), e.entries());
        assertEquals("8.0", e.isaVersion());
    }

    @Test
    void badPtxIsRefusedNamingTheSourceAndLine() {
        String head = ".version 9.0\n.target sm_80\n";
        assertBad("x.ptx: no '.version' directive: not a PTX module", ".target sm_80\n.visible .entry f()\n");
        assertBad("x.ptx: no '.target' directive: not a PTX module", ".version 9.0\n");
        assertBad("x.ptx: entry f: the parameter list is not closed", head + ".visible .entry f(\n.param .u64 f_param_0\n");
        assertBad("x.ptx:4: entry f: expected '.param .TYPE NAME' or ')', found 'ld.param.u64 %rd1, [f_param_0];'",
                head + ".visible .entry f(\nld.param.u64 %rd1, [f_param_0];\n)\n");
        assertBad("x.ptx:5: entry f: parameters must be separated by commas",
                head + ".entry f(\n.param .u64 a\n.param .u64 b\n)\n");
        assertBad("x.ptx:5: entry f: the parameter list ends after a comma", head + ".entry f(\n.param .u64 a,\n)\n");
        assertBad("x.ptx:4: entry f is declared twice", head + ".entry f()\n.entry f()\n");
        assertBad("x.ptx:3: malformed .entry declaration '.visible .entry 9lives('", head + ".visible .entry 9lives(\n");
    }

    private static void assertBad(String message, String ptx) {
        try {
            PtxEntries.parse(ptx, "x.ptx");
            fail("accepted: " + ptx);
        } catch (IllegalArgumentException e) {
            assertEquals(message, e.getMessage());
        }
    }
}
