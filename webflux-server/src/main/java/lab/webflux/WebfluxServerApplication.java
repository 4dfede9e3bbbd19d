package lab.webflux;

import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;

import org.springframework.beans.factory.annotation.Value;
import org.springframework.boot.SpringApplication;
import org.springframework.boot.SpringBootVersion;
import org.springframework.boot.actuate.info.InfoContributor;
import org.springframework.boot.autoconfigure.SpringBootApplication;
import org.springframework.boot.web.embedded.netty.NettyServerCustomizer;
import org.springframework.context.annotation.Bean;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.RequestParam;
import org.springframework.web.bind.annotation.RestController;
import reactor.core.publisher.Mono;

/**
 * The sample server's endpoints on an event loop: {@code /hello} answers at once, {@code /sleep} after SLEEP_MS (or
 * {@code ?ms=}) without holding a thread: the wait is a timer on Reactor's scheduler, so a handful of event-loop
 * threads serve any number of waiting requests.
 */
@SpringBootApplication
@RestController
public class WebfluxServerApplication {

    @Value("${lab.sleep-ms:0}")
    private long sleepMs;

    public static void main(String[] args) {
        SpringApplication.run(WebfluxServerApplication.class, args);
    }

    @GetMapping("/hello")
    public Mono<String> hello() {
        return Mono.just("{\"message\":\"hello\"}");
    }

    @GetMapping("/sleep")
    public Mono<String> sleep(@RequestParam(name = "ms", required = false) Long ms) {
        long wait = ms != null ? ms : sleepMs;
        return Mono.just("{\"slept_ms\":" + wait + "}").delayElement(Duration.ofMillis(wait));
    }

    /** Reactor Netty's connection gauges (reactor.netty.http.server.connections.*), off by default. */
    @Bean
    NettyServerCustomizer connectionMetrics() {
        return server -> server.metrics(true, uri -> "/");
    }

    /** What the lab checks and records: the pid (the process answering is the one started) and the versions. */
    @Bean
    InfoContributor labInfo() {
        return builder -> {
            Map<String, Object> lab = new LinkedHashMap<>();
            lab.put("pid", ProcessHandle.current().pid());
            lab.put("java", Runtime.version().toString());
            lab.put("springBootVersion", SpringBootVersion.getVersion());
            lab.put("reactorNetty", reactor.netty.Metrics.class.getPackage().getImplementationVersion());
            lab.put("eventLoopThreads", Integer.getInteger("reactor.netty.ioWorkerCount",
                    Math.max(Runtime.getRuntime().availableProcessors(), 4)));
            builder.withDetails(lab);
        };
    }
}
