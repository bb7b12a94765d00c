package io.vram4j.compute.cuda;

import org.junit.jupiter.api.Assertions;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * What the driver will do with the committed PTX on a GPU, checked without one: CUDA's assembler ({@code ptxas},
 * installed with nvcc) turns it into machine code for the A100's and the H100's architectures ({@code sm_80},
 * {@code sm_90}), as the driver's JIT does at {@code cuModuleLoadData}. Every entry must assemble, keep its
 * variables in registers (no spill to local memory, which would cost device-memory traffic on every access), and
 * use few enough registers for the largest block vram4j launches it with ({@link LaunchConfig#MAX_BLOCK} threads;
 * the attention kernels, which keep a row and its accumulators in registers, {@link CudaKernels#ATTENTION_BLOCK}):
 * a block needing more than the 65,536 registers of a streaming multiprocessor fails its launch with
 * {@code CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES}. Without ptxas the test is skipped with the reason (and fails under
 * {@code CI=true}, where the CUDA toolkit is part of the machine).
 */
class PtxAssemblyTest {
    /** Registers of one streaming multiprocessor on compute capability 8.0 and 9.0, per block at most. */
    private static final int REGISTERS_PER_BLOCK = 65_536;
    private static final Pattern ENTRY = Pattern.compile("Compiling entry function '(\\w+)'");
    private static final Pattern SPILLS = Pattern.compile("(\\d+) bytes spill stores, (\\d+) bytes spill loads");
    private static final Pattern REGISTERS = Pattern.compile("Used (\\d+) registers");

    @ParameterizedTest
    @ValueSource(strings = {"sm_80", "sm_90"})
    void everyEntryAssemblesWithoutSpillsAndFitsTheLargestBlock(String arch, @TempDir Path tmp)
            throws IOException, InterruptedException {
        Path ptxas = ptxas();
        Path ptx = Files.write(tmp.resolve("vram4j_kernels.ptx"), CudaKernelTable.ptx());
        Process p = new ProcessBuilder(ptxas.toString(), "-arch=" + arch, "-v", ptx.toString(), "-o",
                tmp.resolve("k.cubin").toString()).redirectErrorStream(true).start();
        String log = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertTrue(p.waitFor(300, TimeUnit.SECONDS), "ptxas did not finish");
        assertEquals(0, p.exitValue(), "ptxas -arch=" + arch + " refused the committed PTX:\n" + log);

        Map<String, int[]> entries = report(log);    // name -> {spill stores, spill loads, registers}
        assertEquals(PtxEntries.parse(new String(CudaKernelTable.ptx(), StandardCharsets.US_ASCII), "committed")
                .entries().size(), entries.size(), "ptxas reported another number of entries than the PTX has:\n" + log);
        for (Map.Entry<String, int[]> e : entries.entrySet()) {
            int[] r = e.getValue();
            assertEquals(0, r[0] + r[1], e.getKey() + " spills " + r[0] + " bytes to local memory and loads " + r[1]
                    + " on " + arch);
            int block = largestBlock(e.getKey());
            assertTrue(r[2] > 0 && (long) r[2] * block <= REGISTERS_PER_BLOCK, e.getKey() + " uses "
                    + r[2] + " registers a thread: a block of " + block + " threads would not launch on " + arch);
        }
    }

    /** @return the most threads a block of this entry is launched with */
    private static int largestBlock(String entry) {
        if (entry.startsWith("v4j_attention_")) {
            return entry.endsWith("_tc") ? CudaKernels.ATTENTION_TC_BLOCK : CudaKernels.ATTENTION_BLOCK;
        }
        return LaunchConfig.MAX_BLOCK;
    }

    @Test
    void theReportIsReadPerEntry() {
        String log = """
                ptxas info    : 0 bytes gmem
                ptxas info    : Compiling entry function 'a' for 'sm_90'
                ptxas info    : Function properties for a
                    8 bytes stack frame, 8 bytes spill stores, 4 bytes spill loads
                ptxas info    : Used 255 registers, used 1 barriers
                ptxas info    : Compiling entry function 'b' for 'sm_90'
                ptxas info    : Function properties for b
                    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
                ptxas info    : Used 12 registers
                """;
        Map<String, int[]> r = report(log);
        assertEquals(2, r.size());
        Assertions.assertArrayEquals(new int[] {8, 4, 255}, r.get("a"));
        Assertions.assertArrayEquals(new int[] {0, 0, 12}, r.get("b"));
        Assertions.assertThrows(AssertionError.class, () -> report("Compiling entry function 'c' for 'sm_90'\n"),
                "an entry without its figures is an unreadable report, not a pass");
    }

    /** @return each entry's spill stores, spill loads and registers, read from ptxas's {@code -v} report */
    static Map<String, int[]> report(String log) {
        Map<String, int[]> entries = new LinkedHashMap<>();
        int[] current = null;
        for (String line : log.lines().toList()) {
            Matcher m = ENTRY.matcher(line);
            if (m.find()) {
                current = new int[] {-1, -1, -1};
                entries.put(m.group(1), current);
                continue;
            }
            if (current == null) {
                continue;
            }
            Matcher s = SPILLS.matcher(line);
            if (s.find()) {
                current[0] = Integer.parseInt(s.group(1));
                current[1] = Integer.parseInt(s.group(2));
            }
            Matcher r = REGISTERS.matcher(line);
            if (r.find()) {
                current[2] = Integer.parseInt(r.group(1));
            }
        }
        entries.forEach((name, r) -> Assertions.assertFalse(r[0] < 0 || r[2] < 0,
                "ptxas's report has no spill or register line for " + name + ":\n" + log));
        return entries;
    }

    private static Path ptxas() {
        String home = System.getenv("CUDA_HOME");
        Path p = Path.of(home != null && !home.isBlank() ? home : "/usr/local/cuda", "bin", "ptxas");
        if (!Files.isExecutable(p)) {
            String reason = "no ptxas at " + p + " (set CUDA_HOME)";
            if ("true".equalsIgnoreCase(System.getenv("CI"))) {
                Assertions.fail(reason + "; under CI=true the PTX assembly check fails instead of skipping");
            }
            Assumptions.abort(reason + "; skipped (it would fail under CI=true)");
        }
        return p;
    }
}
