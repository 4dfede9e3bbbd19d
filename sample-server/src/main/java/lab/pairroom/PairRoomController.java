package lab.pairroom;

import java.util.List;
import java.util.Map;

import org.springframework.context.annotation.Profile;
import org.springframework.http.HttpStatus;
import org.springframework.http.MediaType;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.PatchMapping;
import org.springframework.web.bind.annotation.PathVariable;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RequestBody;
import org.springframework.web.bind.annotation.ResponseStatus;
import org.springframework.web.bind.annotation.RestController;
import org.springframework.web.servlet.mvc.method.annotation.SseEmitter;

/** The pair-room API, in the article's shapes (the Coding Duo service's paths). */
@RestController
@Profile(PairRoomConfig.PROFILE)
public class PairRoomController {

    record NewRoom(String navigator, String driver) {
    }

    record RoomView(String accessCode, String status, String navigator, String driver) {
    }

    record NewStatus(String status) {
    }

    record NewTodo(String content) {
    }

    record NewLink(String url, String categoryName) {
    }

    record NewCategory(String value) {
    }

    record TimerView(long durationMs, long remainingMs, boolean active) {
    }

    private final PairRoomService service;
    private final RoomEvents events;

    PairRoomController(PairRoomService service, RoomEvents events) {
        this.service = service;
        this.events = events;
    }

    @PostMapping("/api/pair-room")
    @ResponseStatus(HttpStatus.CREATED)
    Map<String, String> createRoom(@RequestBody NewRoom body) {
        return Map.of("accessCode", service.createRoom(body.navigator(), body.driver()).getAccessCode());
    }

    @GetMapping("/api/pair-room/{accessCode}")
    RoomView room(@PathVariable String accessCode) {
        PairRoom room = service.room(accessCode);
        return new RoomView(room.getAccessCode(), room.getStatus(), room.getNavigator(), room.getDriver());
    }

    @PatchMapping("/api/pair-room/{accessCode}/status")
    @ResponseStatus(HttpStatus.NO_CONTENT)
    void changeStatus(@PathVariable String accessCode, @RequestBody NewStatus body) {
        service.changeStatus(accessCode, body.status());
    }

    @PostMapping("/api/{accessCode}/todos")
    @ResponseStatus(HttpStatus.CREATED)
    Map<String, Long> createTodo(@PathVariable String accessCode, @RequestBody NewTodo body) {
        return Map.of("id", service.createTodo(accessCode, body.content()).getId());
    }

    @GetMapping("/api/{accessCode}/todos")
    List<Todo> todos(@PathVariable String accessCode) {
        return service.todos(accessCode);
    }

    @PostMapping("/api/{accessCode}/reference-link")
    @ResponseStatus(HttpStatus.CREATED)
    Map<String, Long> createLink(@PathVariable String accessCode, @RequestBody NewLink body) {
        return Map.of("id", service.createLink(accessCode, body.url(), body.categoryName()).getId());
    }

    @GetMapping("/api/{accessCode}/reference-link")
    List<ReferenceLink> links(@PathVariable String accessCode) {
        return service.links(accessCode);
    }

    @PostMapping("/api/{accessCode}/category")
    @ResponseStatus(HttpStatus.CREATED)
    Map<String, Long> createCategory(@PathVariable String accessCode, @RequestBody NewCategory body) {
        return Map.of("id", service.createCategory(accessCode, body.value()).getId());
    }

    @GetMapping("/api/{accessCode}/category")
    List<Category> categories(@PathVariable String accessCode) {
        return service.categories(accessCode);
    }

    @GetMapping("/api/{accessCode}/timer")
    TimerView timer(@PathVariable String accessCode) {
        RoomTimer timer = service.timer(accessCode);
        return new TimerView(timer.getDurationMs(), timer.getRemainingMs(), timer.isActive());
    }

    @PatchMapping("/api/{accessCode}/timer/start")
    @ResponseStatus(HttpStatus.NO_CONTENT)
    void startTimer(@PathVariable String accessCode) {
        service.runTimer(accessCode, true);
    }

    @PatchMapping("/api/{accessCode}/timer/stop")
    @ResponseStatus(HttpStatus.NO_CONTENT)
    void stopTimer(@PathVariable String accessCode) {
        service.runTimer(accessCode, false);
    }

    /** The room's event stream: the room is looked up first, as a real subscribe endpoint does. */
    @GetMapping(path = "/api/{accessCode}/connect", produces = MediaType.TEXT_EVENT_STREAM_VALUE)
    SseEmitter connect(@PathVariable String accessCode) {
        return events.open(service.room(accessCode));
    }
}
