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
        // Prints its arguments; as the JVM does, writes the AOT configuration when recording and the cache when
        // creating one, and fails when asked to (a command that fails).
        Files.writeString(fakeJdk.resolve("bin/java"), """
                #!/bin/sh
                echo "fake java $*"
                mode=""
                for a in "$@"; do
                  case "$a" in
                    -XX:AOTMode=*) mode="${a#-XX:AOTMode=}" ;;
                    -XX:AOTConfiguration=*) conf="${a#-XX:AOTConfiguration=}" ;;
                    -XX:AOTCache=*) cache="${a#-XX:AOTCache=}" ;;
                    fail) exit 2 ;;
                  esac
                done
                if [ "$mode" = record ]; then echo recorded > "$conf"; fi
                if [ "$mode" = create ]; then echo cache > "$cache"; fi
                exit 0
                """);
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
        return launch(javaHome, "replay", "snapshot.pickle");
    }

    private Run launch(String javaHome, String... args) throws IOException, InterruptedException {
        List<String> cmd = new ArrayList<>(List.of("bash", "-x", root.resolve("vram4j").toString()));
        cmd.addAll(List.of(args));
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
        awaitBackgroundJob();
        return new Run(p.exitValue(), Files.readString(out), Files.readString(err));
    }

    /**
     * Waits (at most 20 s) for the background JVM a first run leaves to assemble the AOT cache: it is done when no
     * recorded configuration or partial cache ({@code *.aot.<pid>*}) is left, its last step being their removal.
     */
    private void awaitBackgroundJob() throws IOException, InterruptedException {
        Path target = root.resolve("vram4j-cli/target");
        for (int i = 0; i < 200; i++) {
            try (var files = Files.list(target)) {
                if (files.noneMatch(f -> f.getFileName().toString().matches(".*\\.aot\\.\\d+.*"))) {
                    return;
                }
            }
            Thread.sleep(100);
        }
        throw new AssertionError("the background JVM that assembles the AOT cache did not finish in 20 s");
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
        assertTrue(second.out().startsWith("fake java "), second.out());
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

    private Path cacheFile() {
        return root.resolve("vram4j-cli/target/vram4j-replay-c1.aot");
    }

    @Test
    void aShortCommandRecordsOnceThenStartsFromItsAotCache() throws Exception {
        Run first = launch(fakeJdk.toString());
        assertTrue(first.out().contains("-XX:AOTMode=record"), first.out());
        assertTrue(first.out().contains("-XX:-DisplayVMOutput"), "the JVM's 'recorded' message is not printed");
        assertEquals("cache\n", Files.readString(cacheFile()), "assembled in the background and renamed into place");
        try (var left = Files.list(cacheFile().getParent())) {
            assertEquals(List.of(), left.filter(p -> p.toString().matches(".*\\.aot\\.\\d+.*")).toList(),
                    "no configuration or partial cache left behind");
        }

        Run second = launch(fakeJdk.toString());
        assertTrue(second.out().contains("-XX:AOTCache=" + cacheFile()), second.out());
        assertFalse(second.out().contains("AOTMode=record"), second.out());

        // A rebuilt jar makes the cache stale: removed, recorded again.
        Files.setLastModifiedTime(cacheFile(), java.nio.file.attribute.FileTime.fromMillis(System.currentTimeMillis() - 60_000));
        Run third = launch(fakeJdk.toString());
        assertTrue(third.out().contains("-XX:AOTMode=record"), third.out());
    }

    @Test
    void aFailedRunLeavesNoCache() throws Exception {
        Run run = launch(fakeJdk.toString(), "replay", "fail");
        assertEquals(2, run.exit(), "the command's exit code");
        try (var left = Files.list(cacheFile().getParent())) {
            assertEquals(List.of("vram4j.jar"), left.map(p -> p.getFileName().toString()).toList());
        }
    }

    @Test
    void computeCommandsKeepTheAppCdsArchive() throws Exception {
        Run run = launch(fakeJdk.toString(), "train", "--epochs", "1");
        assertTrue(run.out().contains("--add-modules jdk.incubator.vector"), run.out());
        assertTrue(run.out().contains("-XX:SharedArchiveFile=" + root.resolve("vram4j-cli/target/vram4j-train.jsa")), run.out());
        assertFalse(run.out().contains("AOT"), run.out());
    }
}
