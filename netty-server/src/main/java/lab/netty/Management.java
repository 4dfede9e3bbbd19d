package lab.netty;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.function.Supplier;

/**
 * Health and counters on a port of their own (the JDK's HTTP server, one thread), like Spring's management port: the
 * lab's probes and samples never count among the service port's connections or requests.
 * GET /health → {"status":"UP","pid":N, versions, thread counts}; GET /metrics → the counters as one JSON object.
 */
final class Management {
    private final HttpServer server;

    Management(String address, int port, String about, Supplier<String> metrics) throws IOException {
        server = HttpServer.create(new InetSocketAddress(address, port), 16);
        String health = "{\"status\":\"UP\",\"pid\":" + ProcessHandle.current().pid() + "," + about + "}";
        server.createContext("/health", exchange -> reply(exchange, health));
        server.createContext("/metrics", exchange -> reply(exchange, metrics.get()));
    }

    void start() {
        server.start();
    }

    void stop() {
        server.stop(0);
    }

    private static void reply(HttpExchange exchange, String json) throws IOException {
        byte[] body = json.getBytes(StandardCharsets.UTF_8);
        exchange.getResponseHeaders().set("Content-Type", "application/json");
        exchange.sendResponseHeaders(200, body.length);
        try (OutputStream out = exchange.getResponseBody()) {
            out.write(body);
        }
    }
}
