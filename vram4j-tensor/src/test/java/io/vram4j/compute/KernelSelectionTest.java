package io.vram4j.compute;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

class KernelSelectionTest {

    @Test
    void bestIsVectorWhenTheModuleIsPresent() {
        assumeTrue(ModuleLayer.boot().findModule("jdk.incubator.vector").isPresent());
        assertTrue(Kernels.vectorAvailable());
        String forced = System.getProperty(KernelSelector.PROPERTY, "");
        assertEquals(forced.equalsIgnoreCase("scalar") ? "scalar" : "vector", Kernels.best().name());
        assertEquals("vector", Kernels.vector().name());
    }

    @Test
    void propertyOverridesTheChoice() {
        assertSame(Kernels.scalar(), KernelSelector.choose("scalar"));
        assertSame(Kernels.scalar(), KernelSelector.choose(" SCALAR "));
        String auto = ModuleLayer.boot().findModule("jdk.incubator.vector").isPresent() ? "vector" : "scalar";
        assertEquals(auto, KernelSelector.choose("").name());
        assertEquals(auto, KernelSelector.choose("vector").name());
        assertEquals(auto, KernelSelector.choose("no-such-kernels").name());
    }

    @Test
    void withThreads() {
        assertSame(Kernels.scalar(), Kernels.scalar().withThreads(4));
        assertEquals(1, Kernels.scalar().threads());
        assertThrows(IllegalArgumentException.class, () -> Kernels.scalar().withThreads(0));
        assumeTrue(Kernels.vectorAvailable());
        Kernels v = Kernels.vector().withThreads(3);
        assertEquals(3, v.threads());
        assertEquals("vector", v.name());
        assertSame(v, v.withThreads(3));
        assertThrows(IllegalArgumentException.class, () -> v.withThreads(-1));
    }

    /** Runs {@link KernelsInfo} in a child JVM with the given options and returns its output. */
    private static String runChild(String... options) throws IOException, InterruptedException {
        Path java = Path.of(System.getProperty("java.home"), "bin", "java");
        List<String> cmd = new ArrayList<>();
        cmd.add(java.toString());
        cmd.addAll(List.of(options));
        cmd.add("-cp");
        cmd.add(System.getProperty("java.class.path"));
        cmd.add(KernelsInfo.class.getName());
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertTrue(p.waitFor(60, TimeUnit.SECONDS), "child JVM did not finish");
        assertEquals(0, p.exitValue(), out);
        return out;
    }

    @Test
    void fallsBackToScalarWithoutTheIncubatorModule() throws Exception {
        String out = runChild();
        assertTrue(out.contains("best=scalar vectorAvailable=false"), out);
        assertTrue(out.contains("sum=32.0"), out);
    }

    @Test
    void childWithTheModuleAndTheOverride() throws Exception {
        assertTrue(runChild("--add-modules", "jdk.incubator.vector").contains("best=vector vectorAvailable=true"));
        String out = runChild("--add-modules", "jdk.incubator.vector", "-Dvram4j.compute=scalar");
        assertTrue(out.contains("best=scalar vectorAvailable=true"), out);
        assertTrue(out.contains("sum=32.0"), out);
    }

    @Test
    void threadsDefaultToTheProcessorsUnlessThePropertySaysOtherwise() throws Exception {
        String vector = "jdk.incubator.vector";
        assertTrue(runChild("--add-modules", vector, "-XX:ActiveProcessorCount=3").contains("threads=3"));
        assertTrue(runChild("--add-modules", vector, "-XX:ActiveProcessorCount=3", "-Dvram4j.compute.threads=5")
                .contains("threads=5"));
        String ignored = runChild("--add-modules", vector, "-XX:ActiveProcessorCount=2", "-Dvram4j.compute.threads=zero");
        assertTrue(ignored.contains("threads=2"), ignored);
        assertTrue(runChild("--add-modules", vector, "-XX:ActiveProcessorCount=2", "-Dvram4j.compute.threads=0")
                .contains("threads=2"));
    }
}
