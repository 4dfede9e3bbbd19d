package lab;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.Map;

import javax.sql.DataSource;

import jakarta.persistence.EntityManagerFactory;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import org.springframework.context.ConfigurableApplicationContext;

import lab.pairroom.PairRoomController;

/**
 * The pair-room API's libraries (JPA, Hibernate, HikariCP, the PostgreSQL driver) are on the classpath, but without
 * the pair-room profile none of it may start: chapters 1-4's server has no database, no pool, no pair-room paths.
 */
class NoDatabaseByDefaultTest {

    private static ConfigurableApplicationContext context;

    @BeforeAll
    static void start() {
        context = FakeEnvApp.start(Map.of(), "--server.port=0", "--management.server.port=0");
    }

    @AfterAll
    static void stop() {
        if (context != null) {
            context.close();
        }
    }

    @Test
    void noDataSourceNoJpaNoPairRoomBeans() {
        assertThat(context.getBeanNamesForType(DataSource.class)).isEmpty();
        assertThat(context.getBeanNamesForType(EntityManagerFactory.class)).isEmpty();
        assertThat(context.getBeanNamesForType(PairRoomController.class)).isEmpty();
    }

    @Test
    void pairRoomPathsAreNotThere() {
        assertThat(Http.get(Http.serverPort(context), "/api/pair-room/R1").status()).isEqualTo(404);
    }

    @Test
    void noHikariMetrics() {
        String scrape = Http.get(Http.managementPort(context), "/actuator/prometheus").body();
        assertThat(scrape).doesNotContain("hikaricp_");
    }
}
