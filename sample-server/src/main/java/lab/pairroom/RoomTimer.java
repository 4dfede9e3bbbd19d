package lab.pairroom;

import jakarta.persistence.Column;
import jakarta.persistence.Entity;
import jakarta.persistence.GeneratedValue;
import jakarta.persistence.GenerationType;
import jakarta.persistence.Id;
import jakarta.persistence.Table;

/** A room's pair-switch timer: one per room. */
@Entity
@Table(name = "timer")
public class RoomTimer {

    static final long DEFAULT_DURATION_MS = 600_000;

    @Id
    @GeneratedValue(strategy = GenerationType.IDENTITY)
    private Long id;

    @Column(name = "pair_room_id", nullable = false, unique = true)
    private Long pairRoomId;

    @Column(name = "duration_ms")
    private long durationMs;

    @Column(name = "remaining_ms")
    private long remainingMs;

    @Column(name = "is_active")
    private boolean active;

    protected RoomTimer() {
    }

    RoomTimer(Long pairRoomId) {
        this.pairRoomId = pairRoomId;
        this.durationMs = DEFAULT_DURATION_MS;
        this.remainingMs = DEFAULT_DURATION_MS;
    }

    void setActive(boolean active) {
        this.active = active;
    }

    public long getDurationMs() {
        return durationMs;
    }

    public long getRemainingMs() {
        return remainingMs;
    }

    public boolean isActive() {
        return active;
    }
}
