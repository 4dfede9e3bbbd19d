package lab.pairroom;

import java.io.IOException;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;

import org.springframework.beans.factory.annotation.Value;
import org.springframework.context.annotation.Profile;
import org.springframework.stereotype.Component;
import org.springframework.web.servlet.mvc.method.annotation.SseEmitter;

/**
 * A room's event stream: one `connected` event, then held open for SSE_TIMEOUT_MS and completed normally (a client
 * that waits gets a 200 with a finite body). The request stays asynchronous all that time, which is the point of
 * chapter 5: with open-in-view on, the EntityManager opened for it keeps its pool connection until it completes.
 */
@Component
@Profile(PairRoomConfig.PROFILE)
public class RoomEvents {

    private final long holdMs;
    private final ScheduledExecutorService closer = Executors.newSingleThreadScheduledExecutor(runnable -> {
        Thread thread = new Thread(runnable, "room-events-closer");
        thread.setDaemon(true);
        return thread;
    });

    RoomEvents(@Value("${SSE_TIMEOUT_MS:30000}") long holdMs) {
        this.holdMs = holdMs;
    }

    SseEmitter open(PairRoom room) {
        // Spring's own timeout a little later than ours, so the stream ends by our completion, never by an error.
        SseEmitter emitter = new SseEmitter(holdMs + 5_000);
        try {
            emitter.send(SseEmitter.event().name("connected").data(room.getAccessCode()));
        } catch (IOException gone) {
            emitter.completeWithError(gone);
            return emitter;
        }
        closer.schedule(emitter::complete, holdMs, TimeUnit.MILLISECONDS);
        return emitter;
    }
}
