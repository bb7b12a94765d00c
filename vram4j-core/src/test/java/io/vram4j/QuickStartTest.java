package io.vram4j;

import io.vram4j.alloc.CachingAllocator;
import io.vram4j.memory.snapshot.SnapshotReader;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import javax.tools.Diagnostic;
import javax.tools.DiagnosticCollector;
import javax.tools.JavaCompiler;
import javax.tools.JavaFileObject;
import javax.tools.StandardJavaFileManager;
import javax.tools.ToolProvider;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.lang.reflect.Method;
import java.net.URLClassLoader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The README's library quick start, taken from README.md itself, compiles as shown against vram4j-core and
 * runs: it prints allocated / reserved bytes and the summary, and writes a snapshot that reads back.
 */
class QuickStartTest {

    @Test
    void readmeQuickStartCompilesAndRuns(@TempDir Path dir) throws Exception {
        String source = quickStartSource();
        assertTrue(source.contains("public class QuickStart"), "the quick start is a complete class");
        Path file = dir.resolve("QuickStart.java");
        Files.writeString(file, source);

        JavaCompiler javac = ToolProvider.getSystemJavaCompiler();
        assertNotNull(javac, "tests run on a JDK");
        Path classes = Path.of(CachingAllocator.class.getProtectionDomain().getCodeSource().getLocation().toURI());
        DiagnosticCollector<JavaFileObject> diagnostics = new DiagnosticCollector<>();
        try (StandardJavaFileManager fm = javac.getStandardFileManager(diagnostics, null, StandardCharsets.UTF_8)) {
            boolean ok = javac.getTask(null, fm, diagnostics,
                    List.of("-classpath", classes.toString(), "-d", dir.toString(), "-Xlint:all", "-Werror"), null,
                    fm.getJavaFileObjects(file)).call();
            StringBuilder report = new StringBuilder();
            for (Diagnostic<? extends JavaFileObject> d : diagnostics.getDiagnostics()) {
                report.append(d).append('\n');
            }
            assertTrue(ok, "README quick start does not compile:\n" + report);
        }

        Path snapshot = Path.of("snap.pickle"); // the quick start writes into the working directory
        boolean existed = Files.exists(snapshot);
        PrintStream out = System.out;
        ByteArrayOutputStream captured = new ByteArrayOutputStream();
        try (URLClassLoader loader = new URLClassLoader(new java.net.URL[] {dir.toUri().toURL()},
                QuickStartTest.class.getClassLoader())) {
            Method main = loader.loadClass("QuickStart").getMethod("main", String[].class);
            System.setOut(new PrintStream(captured, true, StandardCharsets.UTF_8));
            try {
                main.invoke(null, (Object) new String[0]);
            } finally {
                System.setOut(out);
            }
            String printed = captured.toString(StandardCharsets.UTF_8);
            String first = printed.lines().findFirst().orElse("");
            assertEquals("0 / " + (20L << 20), first, "the freed 3 MiB block stays cached in its 20 MiB segment");
            assertTrue(printed.contains("PyTorch CUDA memory summary, device ID 0"), printed);
            assertTrue(Files.size(snapshot) > 0);
            io.vram4j.memory.snapshot.MemorySnapshot snap = SnapshotReader.read(snapshot);
            assertEquals(20L << 20, snap.reservedBytes(), "taken before empty_cache: one cached 20 MiB segment");
            assertEquals(0, snap.allocatedBytes());
            assertTrue(snap.trace(0).stream().anyMatch(e -> e.action() == io.vram4j.memory.snapshot.TraceAction.ALLOC && e.size() == 3L << 20),
                    "the history recorded the 3 MiB allocation");
        } finally {
            if (!existed) {
                Files.deleteIfExists(snapshot);
            }
        }
    }

    /** The first {@code java} code block under "## Library quick start" in the repository's README.md. */
    private static String quickStartSource() throws Exception {
        Path dir = Path.of("").toAbsolutePath();
        while (dir != null && !Files.exists(dir.resolve("README.md").resolveSibling("mvnw"))) {
            dir = dir.getParent();
        }
        assertNotNull(dir, "README.md not found above " + Path.of("").toAbsolutePath());
        String readme = Files.readString(dir.resolve("README.md"));
        int section = readme.indexOf("## Library quick start");
        assertTrue(section >= 0, "README has a library quick start");
        int start = readme.indexOf("```java\n", section);
        int end = readme.indexOf("\n```", start + 8);
        assertTrue(start >= 0 && end > start, "the quick start has a java code block");
        return readme.substring(start + 8, end + 1);
    }
}
