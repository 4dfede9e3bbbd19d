package lab;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;

import org.junit.jupiter.api.Test;

import org.springframework.boot.test.autoconfigure.actuate.observability.AutoConfigureObservability;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.context.SpringBootTest.WebEnvironment;
import org.springframework.boot.test.web.server.LocalServerPort;

// Spring Boot tests switch metrics export (so /actuator/prometheus) off unless asked for.
@AutoConfigureObservability
@SpringBootTest(webEnvironment = WebEnvironment.RANDOM_PORT, properties = "management.server.port=0")
class EndpointsTest {

    @LocalServerPort
    int port;

    @Test
    void helloReturnsPlainTextWithoutSleepWhenSleepMsIsZero() {
        Http.Timed r = Http.get(port, "/hello?sleepMs=0");
        assertThat(r.status()).isEqualTo(200);
        assertThat(r.body()).isEqualTo("Hello, World!");
        assertThat(r.header("Content-Type")).startsWith("text/plain");
        assertThat(r.millis()).isLessThan(2000);
    }

    @Test
    void helloSleepCanBeOverriddenPerRequest() {
        Http.Timed r = Http.get(port, "/hello?sleepMs=300");
        assertThat(r.status()).isEqualTo(200);
        assertThat(r.body()).isEqualTo("Hello, World!");
        assertThat(r.millis()).isBetween(300L, 4500L);
    }

    @Test
    void everyNthSleepsExactlyEveryNthRequest() {
        List<Http.Timed> responses = new ArrayList<>();
        for (int i = 0; i < 9; i++) {
            responses.add(Http.get(port, "/every-nth?n=3&sleepMs=150"));
        }
        long first = Long.parseLong(responses.get(0).header(LoadController.HEADER_REQUEST_NUMBER));
        int slept = 0;
        for (int i = 0; i < responses.size(); i++) {
            Http.Timed r = responses.get(i);
            assertThat(r.status()).isEqualTo(200);
            long number = Long.parseLong(r.header(LoadController.HEADER_REQUEST_NUMBER));
            assertThat(number).isEqualTo(first + i); // one counter, consecutive
            boolean expectSleep = number % 3 == 0;
            assertThat(r.header(LoadController.HEADER_SLEPT)).isEqualTo(Boolean.toString(expectSleep));
            assertThat(r.body()).isEqualTo(expectSleep ? "slept" : "fast");
            if (expectSleep) {
                slept++;
                assertThat(r.millis()).isGreaterThanOrEqualTo(150);
            }
        }
        assertThat(slept).isEqualTo(3);
    }

    @Test
    void everyNthCountsAcrossConcurrentRequests() throws Exception {
        ExecutorService pool = Executors.newFixedThreadPool(8);
        try {
            List<Callable<Http.Timed>> calls = new ArrayList<>();
            for (int i = 0; i < 30; i++) {
                calls.add(() -> Http.get(port, "/every-nth?n=3&sleepMs=20"));
            }
            List<Long> numbers = new ArrayList<>();
            int slept = 0;
            for (Future<Http.Timed> f : pool.invokeAll(calls)) {
                Http.Timed r = f.get();
                assertThat(r.status()).isEqualTo(200);
                numbers.add(Long.parseLong(r.header(LoadController.HEADER_REQUEST_NUMBER)));
                if ("true".equals(r.header(LoadController.HEADER_SLEPT))) {
                    slept++;
                }
            }
            // 30 distinct consecutive counter values -> exactly 10 multiples of 3.
            assertThat(numbers).doesNotHaveDuplicates();
            assertThat(numbers.stream().mapToLong(Long::longValue).max().getAsLong()
                    - numbers.stream().mapToLong(Long::longValue).min().getAsLong()).isEqualTo(29);
            assertThat(slept).isEqualTo(10);
        } finally {
            pool.shutdownNow();
        }
    }

    @Test
    void everyNthDefaultsAreTenAndTwoSeconds() {
        int slept = 0;
        for (int i = 0; i < 20; i++) {
            // sleepMs=0 keeps this quick; only n is defaulted here.
            if ("true".equals(Http.get(port, "/every-nth?sleepMs=0").header(LoadController.HEADER_SLEPT))) {
                slept++;
            }
        }
        assertThat(slept).isEqualTo(2);
        // n=1 makes this request the sleeping one; sleepMs defaults to 2000.
        Http.Timed r = Http.get(port, "/every-nth?n=1");
        assertThat(r.header(LoadController.HEADER_SLEPT)).isEqualTo("true");
        assertThat(r.millis()).isGreaterThanOrEqualTo(2000);
    }

    @Test
    void workHashesForItsCpuMillisecondsThenWaits() {
        Http.Timed quick = Http.get(port, "/work?cpuMs=1&waitMs=0");
        Http.Timed r = Http.get(port, "/work?cpuMs=20&waitMs=150");
        assertThat(quick.status()).isEqualTo(200);
        assertThat(r.body()).startsWith("worked");
        assertThat(Long.parseLong(r.header(LoadController.HEADER_WORK_UNITS))).isPositive();
        assertThat(r.millis()).isGreaterThanOrEqualTo(170); // 20 ms of CPU, at least as long on the clock, then 150
    }
}
