package lab.netty;

import java.util.Map;

/**
 * The service's knobs, from environment variables (the lab's netty kind sets them from a step's spec), each checked
 * so a bad value stops the start with one line naming it.
 */
record Settings(String address, int port, int managementPort, int ioThreads, int executorThreads, int backlog) {

    static Settings fromEnv(Map<String, String> env) {
        int cpus = Runtime.getRuntime().availableProcessors();
        return new Settings(
                env.getOrDefault("NETTY_ADDRESS", "127.0.0.1"),
                number(env, "NETTY_PORT", 8280, 1),
                number(env, "NETTY_MANAGEMENT_PORT", 8281, 1),
                number(env, "NETTY_IO_THREADS", 2 * cpus, 1),  // RESTEasy's default: two event loops per CPU
                number(env, "NETTY_EXECUTOR_THREADS", 16, 1),  // RESTEasy's default pool for resource methods
                number(env, "NETTY_BACKLOG", 128, 1));  // RESTEasy's default SO_BACKLOG
    }

    private static int number(Map<String, String> env, String name, int fallback, int minimum) {
        String raw = env.get(name);
        if (raw == null || raw.isBlank()) {
            return fallback;
        }
        try {
            int value = Integer.parseInt(raw.trim());
            if (value >= minimum) {
                return value;
            }
        } catch (NumberFormatException ignored) {
            // reported below, with the variable's name
        }
        throw new IllegalArgumentException(name + " must be an integer >= " + minimum + ", got '" + raw + "'");
    }
}
