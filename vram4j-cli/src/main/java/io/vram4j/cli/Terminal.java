package io.vram4j.cli;

import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;

/** Whether standard error is a terminal (for the progress bar). */
final class Terminal {
    private Terminal() {
    }

    /**
     * @return true when file descriptor 2 is a terminal: {@code isatty(2)} through the FFM API on POSIX systems;
     *         elsewhere, or if that fails, whether the JVM has an interactive console
     */
    static boolean stderrIsTerminal() {
        if ("dumb".equals(System.getenv("TERM"))) {
            return false;
        }
        try {
            Linker linker = Linker.nativeLinker();
            MethodHandle isatty = linker.downcallHandle(
                    linker.defaultLookup().find("isatty").orElseThrow(),
                    FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.JAVA_INT));
            return (int) isatty.invokeExact(2) == 1;
        } catch (Throwable t) {
            java.io.Console c = System.console();
            return c != null && c.isTerminal();
        }
    }
}
