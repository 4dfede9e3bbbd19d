package lab;

import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.security.DigestException;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;

import org.springframework.stereotype.Component;

/**
 * Real CPU work, measured on the thread's own CPU clock: a request asks for milliseconds of one core and hashes
 * (SHA-256 of the previous digest and a 256-byte block) until its thread has used that much CPU. The cost is exact by
 * construction, whatever the JIT has compiled yet, the machine's speed or how many threads share the core: it is the
 * model's service demand D. What a request costs beyond it (Tomcat, Spring, the JVM, switching threads) shows as the
 * difference between the server's CPU per request and D.
 */
@Component
public class CpuWork {

    private static final int BLOCK = 256;
    private static final int DIGEST = 32;
    private static final int UNITS_PER_CHECK = 64; // ~20 µs of hashing between looks at the clock (~0.5 µs each)

    private final ThreadMXBean threads = ManagementFactory.getThreadMXBean();

    /** Hashes until this thread has used `cpuMs` of CPU; returns the units done and a digest byte (so the work is used). */
    public Result burn(double cpuMs) {
        if (cpuMs <= 0) {
            return new Result(0, (byte) 0);
        }
        long until = threads.getCurrentThreadCpuTime() + Math.round(cpuMs * 1_000_000);
        byte[] state = new byte[BLOCK];
        MessageDigest sha = sha256();
        long units = 0;
        do {
            for (int i = 0; i < UNITS_PER_CHECK; i++) {
                step(sha, state);
            }
            units += UNITS_PER_CHECK;
        } while (threads.getCurrentThreadCpuTime() < until);
        return new Result(units, state[0]);
    }

    public record Result(long units, byte check) {
    }

    /** One unit: digest the block and write the digest over its first bytes (the next unit's input). */
    private static void step(MessageDigest sha, byte[] state) {
        sha.update(state);
        try {
            sha.digest(state, 0, DIGEST);
        } catch (DigestException e) {
            throw new IllegalStateException("a 256-byte block holds a SHA-256 digest", e);
        }
    }

    private static MessageDigest sha256() {
        try {
            return MessageDigest.getInstance("SHA-256");
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("SHA-256 is part of every JDK", e);
        }
    }
}
