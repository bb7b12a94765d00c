package io.vram4j.cli;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import picocli.CommandLine;

import java.io.PrintWriter;
import java.io.StringWriter;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The top level of the command line: version on every command, usage, unknown commands. */
class MainTest {

    @Test
    void versionAloneAndThroughPicocliPrintTheSameLine() {
        CliRunner.Result fast = CliRunner.run("--version");
        CliRunner.Result viaPicocli = CliRunner.run("--version", "--help"); // two options: picocli answers
        assertEquals(0, fast.exitCode());
        assertEquals("vram4j 0.1.0", fast.out().strip());
        assertEquals(fast.out(), CliRunner.run("-V").out());
        assertTrue(viaPicocli.out().contains("vram4j 0.1.0") || viaPicocli.out().contains("Usage: vram4j"), viaPicocli.out());
    }

    @ParameterizedTest
    @ValueSource(strings = {"demo", "train", "replay", "viz", "find-batch-size", "bench", "bench techniques", "bench loss-curves"})
    void everySubcommandHasTheVersionOption(String command) {
        for (String flag : new String[] {"-V", "--version"}) {
            String[] args = (command + " " + flag).split(" ");
            CliRunner.Result r = CliRunner.run(args);
            assertEquals(0, r.exitCode(), String.join(" ", args) + ": " + r.err());
            assertEquals("vram4j 0.1.0", r.out().strip(), String.join(" ", args));
        }
    }

    @Test
    void usageListsEveryCommandAndExplainsTheIncubatorWarning() {
        CliRunner.Result r = CliRunner.run("--help");
        assertEquals(0, r.exitCode());
        for (String c : new String[] {"demo", "train", "replay", "viz", "find-batch-size", "bench", "help"}) {
            assertTrue(r.out().contains("\n  " + c + " "), c + " missing from:\n" + r.out());
        }
        assertTrue(r.out().contains("WARNING: Using incubator modules"), r.out());
        assertTrue(r.out().contains("VRAM4J_JAVA_OPTS"), r.out());
    }

    @Test
    void helpOfOneCommandAndUnknownCommands() {
        CliRunner.Result help = CliRunner.run("help", "replay");
        assertEquals(0, help.exitCode(), help.err());
        assertTrue(help.out().startsWith("Usage: vram4j replay"), help.out());
        CliRunner.Result unknown = CliRunner.run("nosuch");
        assertEquals(2, unknown.exitCode());
        assertEquals(1, unknown.err().strip().lines().count(), unknown.err());
        assertTrue(unknown.err().contains("'nosuch'"), unknown.err());
    }

    @CommandLine.Command(name = "exhaust")
    static final class ExhaustsHeap implements Runnable {
        @Override
        public void run() {
            throw new OutOfMemoryError("Java heap space");
        }
    }

    @Test
    void runningOutOfJavaHeapIsOneLineWithTheRemedyNotAStackTrace() {
        CommandLine cl = new CommandLine(new ExhaustsHeap());
        StringWriter err = new StringWriter();
        cl.setErr(new PrintWriter(err));
        assertEquals(1, Main.execute(cl));
        String text = err.toString();
        assertEquals(1, text.strip().lines().count(), text);
        assertTrue(text.startsWith("vram4j: out of Java heap (Java heap space, limit "), text);
        assertTrue(text.contains("VRAM4J_JAVA_OPTS=-Xmx4g"), text);
    }
}
