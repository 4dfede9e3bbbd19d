package lab.pairroom;

import org.springframework.boot.autoconfigure.domain.EntityScan;
import org.springframework.context.annotation.Configuration;
import org.springframework.context.annotation.Profile;
import org.springframework.data.jpa.repository.config.EnableJpaRepositories;

/**
 * The pair-room API (chapter 5): entities and repositories exist only under the profile, so the default server never
 * touches JPA, Hibernate or a database.
 */
@Configuration(proxyBeanMethods = false)
@Profile(PairRoomConfig.PROFILE)
@EnableJpaRepositories
@EntityScan
public class PairRoomConfig {

    public static final String PROFILE = "pair-room";
}
