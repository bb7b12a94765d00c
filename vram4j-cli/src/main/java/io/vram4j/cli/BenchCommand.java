package io.vram4j.cli;

import picocli.CommandLine;
import picocli.CommandLine.Command;

/** {@code vram4j bench}: benchmark commands that print a table. */
@Command(name = "bench", mixinStandardHelpOptions = true, description = "Benchmarks that print a table (--json for scripts).",
        subcommands = {BenchTechniquesCommand.class, BenchLossCurvesCommand.class, BenchAttentionCommand.class})
final class BenchCommand implements Runnable {
    @CommandLine.Spec
    CommandLine.Model.CommandSpec spec;

    @Override
    public void run() {
        spec.commandLine().usage(spec.commandLine().getOut());
    }
}
