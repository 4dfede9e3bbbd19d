package lab.pairroom;

import jakarta.persistence.Column;
import jakarta.persistence.Entity;
import jakarta.persistence.GeneratedValue;
import jakarta.persistence.GenerationType;
import jakarta.persistence.Id;

/** A room's category of reference links. */
@Entity
public class Category {

    @Id
    @GeneratedValue(strategy = GenerationType.IDENTITY)
    private Long id;

    @Column(name = "pair_room_id", nullable = false)
    private Long pairRoomId;

    private String name;

    protected Category() {
    }

    Category(Long pairRoomId, String name) {
        this.pairRoomId = pairRoomId;
        this.name = name;
    }

    public Long getId() {
        return id;
    }

    public String getName() {
        return name;
    }
}
