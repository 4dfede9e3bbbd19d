package lab;

import static org.assertj.core.api.Assertions.assertThat;

import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;

import org.junit.jupiter.api.Test;

class CpuWorkTest {

    private final ThreadMXBean threads = ManagementFactory.getThreadMXBean();

    @Test
    void calibratedWorkTakesAboutTheCpuTimeAsked() {
        CpuWork work = new CpuWork(0);
        assertThat(work.unitsPerMs()).isPositive();
        long before = threads.getCurrentThreadCpuTime();
        CpuWork.Result done = work.burn(100);
        double usedMs = (threads.getCurrentThreadCpuTime() - before) / 1e6;
        assertThat(done.units()).isEqualTo(Math.round(100 * work.unitsPerMs()));
        // the thread's own CPU clock, not wall time: other load on the machine does not count, cache misses do
        assertThat(usedMs).isBetween(50.0, 200.0);
    }

    @Test
    void noWorkAskedIsNoWorkDone() {
        assertThat(new CpuWork(0).burn(0).units()).isZero();
    }
}
