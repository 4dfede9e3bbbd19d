package lab.pairroom;

import jakarta.persistence.Column;
import jakarta.persistence.Entity;
import jakarta.persistence.GeneratedValue;
import jakarta.persistence.GenerationType;
import jakarta.persistence.Id;

/** A room's to-do item. */
@Entity
public class Todo {

    @Id
    @GeneratedValue(strategy = GenerationType.IDENTITY)
    private Long id;

    @Column(name = "pair_room_id", nullable = false)
    private Long pairRoomId;

    private String content;

    @Column(name = "is_checked")
    private boolean checked;

    @Column(name = "sort_order")
    private int sortOrder;

    protected Todo() {
    }

    Todo(Long pairRoomId, String content, int sortOrder) {
        this.pairRoomId = pairRoomId;
        this.content = content;
        this.sortOrder = sortOrder;
    }

    public Long getId() {
        return id;
    }

    public String getContent() {
        return content;
    }

    public boolean isChecked() {
        return checked;
    }

    public int getSortOrder() {
        return sortOrder;
    }
}
