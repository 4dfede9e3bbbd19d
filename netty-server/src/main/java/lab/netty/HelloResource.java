package lab.netty;

import jakarta.ws.rs.GET;
import jakarta.ws.rs.Path;
import jakarta.ws.rs.Produces;
import jakarta.ws.rs.core.MediaType;
import java.util.concurrent.atomic.LongAdder;

/** The trivial JSON endpoint the chapter measures: no sleep, no work, so what it shows is the cost of getting there. */
@Path("/")
public class HelloResource {
    static final String BODY = "{\"message\":\"hello\"}";
    private final LongAdder requests = new LongAdder();

    @GET
    @Path("hello")
    @Produces(MediaType.APPLICATION_JSON)
    public String hello() {
        requests.increment();
        return BODY;
    }

    long requests() {
        return requests.sum();
    }
}
