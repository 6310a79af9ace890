// One JVM that runs Kafka's own command-line tools one after the other, for the tests (tests/support/tool_server.py).
//
// A tool's JVM start costs ~2.5 CPU-s on a small machine, more than most calls' own work, and the real-Kafka tests
// call TopicCommand hundreds of times (their referee). This runs the tool's own `main` in a warm JVM on the same
// classpath, with the same flags and logging, and answers with what a fresh process would have given: the exit
// code (Kafka's tools end through org.apache.kafka.common.utils.Exit, whose procedures are replaced by one that
// ends the call where it stands), stdout and stderr. Each call runs in a thread of its own named "main".
//
// Protocol on stdin/stdout, every integer a big-endian int32, every string its UTF-8 length then its bytes; once
// started, the server writes READY (0x4b41444d), then answers each request:
//   request:  COUNT, then COUNT strings: the main class, then its arguments (EOF: the server exits)
//   response: the exit code, stdout's bytes, stderr's bytes
// The tools' System.in is empty (a tool run by the tests has stdin /dev/null). One call at a time.
//
// A tool that calls System.exit itself (argparse4j's parseArgsOrFail on a usage error or --help) ends this JVM as
// it would end its own: a shutdown hook then answers the call with EXITED in place of the exit code, and its
// stdout and stderr so far; the Python side takes the exit code from the process's own (tool_server.py), and
// starts another server for the next call.

import java.io.BufferedInputStream;
import java.io.BufferedOutputStream;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.EOFException;
import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.io.PrintStream;
import java.lang.reflect.InvocationTargetException;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.locks.LockSupport;

public class ToolServer {
    /** The current call's end: its exit code (from Exit.exit, or its `main` returning or throwing). */
    static volatile CompletableFuture<Integer> done;
    static volatile String running;  // the current call's main class
    static final int READY = 0x4b41444d;
    static final int EXITED = 0x45584954;  // the tool called System.exit: the code is the process's
    static final Object answering = new Object();  // one answer at a time: the loop's, or the shutdown hook's
    static volatile ByteArrayOutputStream callOut;  // the current call's stdout and stderr
    static volatile ByteArrayOutputStream callErr;

    /** What System.out/err write to: the current call's buffer (streams captured at class init see this too). */
    static final class Switch extends OutputStream {
        volatile OutputStream target = OutputStream.nullOutputStream();

        @Override public void write(int b) throws IOException { target.write(b); }
        @Override public void write(byte[] b, int off, int len) throws IOException { target.write(b, off, len); }
    }

    /** Thrown by an exit called from the tool's own `main` itself: nothing is left to run but its return. */
    static final class Unwind extends Error {
        Unwind() {
            super(null, null, false, false);
        }
    }

    /** Exit.exit and Exit.halt: the call ends with this code. Called from the tool's `main` itself (TopicCommand's
     *  `Exit.exit(mainNoExit(args))`) it unwinds that frame; from deeper (a usage error's exit, inside the tool's
     *  own catch-all) its thread runs no further, as the process it stands for would not: it parks for good. */
    static void exit(int code, String main) {
        done.complete(code);
        boolean fromMain = StackWalker.getInstance().walk(frames -> frames
                .filter(f -> !f.getClassName().startsWith("ToolServer") && !f.getClassName().endsWith(".Exit")
                        && !f.getClassName().endsWith(".Exit$"))
                .findFirst()
                .map(f -> f.getClassName().equals(main) && f.getMethodName().equals("main"))
                .orElse(false));
        if (fromMain) {
            throw new Unwind();
        }
        while (true) {
            LockSupport.park();
        }
    }

    public static void main(String[] argv) throws Exception {
        DataInputStream in = new DataInputStream(new BufferedInputStream(System.in));
        DataOutputStream out = new DataOutputStream(new BufferedOutputStream(new FileOutputStream(FileDescriptor.out)));
        Switch so = new Switch();
        Switch se = new Switch();
        PrintStream pso = new PrintStream(so, true, StandardCharsets.UTF_8);
        PrintStream pse = new PrintStream(se, true, StandardCharsets.UTF_8);
        System.setOut(pso);  // before any tool's class (or logging, or Scala's Console) takes System.out/err
        System.setErr(pse);
        System.setIn(new ByteArrayInputStream(new byte[0]));
        org.apache.kafka.common.utils.Exit.setExitProcedure((code, message) -> exit(code, running));
        org.apache.kafka.common.utils.Exit.setHaltProcedure((code, message) -> exit(code, running));
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            CompletableFuture<Integer> call = done;
            if (call == null || !call.complete(EXITED)) {
                return;  // between calls, or the call had ended: its answer is the loop's
            }
            pso.flush();
            pse.flush();
            synchronized (answering) {
                try {
                    out.writeInt(EXITED);
                    write(out, callOut.toByteArray());
                    write(out, callErr.toByteArray());
                    out.flush();
                } catch (IOException e) {
                    // the Python side is gone: nothing to answer
                }
            }
        }, "tool-server-exit"));
        out.writeInt(READY);  // compiled, started, its procedures in place: it can take calls
        out.flush();
        while (true) {
            int count;
            try {
                count = in.readInt();
            } catch (EOFException e) {
                return;
            }
            String main = read(in);
            String[] args = new String[count - 1];
            for (int i = 0; i < args.length; i++) {
                args[i] = read(in);
            }
            ByteArrayOutputStream bo = new ByteArrayOutputStream();
            ByteArrayOutputStream be = new ByteArrayOutputStream();
            callOut = bo;
            callErr = be;
            so.target = bo;
            se.target = be;
            CompletableFuture<Integer> call = new CompletableFuture<>();
            done = call;
            running = main;
            Thread t = new Thread(() -> {
                try {
                    Class.forName(main).getMethod("main", String[].class).invoke(null, (Object) args);
                    call.complete(0);
                } catch (InvocationTargetException e) {
                    if (e.getCause() instanceof Unwind) {
                        return;  // its exit code is in `call` already
                    }
                    pse.print("Exception in thread \"main\" ");  // as the JVM's default handler says it
                    e.getCause().printStackTrace(pse);
                    call.complete(1);
                } catch (ReflectiveOperationException | LinkageError | RuntimeException e) {
                    e.printStackTrace(pse);
                    call.complete(1);
                }
            }, "main");
            t.setDaemon(true);
            t.start();
            int code = call.get();
            if (code == EXITED) {
                return;  // System.exit: the shutdown hook answers, and the JVM ends
            }
            pso.flush();
            pse.flush();
            so.target = OutputStream.nullOutputStream();
            se.target = OutputStream.nullOutputStream();
            synchronized (answering) {
                out.writeInt(code);
                write(out, bo.toByteArray());
                write(out, be.toByteArray());
                out.flush();
            }
        }
    }

    static String read(DataInputStream in) throws IOException {
        byte[] b = new byte[in.readInt()];
        in.readFully(b);
        return new String(b, StandardCharsets.UTF_8);
    }

    static void write(DataOutputStream out, byte[] b) throws IOException {
        out.writeInt(b.length);
        out.write(b);
    }
}
