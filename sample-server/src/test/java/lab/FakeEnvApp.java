package lab;

import java.util.Map;

import org.springframework.boot.WebApplicationType;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.core.env.StandardEnvironment;
import org.springframework.core.env.SystemEnvironmentPropertySource;

/**
 * Starts the real application with a <em>fake operating-system environment</em>: the
 * "systemEnvironment" property source is replaced by one holding exactly the given variables, so
 * values arrive exactly as real env vars would (same source type, same precedence, same relaxed
 * binding), and whatever the machine running the tests has in its own environment cannot leak in.
 */
final class FakeEnvApp {

    private FakeEnvApp() {
    }

    static ConfigurableApplicationContext start(Map<String, Object> env, String... args) {
        return start(WebApplicationType.SERVLET, env, args);
    }

    static ConfigurableApplicationContext start(WebApplicationType type, Map<String, Object> env, String... args) {
        StandardEnvironment environment = new StandardEnvironment();
        environment.getPropertySources().replace(StandardEnvironment.SYSTEM_ENVIRONMENT_PROPERTY_SOURCE_NAME,
                new SystemEnvironmentPropertySource(StandardEnvironment.SYSTEM_ENVIRONMENT_PROPERTY_SOURCE_NAME, env));
        return new SpringApplicationBuilder(SampleServerApplication.class)
                .web(type)
                .environment(environment)
                .run(args);
    }
}
