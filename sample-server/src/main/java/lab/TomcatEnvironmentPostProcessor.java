package lab;

import java.util.LinkedHashMap;
import java.util.Map;
import java.util.regex.Pattern;

import org.springframework.boot.SpringApplication;
import org.springframework.boot.env.EnvironmentPostProcessor;
import org.springframework.core.env.ConfigurableEnvironment;
import org.springframework.core.env.MapPropertySource;
import org.springframework.core.env.MutablePropertySources;
import org.springframework.core.env.StandardEnvironment;

/**
 * Maps the experiments' env var names (TOMCAT_MAX_THREADS, ..., and the pair-room API's HIKARI_* and
 * JPA_OPEN_IN_VIEW) onto Spring Boot's own properties, but only for variables that are set: an unset variable adds
 * nothing, so Spring Boot's / Tomcat's own default stays in force.
 */
public class TomcatEnvironmentPostProcessor implements EnvironmentPostProcessor {

    static final String PROPERTY_SOURCE_NAME = "labTomcatEnv";

    /** env var name -> Spring Boot property. */
    static final Map<String, String> KNOBS = new LinkedHashMap<>();
    static {
        KNOBS.put("TOMCAT_MAX_THREADS", "server.tomcat.threads.max");
        KNOBS.put("TOMCAT_MIN_SPARE_THREADS", "server.tomcat.threads.min-spare");
        KNOBS.put("TOMCAT_MAX_CONNECTIONS", "server.tomcat.max-connections");
        KNOBS.put("TOMCAT_ACCEPT_COUNT", "server.tomcat.accept-count");
        KNOBS.put("TOMCAT_CONNECTION_TIMEOUT", "server.tomcat.connection-timeout");
        KNOBS.put("TOMCAT_KEEP_ALIVE_TIMEOUT", "server.tomcat.keep-alive-timeout");
        KNOBS.put("TOMCAT_MAX_KEEP_ALIVE_REQUESTS", "server.tomcat.max-keep-alive-requests");
        // The pair-room API's pool (profile pair-room).
        KNOBS.put("HIKARI_MAX_POOL_SIZE", "spring.datasource.hikari.maximum-pool-size");
        KNOBS.put("HIKARI_CONNECTION_TIMEOUT", "spring.datasource.hikari.connection-timeout");
        KNOBS.put("JPA_OPEN_IN_VIEW", "spring.jpa.open-in-view");
    }

    private static final Pattern INTEGER = Pattern.compile("[+-]?\\d+");

    @Override
    public void postProcessEnvironment(ConfigurableEnvironment environment, SpringApplication application) {
        Map<String, Object> mapped = new LinkedHashMap<>();
        KNOBS.forEach((env, property) -> {
            String value = environment.getProperty(env);
            if (value == null || value.isBlank()) {
                return;
            }
            value = value.trim();
            if (property.startsWith("server.tomcat.") && property.endsWith("-timeout") && INTEGER.matcher(value).matches()) {
                value = value + "ms"; // the env vars are plain milliseconds
            }
            mapped.put(property, value);
        });
        if (mapped.isEmpty()) {
            return;
        }
        MutablePropertySources sources = environment.getPropertySources();
        MapPropertySource source = new MapPropertySource(PROPERTY_SOURCE_NAME, mapped);
        // Same precedence as the environment itself: above application.properties, below
        // command-line arguments and system properties.
        String systemEnvironment = StandardEnvironment.SYSTEM_ENVIRONMENT_PROPERTY_SOURCE_NAME;
        if (sources.contains(systemEnvironment)) {
            sources.addAfter(systemEnvironment, source);
        } else {
            sources.addFirst(source);
        }
    }
}
