package lab;

import static org.assertj.core.api.Assertions.assertThat;

import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;

import org.junit.jupiter.api.Test;

class CpuWorkTest {

    private final ThreadMXBean threads = ManagementFactory.getThreadMXBean();

    @Test
    void workUsesTheCpuTimeAskedOnItsOwnThread() {
        CpuWork work = new CpuWork();
        work.burn(50); // the JIT's first pass
        long before = threads.getCurrentThreadCpuTime();
        CpuWork.Result done = work.burn(100);
        double usedMs = (threads.getCurrentThreadCpuTime() - before) / 1e6;
        assertThat(done.units()).isPositive();
        // the thread's own CPU clock, not wall time: other load on the machine does not stretch it
        assertThat(usedMs).isBetween(100.0, 110.0);
    }

    @Test
    void noWorkAskedIsNoWorkDone() {
        assertThat(new CpuWork().burn(0).units()).isZero();
    }
}
