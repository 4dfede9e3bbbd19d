package lab;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.Map;

import com.fasterxml.jackson.databind.JsonNode;
import org.apache.catalina.connector.Connector;
import org.apache.coyote.http11.Http11NioProtocol;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import org.springframework.boot.WebApplicationType;
import org.springframework.boot.autoconfigure.web.ServerProperties;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.core.env.Environment;

/**
 * With no env var set, Spring Boot's / Tomcat's own defaults must be in force on the running
 * connector. Asserted both against literal values (the facts for Boot 3.5 / Tomcat 10.1) and against
 * where those defaults come from (a fresh ServerProperties and a fresh Tomcat protocol handler).
 */
class DefaultsTest {

    private static ConfigurableApplicationContext context;

    @BeforeAll
    static void start() {
        // Empty environment; only the ports are randomised (command line, like the tests' server.port=0).
        context = FakeEnvApp.start(Map.of(), "--server.port=0", "--management.server.port=0");
    }

    @AfterAll
    static void stop() {
        if (context != null) {
            context.close();
        }
    }

    @Test
    void connectorRunsWithSpringAndTomcatDefaults() {
        JsonNode tomcat = Http.json(Http.managementPort(context), "/actuator/info").at("/lab/tomcat");

        // Literal facts: Spring Boot 3.5 ServerProperties.Tomcat defaults ...
        assertThat(tomcat.get("maxThreads").asInt()).isEqualTo(200);
        assertThat(tomcat.get("minSpareThreads").asInt()).isEqualTo(10);
        assertThat(tomcat.get("maxConnections").asInt()).isEqualTo(8192);
        assertThat(tomcat.get("acceptCount").asInt()).isEqualTo(100);
        assertThat(tomcat.get("maxKeepAliveRequests").asInt()).isEqualTo(100);
        // ... and, because Boot leaves connection-timeout / keep-alive-timeout unset (null), Tomcat's
        // own: HTTP/1.1 connectionTimeout 60000 ms (org.apache.coyote.http11.Constants; NOT the
        // 20000 of Tomcat's sample server.xml), keepAliveTimeout falls back to connectionTimeout.
        assertThat(tomcat.get("connectionTimeout").asInt()).isEqualTo(60000);
        assertThat(tomcat.get("keepAliveTimeout").asInt()).isEqualTo(60000);
        // Our own documented default for the address.
        assertThat(tomcat.get("address").asText()).isEqualTo("127.0.0.1");
        assertThat(tomcat.get("port").asInt()).isEqualTo(Http.serverPort(context));

        // Where the defaults come from.
        ServerProperties.Tomcat boot = new ServerProperties().getTomcat();
        assertThat(boot.getConnectionTimeout()).isNull();
        assertThat(boot.getKeepAliveTimeout()).isNull();
        assertThat(tomcat.get("maxThreads").asInt()).isEqualTo(boot.getThreads().getMax());
        assertThat(tomcat.get("minSpareThreads").asInt()).isEqualTo(boot.getThreads().getMinSpare());
        assertThat(tomcat.get("maxConnections").asInt()).isEqualTo(boot.getMaxConnections());
        assertThat(tomcat.get("acceptCount").asInt()).isEqualTo(boot.getAcceptCount());
        assertThat(tomcat.get("maxKeepAliveRequests").asInt()).isEqualTo(boot.getMaxKeepAliveRequests());
        Http11NioProtocol fresh = new Http11NioProtocol();
        assertThat(tomcat.get("connectionTimeout").asInt()).isEqualTo(fresh.getConnectionTimeout());
        assertThat(tomcat.get("keepAliveTimeout").asInt()).isEqualTo(fresh.getKeepAliveTimeout());
    }

    @Test
    void noTomcatKnobIsInventedAndPlatformThreadsAreUsed() {
        assertThat(context.getEnvironment().getPropertySources()
                .contains(TomcatEnvironmentPostProcessor.PROPERTY_SOURCE_NAME)).isFalse();
        TomcatEnvironmentPostProcessor.KNOBS.values()
                .forEach((property) -> assertThat(context.getEnvironment().getProperty(property))
                        .as(property).isNull());
        Connector connector = context.getBean(MainTomcatInfo.class).mainConnector();
        assertThat(MainTomcatInfo.usesVirtualThreads(connector)).isFalse();
        assertThat(context.getEnvironment().getProperty("spring.threads.virtual.enabled")).isEqualTo("false");
    }

    @Test
    void defaultPortsAddressAndSleep() {
        // Resolve the configuration with no env and no overrides, without binding 8080/8081.
        try (ConfigurableApplicationContext plain = FakeEnvApp.start(WebApplicationType.NONE, Map.of())) {
            Environment env = plain.getEnvironment();
            assertThat(env.getProperty("server.port")).isEqualTo("8080");
            assertThat(env.getProperty("server.address")).isEqualTo("127.0.0.1");
            assertThat(env.getProperty("management.server.port")).isEqualTo("8081");
            assertThat(env.getProperty("management.server.address")).isEqualTo("127.0.0.1");
            assertThat(env.getProperty("spring.main.lazy-initialization")).isEqualTo("false");
            assertThat(env.getProperty("server.tomcat.mbeanregistry.enabled")).isEqualTo("true");
            assertThat(plain.getBean(LoadController.class).defaultSleepMs()).isEqualTo(5000);
        }
    }
}
