package lab;

import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.security.DigestException;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.beans.factory.annotation.Value;
import org.springframework.stereotype.Component;

/**
 * Real CPU work in calibrated units: one unit is a SHA-256 digest of the previous digest and a 256-byte block.
 * A request asks for milliseconds of one core; it gets the number of units that took that long on this machine
 * when the server started, measured on the thread's own CPU clock after a warm-up. The work is fixed, not timed:
 * when threads crowd the cores and evict each other's caches, a request costs more CPU, as a real one would.
 */
@Component
public class CpuWork {

    private static final Logger LOG = LoggerFactory.getLogger(CpuWork.class);
    static final long WARM_UP_NANOS = 300_000_000L;
    static final long MEASURE_NANOS = 300_000_000L;
    private static final int BLOCK = 256;
    private static final int DIGEST = 32;

    private final ThreadMXBean threads = ManagementFactory.getThreadMXBean();
    private volatile double unitsPerMs;
    private volatile byte sink;

    public CpuWork(@Value("${WORK_CPU_MS:0}") double defaultCpuMs) {
        if (defaultCpuMs > 0) {
            unitsPerMs(); // calibrate while the server starts, not on the first request under load
        }
    }

    /** Units of work one core does per millisecond here, measured once. */
    public double unitsPerMs() {
        if (unitsPerMs == 0) {
            synchronized (this) {
                if (unitsPerMs == 0) {
                    unitsPerMs = calibrate();
                    LOG.info("cpu work calibrated: {} SHA-256 units per ms of one core", String.format("%.1f", unitsPerMs));
                }
            }
        }
        return unitsPerMs;
    }

    /** Does `cpuMs` of calibrated work; returns the units done and a digest byte so the work cannot be elided. */
    public Result burn(double cpuMs) {
        long units = Math.round(cpuMs * unitsPerMs());
        byte[] state = new byte[BLOCK];
        MessageDigest sha = sha256();
        for (long i = 0; i < units; i++) {
            state = step(sha, state);
        }
        return new Result(units, state[0]);
    }

    public record Result(long units, byte check) {
    }

    private double calibrate() {
        MessageDigest sha = sha256();
        byte[] state = new byte[BLOCK];
        long start = threads.getCurrentThreadCpuTime();
        while (threads.getCurrentThreadCpuTime() - start < WARM_UP_NANOS) {
            state = step(sha, state);
        }
        long units = 0;
        start = threads.getCurrentThreadCpuTime();
        long used;
        do {
            for (int i = 0; i < 100; i++) {
                state = step(sha, state);
            }
            units += 100;
            used = threads.getCurrentThreadCpuTime() - start;
        } while (used < MEASURE_NANOS);
        sink = state[0]; // the loop's result is used, so the JIT keeps the loop
        return units / (used / 1e6);
    }

    /** One unit: digest the block, and write the digest over its first bytes (the next unit's input). */
    private static byte[] step(MessageDigest sha, byte[] state) {
        sha.update(state);
        try {
            sha.digest(state, 0, DIGEST);
        } catch (DigestException e) {
            throw new IllegalStateException("a 256-byte block holds a SHA-256 digest", e);
        }
        return state;
    }

    private static MessageDigest sha256() {
        try {
            return MessageDigest.getInstance("SHA-256");
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("SHA-256 is part of every JDK", e);
        }
    }
}
