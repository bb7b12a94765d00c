package io.vram4j.cli;

import com.fasterxml.jackson.databind.ObjectMapper;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

import java.io.IOException;
import java.io.PrintWriter;
import java.io.UncheckedIOException;

/**
 * The {@code --json} option of {@code train}, {@code find-batch-size} and the {@code bench} commands (a picocli
 * mixin): with it, stdout holds only the JSON summary and the human-readable report goes to stderr.
 */
final class JsonOutput {
    @Spec(Spec.Target.MIXEE)
    CommandSpec mixee;

    @Option(names = "--json", description = "print a machine-readable summary on stdout (everything else goes to stderr)")
    boolean json;

    /** @return where the human-readable report goes: stderr with {@code --json}, else stdout */
    PrintWriter report() {
        return json ? mixee.commandLine().getErr() : mixee.commandLine().getOut();
    }

    /**
     * Prints {@code value} as one line of JSON on stdout when {@code --json} was given, then flushes stdout.
     *
     * @param value maps, lists, strings and numbers
     */
    void print(Object value) {
        PrintWriter out = mixee.commandLine().getOut();
        if (json) {
            try {
                out.println(new ObjectMapper().writeValueAsString(value));
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
        }
        out.flush();
    }
}
