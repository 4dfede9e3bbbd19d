package lab.netty;

import io.netty.util.Version;
import jakarta.ws.rs.core.Application;
import java.io.IOException;
import java.io.InputStream;
import java.util.List;
import java.util.Properties;
import java.util.Set;
import org.jboss.resteasy.core.ResteasyDeploymentImpl;
import org.jboss.resteasy.plugins.server.netty.NettyJaxrsServer;
import org.jboss.resteasy.spi.ResteasyDeployment;

/**
 * Chapter 6's upstream service: GET /hello on RESTEasy's Netty 4 server (event loops for the sockets, an executor
 * pool for resource methods), health and counters on a management port. Settings come from NETTY_* environment
 * variables (Settings).
 */
public final class NettyRestServer {

    public static void main(String[] args) throws Exception {
        Settings settings;
        try {
            settings = Settings.fromEnv(System.getenv());
        } catch (IllegalArgumentException bad) {
            System.err.println("netty-server: " + bad.getMessage());
            System.exit(2);
            return;
        }
        HelloResource hello = new HelloResource();
        ConnectionCounter connections = new ConnectionCounter();

        ResteasyDeployment deployment = new ResteasyDeploymentImpl();
        deployment.setApplication(new Application() {
            @Override
            public Set<Object> getSingletons() {
                return Set.of(hello);
            }
        });
        NettyJaxrsServer server = new NettyJaxrsServer();
        server.setDeployment(deployment);
        server.setHostname(settings.address());
        server.setPort(settings.port());
        server.setRootResourcePath("/");
        server.setIoWorkerCount(settings.ioThreads());
        server.setExecutorThreadCount(settings.executorThreads());
        server.setBacklog(settings.backlog());
        server.setChannelHandlers(List.of(connections));
        server.setSecurityDomain(null);

        String about = versions() + ",\"io_threads\":" + settings.ioThreads() + ",\"executor_threads\":"
                + settings.executorThreads();
        Management management = new Management(settings.address(), settings.managementPort(), about,
                () -> "{\"requests\":" + hello.requests() + ",\"connections_opened\":" + connections.opened()
                        + ",\"connections_closed\":" + connections.closed() + "}");
        server.start();
        management.start();
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            management.stop();
            server.stop();
        }, "shutdown"));
        System.out.printf("netty-server listening on %s:%d (management %d), %d io threads, %d executor threads, "
                        + "backlog %d, Java %s%n", settings.address(), server.getPort(), settings.managementPort(),
                settings.ioThreads(), settings.executorThreads(), settings.backlog(), Runtime.version());
    }

    /** "resteasy":"…","netty":"…","java":"…" for /health (the lab records them in step.json). */
    static String versions() throws IOException {
        Properties built = new Properties();
        try (InputStream in = NettyRestServer.class.getResourceAsStream("/netty-server.properties")) {
            if (in != null) {
                built.load(in);
            }
        }
        Version netty = Version.identify().get("netty-common");
        return "\"resteasy\":\"" + built.getProperty("resteasy.version", "unknown") + "\",\"netty\":\""
                + (netty == null ? "unknown" : netty.artifactVersion()) + "\",\"java\":\"" + Runtime.version() + "\"";
    }
}
