package lab;

import java.util.concurrent.atomic.AtomicLong;

import org.springframework.beans.factory.annotation.Value;
import org.springframework.http.MediaType;
import org.springframework.http.ResponseEntity;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.RequestParam;
import org.springframework.web.bind.annotation.RestController;

/**
 * Endpoints for load experiments. Sleeping uses {@link Thread#sleep(long)} on purpose: it blocks
 * the Tomcat worker thread (thread-per-request is what the experiments measure).
 */
@RestController
public class LoadController {

    static final String HEADER_SLEPT = "X-Slept";
    static final String HEADER_REQUEST_NUMBER = "X-Request-Number";
    static final String HEADER_WORK_UNITS = "X-Work-Units";

    private final CpuWork cpuWork;
    private final double defaultCpuMs;
    private final long defaultWaitMs;

    private final long defaultSleepMs;

    /** Counts every request to /every-nth across the whole server. */
    private final AtomicLong everyNthCounter = new AtomicLong();

    public LoadController(@Value("${SLEEP_MS:5000}") long defaultSleepMs, CpuWork cpuWork,
            @Value("${WORK_CPU_MS:0}") double defaultCpuMs, @Value("${WORK_WAIT_MS:0}") long defaultWaitMs) {
        this.defaultSleepMs = defaultSleepMs;
        this.cpuWork = cpuWork;
        this.defaultCpuMs = defaultCpuMs;
        this.defaultWaitMs = defaultWaitMs;
    }

    long defaultSleepMs() {
        return defaultSleepMs;
    }

    @GetMapping(path = "/hello", produces = MediaType.TEXT_PLAIN_VALUE)
    public String hello(@RequestParam(name = "sleepMs", required = false) Long sleepMs) {
        sleep(sleepMs != null ? sleepMs : defaultSleepMs);
        return "Hello, World!";
    }

    @GetMapping(path = "/every-nth", produces = MediaType.TEXT_PLAIN_VALUE)
    public ResponseEntity<String> everyNth(@RequestParam(name = "n", defaultValue = "10") long n,
            @RequestParam(name = "sleepMs", defaultValue = "2000") long sleepMs) {
        long number = everyNthCounter.incrementAndGet();
        boolean slow = number % Math.max(1, n) == 0;
        if (slow) {
            sleep(sleepMs);
        }
        return ResponseEntity.ok()
                .header(HEADER_SLEPT, Boolean.toString(slow))
                .header(HEADER_REQUEST_NUMBER, Long.toString(number))
                .body(slow ? "slept" : "fast");
    }

    /**
     * An API call as most are: CPU work (cpuMs of one core, calibrated) and then a blocking wait (waitMs) standing
     * for the database or cache call it would make, holding its thread throughout.
     */
    @GetMapping(path = "/work", produces = MediaType.TEXT_PLAIN_VALUE)
    public ResponseEntity<String> work(@RequestParam(name = "cpuMs", required = false) Double cpuMs,
            @RequestParam(name = "waitMs", required = false) Long waitMs) {
        CpuWork.Result done = cpuWork.burn(cpuMs != null ? cpuMs : defaultCpuMs);
        sleep(waitMs != null ? waitMs : defaultWaitMs);
        return ResponseEntity.ok()
                .header(HEADER_WORK_UNITS, Long.toString(done.units()))
                .body("worked " + done.check());
    }

    private static void sleep(long ms) {
        if (ms <= 0) {
            return;
        }
        try {
            Thread.sleep(ms);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
