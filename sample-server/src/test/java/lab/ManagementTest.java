package lab;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import org.springframework.boot.SpringBootVersion;
import org.springframework.boot.test.autoconfigure.actuate.observability.AutoConfigureObservability;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.context.SpringBootTest.WebEnvironment;
import org.springframework.boot.test.web.server.LocalManagementPort;
import org.springframework.boot.test.web.server.LocalServerPort;

/** Actuator: own port, exactly four endpoints, the lab info contributor, Tomcat metrics. */
// Spring Boot tests switch metrics export (so /actuator/prometheus) off unless asked for.
@AutoConfigureObservability
@SpringBootTest(webEnvironment = WebEnvironment.RANDOM_PORT, properties = "management.server.port=0")
class ManagementTest {

    @LocalServerPort
    int port;

    @LocalManagementPort
    int managementPort;

    @ParameterizedTest
    @ValueSource(strings = { "/actuator/health", "/actuator/info", "/actuator/metrics", "/actuator/prometheus" })
    void exposedEndpointsAreReachableOnTheManagementPort(String path) {
        assertThat(Http.get(managementPort, path).status()).isEqualTo(200);
    }

    @ParameterizedTest
    @ValueSource(strings = { "/actuator", "/actuator/env", "/actuator/beans", "/actuator/configprops",
            "/actuator/threaddump", "/actuator/heapdump", "/actuator/loggers", "/actuator/mappings",
            "/actuator/shutdown", "/actuator/conditions", "/actuator/scheduledtasks" })
    void nothingElseIsReachable(String path) {
        assertThat(Http.get(managementPort, path).status()).isEqualTo(404);
    }

    @ParameterizedTest
    @ValueSource(strings = { "/actuator", "/actuator/health", "/actuator/info", "/actuator/metrics",
            "/actuator/prometheus" })
    void actuatorIsNotOnTheMainPort(String path) {
        assertThat(Http.get(port, path).status()).isEqualTo(404);
    }

    @Test
    void healthIsUp() {
        assertThat(Http.json(managementPort, "/actuator/health").get("status").asText()).isEqualTo("UP");
    }

    @Test
    void infoReportsTheMainConnectorVersionsAndPid() {
        JsonNode lab = Http.json(managementPort, "/actuator/info").get("lab");
        JsonNode tomcat = lab.get("tomcat");
        for (String field : new String[] { "maxThreads", "minSpareThreads", "maxConnections", "acceptCount",
                "connectionTimeout", "keepAliveTimeout", "maxKeepAliveRequests", "port" }) {
            assertThat(tomcat.get(field)).as(field).isNotNull();
            assertThat(tomcat.get(field).isInt()).as(field).isTrue();
        }
        // The main Tomcat, not the management one.
        assertThat(tomcat.get("port").asInt()).isEqualTo(port).isNotEqualTo(managementPort);
        assertThat(tomcat.get("address").asText()).isEqualTo("127.0.0.1");
        assertThat(tomcat.get("maxThreads").asInt()).isEqualTo(200);
        assertThat(lab.get("virtualThreads").isBoolean()).isTrue();
        assertThat(lab.get("virtualThreads").asBoolean()).isFalse();
        assertThat(lab.at("/java/version").asText()).isEqualTo(System.getProperty("java.version"));
        assertThat(lab.get("springBootVersion").asText()).isEqualTo(SpringBootVersion.getVersion())
                .isEqualTo("3.5.16");
        assertThat(lab.get("pid").asLong()).isEqualTo(ProcessHandle.current().pid());
    }

    @Test
    void tomcatThreadAndConnectionMetricsExist() {
        JsonNode names = Http.json(managementPort, "/actuator/metrics").get("names");
        assertThat(names).isNotNull();
        java.util.List<String> list = new java.util.ArrayList<>();
        names.forEach((n) -> list.add(n.asText()));
        assertThat(list).contains("tomcat.threads.busy", "tomcat.threads.current", "tomcat.threads.config.max",
                "tomcat.connections.current", "tomcat.connections.config.max");
        JsonNode busy = Http.json(managementPort, "/actuator/metrics/tomcat.threads.busy");
        assertThat(busy.get("name").asText()).isEqualTo("tomcat.threads.busy");
        // Tagged with the connector name, e.g. http-nio-127.0.0.1-8080 ("auto-N" for port 0).
        assertThat(busy.at("/availableTags/0/tag").asText()).isEqualTo("name");
        assertThat(busy.at("/availableTags/0/values/0").asText()).startsWith("http-nio-127.0.0.1-");
        assertThat(Http.get(managementPort, "/actuator/prometheus").body()).contains("tomcat_threads_busy_threads");
    }
}
