package lab;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.Map;

import com.fasterxml.jackson.databind.JsonNode;
import org.apache.catalina.connector.Connector;
import org.apache.coyote.http11.AbstractHttp11Protocol;
import org.junit.jupiter.api.Test;

import org.springframework.context.ConfigurableApplicationContext;

/**
 * Every knob set the way the experiments set it, as OS environment variables (see {@link FakeEnvApp}),
 * then read back from the running main connector and from /actuator/info.
 */
class EnvBindingTest {

    @Test
    void everyKnobFromEnvReachesTheRunningConnector() {
        Map<String, Object> env = Http.env(
                "TOMCAT_MAX_THREADS", "37",
                "TOMCAT_MIN_SPARE_THREADS", "3",
                "TOMCAT_MAX_CONNECTIONS", "123",
                "TOMCAT_ACCEPT_COUNT", "17",
                "TOMCAT_CONNECTION_TIMEOUT", "4321",
                "TOMCAT_KEEP_ALIVE_TIMEOUT", "1234",
                "TOMCAT_MAX_KEEP_ALIVE_REQUESTS", "7",
                "SERVER_PORT", "0",
                "SERVER_ADDRESS", "0.0.0.0",
                "MANAGEMENT_PORT", "0",
                "SLEEP_MS", "150");
        try (ConfigurableApplicationContext context = FakeEnvApp.start(env)) {
            int port = Http.serverPort(context);
            int managementPort = Http.managementPort(context);
            assertThat(port).isPositive().isNotEqualTo(8080);
            assertThat(managementPort).isPositive().isNotEqualTo(8081).isNotEqualTo(port);

            // Straight from the connector object ...
            Connector connector = context.getBean(MainTomcatInfo.class).mainConnector();
            AbstractHttp11Protocol<?> protocol = (AbstractHttp11Protocol<?>) connector.getProtocolHandler();
            assertThat(protocol.getMaxThreads()).isEqualTo(37);
            assertThat(protocol.getMinSpareThreads()).isEqualTo(3);
            assertThat(protocol.getMaxConnections()).isEqualTo(123);
            assertThat(protocol.getAcceptCount()).isEqualTo(17);
            assertThat(protocol.getConnectionTimeout()).isEqualTo(4321);
            assertThat(protocol.getKeepAliveTimeout()).isEqualTo(1234);
            assertThat(protocol.getMaxKeepAliveRequests()).isEqualTo(7);
            assertThat(connector.getLocalPort()).isEqualTo(port);

            // ... and as the harness sees it.
            JsonNode tomcat = Http.json(managementPort, "/actuator/info").at("/lab/tomcat");
            assertThat(tomcat.get("maxThreads").asInt()).isEqualTo(37);
            assertThat(tomcat.get("minSpareThreads").asInt()).isEqualTo(3);
            assertThat(tomcat.get("maxConnections").asInt()).isEqualTo(123);
            assertThat(tomcat.get("acceptCount").asInt()).isEqualTo(17);
            assertThat(tomcat.get("connectionTimeout").asInt()).isEqualTo(4321);
            assertThat(tomcat.get("keepAliveTimeout").asInt()).isEqualTo(1234);
            assertThat(tomcat.get("maxKeepAliveRequests").asInt()).isEqualTo(7);
            assertThat(tomcat.get("port").asInt()).isEqualTo(port);
            assertThat(tomcat.get("address").asText()).isEqualTo("0.0.0.0");

            // SLEEP_MS is the default sleep of /hello.
            Http.Timed hello = Http.get(port, "/hello");
            assertThat(hello.status()).isEqualTo(200);
            assertThat(hello.body()).isEqualTo("Hello, World!");
            assertThat(hello.millis()).isBetween(150L, 4000L);
        }
    }

    @Test
    void virtualThreadsEnvIsHonouredOnlyOnJava21AndHarmlessBefore() {
        Map<String, Object> env = Http.env("VIRTUAL_THREADS", "true", "SERVER_PORT", "0", "MANAGEMENT_PORT", "0");
        try (ConfigurableApplicationContext context = FakeEnvApp.start(env)) {
            assertThat(context.getEnvironment().getProperty("spring.threads.virtual.enabled")).isEqualTo("true");
            boolean expected = Runtime.version().feature() >= 21;
            JsonNode lab = Http.json(Http.managementPort(context), "/actuator/info").at("/lab");
            assertThat(lab.get("virtualThreads").asBoolean()).isEqualTo(expected);
            Http.Timed hello = Http.get(Http.serverPort(context), "/hello?sleepMs=0");
            assertThat(hello.status()).isEqualTo(200);
            assertThat(hello.body()).isEqualTo("Hello, World!");
        }
    }

    @Test
    void actuatorListensOnTheAddressManagementAddressNames() {
        // 127.0.0.2 is loopback too (Linux routes all of 127/8 to lo), but a socket bound to 127.0.0.1 does not
        // accept its connections: Actuator answering there, and not on 127.0.0.1, shows the variable is the bind.
        Map<String, Object> env = Http.env("SERVER_PORT", "0", "MANAGEMENT_PORT", "0",
                "MANAGEMENT_ADDRESS", "127.0.0.2");
        try (ConfigurableApplicationContext context = FakeEnvApp.start(env)) {
            int managementPort = Http.managementPort(context);
            assertThat(Http.get("127.0.0.2", managementPort, "/actuator/health").status()).isEqualTo(200);
            assertThatThrownBy(() -> Http.get("127.0.0.1", managementPort, "/actuator/health"))
                    .hasCauseInstanceOf(java.net.ConnectException.class);  // refused: nothing listens there
            // The service port keeps its own address (SERVER_ADDRESS's default).
            assertThat(Http.get(Http.serverPort(context), "/hello?sleepMs=0").status()).isEqualTo(200);
        }
    }

    @Test
    void unsetOrBlankEnvAddsNothingAndTimeoutsAreMilliseconds() {
        Map<String, Object> env = Http.env("TOMCAT_MAX_THREADS", " ", "TOMCAT_CONNECTION_TIMEOUT", "2500",
                "TOMCAT_KEEP_ALIVE_TIMEOUT", "-1");
        try (ConfigurableApplicationContext context = FakeEnvApp.start(
                org.springframework.boot.WebApplicationType.NONE, env)) {
            var environment = context.getEnvironment();
            assertThat(environment.getProperty("server.tomcat.threads.max")).isNull();
            assertThat(environment.getProperty("server.tomcat.connection-timeout")).isEqualTo("2500ms");
            assertThat(environment.getProperty("server.tomcat.keep-alive-timeout")).isEqualTo("-1ms");
            assertThat(environment.getProperty("server.tomcat.max-connections")).isNull();
        }
    }
}
