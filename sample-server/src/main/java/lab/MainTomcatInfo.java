package lab;

import java.net.InetAddress;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.Executor;

import org.apache.catalina.connector.Connector;
import org.apache.coyote.AbstractProtocol;
import org.apache.coyote.ProtocolHandler;
import org.apache.coyote.http11.AbstractHttp11Protocol;

import org.springframework.boot.SpringBootVersion;
import org.springframework.boot.actuate.info.Info;
import org.springframework.boot.actuate.info.InfoContributor;
import org.springframework.boot.web.context.WebServerInitializedEvent;
import org.springframework.boot.web.embedded.tomcat.TomcatWebServer;
import org.springframework.context.ApplicationListener;
import org.springframework.stereotype.Component;

/**
 * Remembers the main (non-management) Tomcat once it has started and reports, under {@code lab} in
 * /actuator/info, the settings read back from its running connector plus versions and pid.
 */
@Component
public class MainTomcatInfo implements ApplicationListener<WebServerInitializedEvent>, InfoContributor {

    private volatile TomcatWebServer mainServer;

    @Override
    public void onApplicationEvent(WebServerInitializedEvent event) {
        // The management server (its own port) is a second Tomcat in a child context whose server
        // namespace is "management"; its events reach this listener too. Keep only the main one.
        if (event.getApplicationContext().getServerNamespace() == null
                && event.getWebServer() instanceof TomcatWebServer tomcat) {
            this.mainServer = tomcat;
        }
    }

    /** The main connector, or null before the main Tomcat has started. */
    Connector mainConnector() {
        TomcatWebServer server = this.mainServer;
        if (server == null) {
            return null;
        }
        Connector[] connectors = server.getTomcat().getService().findConnectors();
        return connectors.length > 0 ? connectors[0] : null;
    }

    @Override
    public void contribute(Info.Builder builder) {
        Map<String, Object> lab = new LinkedHashMap<>();
        Connector connector = mainConnector();
        lab.put("tomcat", connector != null ? describe(connector) : Map.of());
        lab.put("virtualThreads", connector != null && usesVirtualThreads(connector));
        Map<String, Object> java = new LinkedHashMap<>();
        java.put("version", System.getProperty("java.version"));
        java.put("vendor", System.getProperty("java.vendor"));
        java.put("vmName", System.getProperty("java.vm.name"));
        lab.put("java", java);
        lab.put("springBootVersion", SpringBootVersion.getVersion());
        lab.put("pid", ProcessHandle.current().pid());
        builder.withDetail("lab", lab);
    }

    static Map<String, Object> describe(Connector connector) {
        Map<String, Object> tomcat = new LinkedHashMap<>();
        ProtocolHandler handler = connector.getProtocolHandler();
        if (handler instanceof AbstractProtocol<?> protocol) {
            // With an external executor (virtual threads) Tomcat reports -1 for the thread counts.
            tomcat.put("maxThreads", protocol.getMaxThreads());
            tomcat.put("minSpareThreads", protocol.getMinSpareThreads());
            tomcat.put("maxConnections", protocol.getMaxConnections());
            tomcat.put("acceptCount", protocol.getAcceptCount());
            tomcat.put("connectionTimeout", protocol.getConnectionTimeout());
        }
        if (handler instanceof AbstractHttp11Protocol<?> http11) {
            tomcat.put("keepAliveTimeout", http11.getKeepAliveTimeout());
            tomcat.put("maxKeepAliveRequests", http11.getMaxKeepAliveRequests());
        }
        tomcat.put("port", connector.getLocalPort());
        InetAddress address = (handler instanceof AbstractProtocol<?> protocol) ? protocol.getAddress() : null;
        tomcat.put("address", address != null ? address.getHostAddress() : "0.0.0.0");
        Executor executor = handler.getExecutor();
        tomcat.put("executor", executor != null ? executor.getClass().getName() : null);
        tomcat.put("protocol", handler.getClass().getName());
        return tomcat;
    }

    static boolean usesVirtualThreads(Connector connector) {
        Executor executor = connector.getProtocolHandler().getExecutor();
        // org.apache.tomcat.util.threads.VirtualThreadExecutor, set by Spring Boot on JVM 21+
        // when spring.threads.virtual.enabled=true.
        return executor != null && executor.getClass().getSimpleName().contains("VirtualThread");
    }
}
