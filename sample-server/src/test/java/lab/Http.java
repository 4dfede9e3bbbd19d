package lab;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.Map;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;

import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.core.env.Environment;

/** Tiny blocking HTTP helper for the tests (JDK client, no extra dependencies). */
final class Http {

    private static final HttpClient CLIENT = HttpClient.newBuilder()
            .connectTimeout(Duration.ofSeconds(5)).build();
    private static final ObjectMapper JSON = new ObjectMapper();

    /** A response plus how long the call took. */
    record Timed(HttpResponse<String> response, long millis) {
        int status() {
            return response.statusCode();
        }

        String body() {
            return response.body();
        }

        String header(String name) {
            return response.headers().firstValue(name).orElse(null);
        }
    }

    private Http() {
    }

    static Timed get(int port, String pathAndQuery) {
        return get("127.0.0.1", port, pathAndQuery);
    }

    static Timed get(String host, int port, String pathAndQuery) {
        HttpRequest request = HttpRequest.newBuilder(URI.create("http://" + host + ":" + port + pathAndQuery))
                .timeout(Duration.ofSeconds(30)).GET().build();
        long start = System.nanoTime();
        try {
            HttpResponse<String> response = CLIENT.send(request, HttpResponse.BodyHandlers.ofString());
            return new Timed(response, (System.nanoTime() - start) / 1_000_000);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }

    static JsonNode json(int port, String path) {
        Timed timed = get(port, path);
        if (timed.status() != 200) {
            throw new AssertionError("GET " + path + " -> " + timed.status());
        }
        try {
            return JSON.readTree(timed.body());
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    static int serverPort(ConfigurableApplicationContext context) {
        return port(context.getEnvironment(), "local.server.port");
    }

    static int managementPort(ConfigurableApplicationContext context) {
        return port(context.getEnvironment(), "local.management.port");
    }

    private static int port(Environment environment, String property) {
        Integer port = environment.getProperty(property, Integer.class);
        if (port == null) {
            throw new IllegalStateException(property + " not set");
        }
        return port;
    }

    /** Convenience for building env maps in tests. */
    static Map<String, Object> env(String... keyValues) {
        java.util.LinkedHashMap<String, Object> map = new java.util.LinkedHashMap<>();
        for (int i = 0; i < keyValues.length; i += 2) {
            map.put(keyValues[i], keyValues[i + 1]);
        }
        return map;
    }
}
