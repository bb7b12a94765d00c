package io.vram4j.cli;

import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.File;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The README's way of depending on vram4j, done as a user would: {@code ./mvnw install} of vram4j-core and
 * vram4j-tensor into a local repository (a temporary one, reading the user's {@code ~/.m2/repository} as a
 * read-only tail, so the shared one is never written), then the separate Maven project {@code examples/} is
 * compiled against the installed artifacts and the README's snippets in it are run.
 */
class ExamplesProjectTest {
    @TempDir
    static Path tmp;
    private static Path root;
    private static String classpath;

    @BeforeAll
    static void installAndBuildExamples() throws Exception {
        for (Path p = Path.of("").toAbsolutePath(); p != null && root == null; p = p.getParent()) {
            if (Files.isRegularFile(p.resolve("examples/pom.xml")) && Files.isRegularFile(p.resolve("mvnw"))) {
                root = p;
            }
        }
        assertNotNull(root, "no examples/pom.xml with mvnw beside it above " + Path.of("").toAbsolutePath());
        Path repo = tmp.resolve("m2");
        List<String> local = List.of("-Dmaven.repo.local=" + repo,
                "-Dmaven.repo.local.tail=" + Path.of(System.getProperty("user.home"), ".m2", "repository"));
        List<String> install = new ArrayList<>(List.of("./mvnw", "-B", "-q", "-DskipTests", "-pl", "vram4j-core,vram4j-tensor",
                "-am", "install"));
        install.addAll(local);
        run(root, install);
        assertTrue(Files.isRegularFile(repo.resolve("io/vram4j/vram4j-tensor/0.1.0-SNAPSHOT/vram4j-tensor-0.1.0-SNAPSHOT.jar")),
                "installed into " + repo);
        Path cpFile = tmp.resolve("classpath.txt");
        List<String> build = new ArrayList<>(List.of("../mvnw", "-B", "-q", "compile", "dependency:build-classpath",
                "-Dmdep.outputFile=" + cpFile));
        build.addAll(local);
        run(root.resolve("examples"), build);
        classpath = root.resolve("examples/target/classes") + File.pathSeparator + Files.readString(cpFile).strip();
        assertTrue(classpath.contains(repo.toString()), "the examples resolve vram4j from the installed artifacts: " + classpath);
    }

    /** Runs a command with this JVM's JDK as JAVA_HOME; returns stdout + stderr, failing on a non-zero exit. */
    private static String run(Path dir, List<String> command) throws IOException, InterruptedException {
        ProcessBuilder pb = new ProcessBuilder(command).directory(dir.toFile()).redirectErrorStream(true);
        pb.environment().put("JAVA_HOME", System.getProperty("java.home"));
        Process p = pb.start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertTrue(p.waitFor(10, TimeUnit.MINUTES), String.join(" ", command) + " did not finish");
        assertEquals(0, p.exitValue(), String.join(" ", command) + " in " + dir + ":\n" + out);
        return out;
    }

    private static String runExample(String mainClass, Path workDir) throws IOException, InterruptedException {
        Files.createDirectories(workDir);
        String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        return run(workDir, List.of(java, "--enable-native-access=ALL-UNNAMED", "-cp", classpath, mainClass));
    }

    @Test
    void quickStartRuns() throws Exception {
        Path dir = tmp.resolve("quickstart");
        String out = runExample("example.QuickStart", dir);
        assertTrue(out.startsWith("0 / 20971520\n"), "3 MiB freed, its 20 MiB segment cached:\n" + out);
        assertTrue(out.contains("PyTorch CUDA memory summary, device ID 0"), out);
        byte[] pickle = Files.readAllBytes(dir.resolve("snap.pickle"));
        assertEquals((byte) 0x80, pickle[0], "a pickle (PROTO opcode)");
    }

    @Test
    void trackersRunWithVram4jOnTheModulePath() throws Exception {
        // the installed jars and their dependencies as named (and automatic) modules; the example stays on the class path
        String[] entries = classpath.split(File.pathSeparator);
        String modulePath = String.join(File.pathSeparator, List.of(entries).subList(1, entries.length));
        String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        Path dir = tmp.resolve("modules");
        Files.createDirectories(dir);
        String out = run(dir, List.of(java, "--enable-native-access=io.vram4j.core", "-p", modulePath, "--add-modules",
                "io.vram4j.tensor", "-cp", entries[0], "example.Trackers"));
        assertTrue(out.contains("Trackers.main(Trackers.java:"), out);
        assertTrue(out.contains("[after forward] allocated "), out);
    }

    @Test
    void trackersRun() throws Exception {
        String out = runExample("example.Trackers", tmp.resolve("trackers"));
        assertTrue(out.contains("[forward] allocated "), out);
        assertTrue(out.contains("[after forward] allocated "), out);
        assertTrue(out.contains("live tensors: "), out);
        assertTrue(out.contains("Trackers.main(Trackers.java:"), "sites captured:\n" + out);
        assertTrue(out.contains("[64, 784] float32"), out);
    }
}
