package lab.pairroom;

import java.util.List;
import java.util.UUID;

import org.springframework.context.annotation.Profile;
import org.springframework.http.HttpStatus;
import org.springframework.stereotype.Service;
import org.springframework.transaction.annotation.Transactional;
import org.springframework.web.server.ResponseStatusException;

/** What the pair-room API does, one transaction per call, rooms found by their access code. */
@Service
@Profile(PairRoomConfig.PROFILE)
@Transactional
public class PairRoomService {

    private final PairRoomRepository rooms;
    private final TodoRepository todos;
    private final CategoryRepository categories;
    private final ReferenceLinkRepository links;
    private final RoomTimerRepository timers;

    PairRoomService(PairRoomRepository rooms, TodoRepository todos, CategoryRepository categories,
            ReferenceLinkRepository links, RoomTimerRepository timers) {
        this.rooms = rooms;
        this.todos = todos;
        this.categories = categories;
        this.links = links;
        this.timers = timers;
    }

    /** A new room and its timer; generated rooms are R1, R2, ..., so new codes start with N. */
    public PairRoom createRoom(String navigator, String driver) {
        String code = "N" + UUID.randomUUID().toString().replace("-", "").substring(0, 16);
        PairRoom room = rooms.save(new PairRoom(code, navigator, driver));
        timers.save(new RoomTimer(room.getId()));
        return room;
    }

    @Transactional(readOnly = true)
    public PairRoom room(String accessCode) {
        return rooms.findByAccessCode(accessCode)
                .orElseThrow(() -> new ResponseStatusException(HttpStatus.NOT_FOUND, "no room " + accessCode));
    }

    public void changeStatus(String accessCode, String status) {
        room(accessCode).changeStatus(status);
    }

    public Todo createTodo(String accessCode, String content) {
        PairRoom room = room(accessCode);
        int next = (int) todos.countByPairRoomId(room.getId()) + 1;
        return todos.save(new Todo(room.getId(), content, next));
    }

    @Transactional(readOnly = true)
    public List<Todo> todos(String accessCode) {
        return todos.findByPairRoomIdOrderBySortOrderAscIdAsc(room(accessCode).getId());
    }

    public Category createCategory(String accessCode, String name) {
        return categories.save(new Category(room(accessCode).getId(), name));
    }

    @Transactional(readOnly = true)
    public List<Category> categories(String accessCode) {
        return categories.findByPairRoomId(room(accessCode).getId());
    }

    public ReferenceLink createLink(String accessCode, String url, String categoryName) {
        Long roomId = room(accessCode).getId();
        Long categoryId = categoryName == null ? null
                : categories.findFirstByPairRoomIdAndName(roomId, categoryName)
                        .orElseGet(() -> categories.save(new Category(roomId, categoryName))).getId();
        return links.save(new ReferenceLink(roomId, categoryId, url));
    }

    @Transactional(readOnly = true)
    public List<ReferenceLink> links(String accessCode) {
        return links.findByPairRoomId(room(accessCode).getId());
    }

    @Transactional(readOnly = true)
    public RoomTimer timer(String accessCode) {
        return timers.findByPairRoomId(room(accessCode).getId())
                .orElseThrow(() -> new ResponseStatusException(HttpStatus.NOT_FOUND, "no timer in " + accessCode));
    }

    public void runTimer(String accessCode, boolean active) {
        timer(accessCode).setActive(active);
    }
}
