package io.vram4j.cli;

import io.vram4j.alloc.DeviceOutOfMemoryException;
import picocli.CommandLine;
import picocli.CommandLine.Command;

import java.io.PrintWriter;

/**
 * Entry point of the {@code vram4j} command line. User mistakes (bad options, bad files, bad settings) print
 * one clear line and exit non-zero without a stack trace; {@code --debug} (or {@code VRAM4J_DEBUG=1}) shows
 * the trace.
 */
@Command(name = "vram4j", mixinStandardHelpOptions = true, version = "vram4j 0.1.0",
        description = "PyTorch-grade device-memory management for the JVM.",
        subcommands = {DevicesCommand.class, DemoCommand.class, TrainCommand.class, ReplayCommand.class, ExplainOomCommand.class, PredictCommand.class, VizCommand.class,
                FindBatchSizeCommand.class, BenchCommand.class,
                CommandLine.HelpCommand.class})
public final class Main implements Runnable {
    @CommandLine.Spec
    CommandLine.Model.CommandSpec spec;

    /** Exit code for a user mistake (bad option, file or setting). */
    static final int USAGE_ERROR = 2;
    /** Exit code when the device ran out of memory. */
    static final int OOM_ERROR = 3;

    @Override
    public void run() {
        spec.commandLine().usage(spec.commandLine().getOut());
    }

    /**
     * @param args command-line arguments
     * @return the exit code
     */
    public static int run(String... args) {
        CommandLine cl = new CommandLine(new Main());
        cl.setExecutionExceptionHandler(Main::handleExecutionException);
        cl.setParameterExceptionHandler(Main::handleParameterException);
        return cl.execute(args);
    }

    /** Bad options: one line naming the option and where help is, exit code 2 (no usage dump). */
    private static int handleParameterException(CommandLine.ParameterException e, String[] args) {
        CommandLine cl = e.getCommandLine();
        PrintWriter err = cl.getErr();
        String command = cl.getCommandSpec().qualifiedName();
        err.println(command + ": error: " + e.getMessage() + " (see '" + command + " --help')");
        err.flush();
        return USAGE_ERROR;
    }

    private static int handleExecutionException(Exception e, CommandLine cl, CommandLine.ParseResult parseResult) {
        PrintWriter err = cl.getErr();
        boolean debug = "1".equals(System.getenv("VRAM4J_DEBUG"));
        if (debug) {
            e.printStackTrace(err);
        }
        if (e instanceof DeviceOutOfMemoryException) {
            err.println("vram4j: " + e.getMessage());
            return OOM_ERROR;
        }
        if (e instanceof IllegalArgumentException || e instanceof io.vram4j.device.DeviceUnavailableException
                || e instanceof UserException || e instanceof java.io.IOException
                || e instanceof java.io.UncheckedIOException) {
            err.println("vram4j " + cl.getCommandName() + ": error: " + e.getMessage());
            return USAGE_ERROR;
        }
        err.println("vram4j " + cl.getCommandName() + ": internal error: " + e);
        if (!debug) {
            err.println("(set VRAM4J_DEBUG=1 for the stack trace)");
        }
        return 1;
    }

    /** @param args command-line arguments */
    public static void main(String[] args) {
        System.exit(run(args));
    }
}
