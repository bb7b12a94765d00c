package io.vram4j.cli;

import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The launcher script's JDK choice and its cache ({@code .vram4j-jdk}), run with {@code bash -x} on a copy of the
 * script beside a fake built jar and a fake JDK whose {@code java} prints its arguments: the trace shows whether
 * the launcher probed for a JDK ({@code find_jdk}) or took the cached one.
 */
class LauncherTest {
    @TempDir
    Path root;
    private Path fakeJdk;

    @BeforeEach
    void setUp() throws IOException {
        Path launcher = Path.of(System.getProperty("user.dir")).resolve("../vram4j").normalize();
        Files.copy(launcher, root.resolve("vram4j"));
        executable(root.resolve("vram4j"));
        Path target = Files.createDirectories(root.resolve("vram4j-cli/target"));
        Files.writeString(target.resolve("vram4j.jar"), "not read: the fake java only prints its arguments");
        fakeJdk = Files.createDirectories(root.resolve("fake-jdk/bin")).getParent();
        Files.writeString(fakeJdk.resolve("release"), "JAVA_VERSION=\"25.0.1\"\n");
        Files.writeString(fakeJdk.resolve("bin/java"), "#!/bin/sh\necho \"fake java $*\"\n");
        Files.writeString(fakeJdk.resolve("bin/javac"), "#!/bin/sh\nexit 0\n");
        executable(fakeJdk.resolve("bin/java"));
        executable(fakeJdk.resolve("bin/javac"));
    }

    private static void executable(Path p) throws IOException {
        Files.setPosixFilePermissions(p, PosixFilePermissions.fromString("rwxr-xr-x"));
    }

    private record Run(int exit, String out, String trace) {
        boolean probed() {
            return trace.contains("find_jdk");
        }
    }

    /** Runs {@code bash -x vram4j replay snapshot.pickle} with JAVA_HOME as given (null: unset). */
    private Run launch(String javaHome) throws IOException, InterruptedException {
        List<String> cmd = new ArrayList<>(List.of("bash", "-x", root.resolve("vram4j").toString(), "replay", "snapshot.pickle"));
        ProcessBuilder pb = new ProcessBuilder(cmd).directory(root.toFile());
        pb.environment().remove("JAVA_HOME");
        pb.environment().remove("VRAM4J_JAVA_OPTS");
        if (javaHome != null) {
            pb.environment().put("JAVA_HOME", javaHome);
        }
        Path out = root.resolve("out.txt");
        Path err = root.resolve("err.txt");
        Process p = pb.redirectOutput(out.toFile()).redirectError(err.toFile()).start();
        assertTrue(p.waitFor(60, TimeUnit.SECONDS), "the launcher finished");
        return new Run(p.exitValue(), Files.readString(out), Files.readString(err));
    }

    private String cache() throws IOException {
        return Files.readString(root.resolve(".vram4j-jdk"), StandardCharsets.UTF_8);
    }

    @Test
    void theJdkOfJavaHomeIsProbedOnceThenTakenFromTheCache() throws Exception {
        Run first = launch(fakeJdk.toString());
        assertEquals(0, first.exit(), first.trace());
        assertTrue(first.probed(), "no cache yet");
        assertTrue(first.out().startsWith("fake java "), first.out());
        assertTrue(first.out().contains("-jar " + root.resolve("vram4j-cli/target/vram4j.jar") + " replay snapshot.pickle"),
                first.out());
        assertEquals(fakeJdk + "\t" + fakeJdk + "\n", cache());

        Run second = launch(fakeJdk.toString());
        assertEquals(0, second.exit());
        assertFalse(second.probed(), "the cached choice is taken without probing");
        assertEquals(first.out(), second.out());
    }

    @Test
    void aChoiceMadeWithoutJavaHomeIsCachedUnderTheEmptyKey() throws Exception {
        // What the launcher writes when JAVA_HOME is unset at probe time: an empty key, then a tab.
        Files.writeString(root.resolve(".vram4j-jdk"), "\t" + fakeJdk + "\n");
        Run run = launch(null);
        assertEquals(0, run.exit(), run.trace());
        assertFalse(run.probed(), "a line starting with the tab is a hit for an unset JAVA_HOME");
        assertTrue(run.out().startsWith("fake java "), run.out());
    }

    @Test
    void anotherJavaHomeIsProbedAgain() throws Exception {
        Files.writeString(root.resolve(".vram4j-jdk"), "/some/other/jdk\t" + fakeJdk + "\n");
        Run run = launch(fakeJdk.toString());
        assertTrue(run.probed(), "the cache was made for another JAVA_HOME");
        assertEquals(fakeJdk + "\t" + fakeJdk + "\n", cache());
    }
}
