package io.vram4j.cli;

import io.vram4j.alloc.DeviceOutOfMemoryException;
import picocli.CommandLine;
import picocli.CommandLine.Command;

import java.io.PrintWriter;
import java.nio.file.InvalidPathException;
import java.nio.file.Path;
import java.util.List;

/**
 * Entry point of the {@code vram4j} command line. User mistakes (bad options, bad files, bad settings) print
 * one clear line and exit with code 2 without a stack trace; {@code VRAM4J_DEBUG=1} shows the trace.
 *
 * <p>Start-up: picocli builds its model of a command by reflection, which in a fresh JVM costs more than the
 * rest of a short command; so only the subcommand named on the command line is registered (all of them when
 * none or an unknown one is named, for the usage and the error message), and a lone {@code --version} and a plain
 * {@code replay FILE} run without picocli. {@code -V}/{@code --version} works on every subcommand.
 */
@Command(name = "vram4j", mixinStandardHelpOptions = true, version = Main.VERSION,
        description = "PyTorch-grade device-memory management for the JVM.",
        footer = {"", "train, find-batch-size and bench compute with the Vector API (jdk.incubator.vector): the JVM then prints "
                + "\"WARNING: Using incubator modules\" once at start; the other commands run without that module.",
                "JVM options: VRAM4J_JAVA_OPTS (e.g. -Xmx2g; default heap limit 1 GiB). Exit codes: 0 ok, 1 internal error, "
                + "2 user mistake, 3 out of device memory.", ""})
public final class Main implements Runnable {
    /** What {@code --version} prints. */
    static final String VERSION = "vram4j 0.1.0";

    /** The subcommands, in the order the usage lists them. */
    private static final List<Class<?>> SUBCOMMANDS = List.of(DevicesCommand.class, DemoCommand.class, TrainCommand.class,
            ReplayCommand.class, ExplainOomCommand.class, PredictCommand.class, VizCommand.class, FindBatchSizeCommand.class,
            BenchCommand.class, CommandLine.HelpCommand.class);

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
        if (args.length == 1 && (args[0].equals("--version") || args[0].equals("-V"))) {
            System.out.println(VERSION); // what picocli prints, without building its model (BENCHMARKS.md, "Start-up")
            return 0;
        }
        Path plain = args.length == 2 && args[0].equals("replay") ? plainOperand(args[1]) : null;
        if (plain != null) {
            return plainReplay(plain);
        }
        CommandLine cl = new CommandLine(new Main());
        String named = firstPositional(args);
        List<Class<?>> used = named.equals("help") ? List.of()
                : SUBCOMMANDS.stream().filter(c -> nameOf(c).equals(named)).toList();
        for (Class<?> c : used.isEmpty() ? SUBCOMMANDS : used) {
            cl.addSubcommand(c);
        }
        setVersion(cl);
        return execute(cl, args);
    }

    /**
     * Runs a command line with vram4j's error handling: bad options and user mistakes exit 2, out of device memory
     * 3, and running out of Java heap (an {@link OutOfMemoryError}, which picocli does not catch) one line saying
     * how to raise the limit, exit 1, instead of a raw stack trace.
     */
    static int execute(CommandLine cl, String... args) {
        cl.setExecutionExceptionHandler(Main::handleExecutionException);
        cl.setParameterExceptionHandler(Main::handleParameterException);
        try {
            return cl.execute(args);
        } catch (OutOfMemoryError e) {
            return heapExhausted(e, cl.getErr());
        }
    }

    private static int heapExhausted(OutOfMemoryError e, PrintWriter err) {
        err.println("vram4j: out of Java heap (" + e.getMessage() + ", limit "
                + Runtime.getRuntime().maxMemory() / (1L << 20) + " MiB): raise it with VRAM4J_JAVA_OPTS=-Xmx4g");
        err.flush();
        return 1;
    }

    private static String firstPositional(String[] args) {
        for (String a : args) {
            if (!a.startsWith("-")) {
                return a;
            }
        }
        return "";
    }

    private static String nameOf(Class<?> command) {
        return command.getAnnotation(Command.class).name();
    }

    private static void setVersion(CommandLine cl) {
        cl.getCommandSpec().version(VERSION);
        cl.getSubcommands().values().forEach(Main::setVersion);
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

    /**
     * {@code replay FILE} with no option, the commonest replay, runs without picocli: loading its classes (compiled for
     * Java 5, so verified by the old verifier and never in the class-data archive) and building the command's model
     * from its annotations cost about as much CPU as the replay itself (BENCHMARKS.md, "Start-up"). picocli would
     * only convert FILE to a {@link Path} and call the command, which is what happens here; a failure is reported as
     * picocli's handler reports it. Any other form of the command line goes through picocli.
     */
    private static int plainReplay(Path file) {
        ReplayCommand command = new ReplayCommand();
        command.file = file;
        PrintWriter err = new PrintWriter(System.err, true);
        try {
            return command.call();
        } catch (Exception e) {
            return failure(e, "replay", err);
        } catch (OutOfMemoryError e) {
            return heapExhausted(e, err);
        }
    }

    /**
     * @param arg the argument after {@code replay}
     * @return it as the FILE operand, or null when picocli must read it: an option, an {@code @file} of arguments,
     *     or a string that is no path
     */
    private static Path plainOperand(String arg) {
        if (arg.isEmpty() || arg.startsWith("-") || arg.startsWith("@")) {
            return null;
        }
        try {
            return Path.of(arg);
        } catch (InvalidPathException e) {
            return null;
        }
    }

    private static int handleExecutionException(Exception e, CommandLine cl, CommandLine.ParseResult parseResult) {
        return failure(e, cl.getCommandName(), cl.getErr());
    }

    /** One line for a failed command: exit code 3 for out of device memory, 2 for a user mistake, else 1. */
    private static int failure(Exception e, String commandName, PrintWriter err) {
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
            err.println("vram4j " + commandName + ": error: " + e.getMessage());
            return USAGE_ERROR;
        }
        err.println("vram4j " + commandName + ": internal error: " + e);
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
