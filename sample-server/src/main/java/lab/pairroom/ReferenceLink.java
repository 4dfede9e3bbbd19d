package lab.pairroom;

import java.time.LocalDateTime;

import jakarta.persistence.Column;
import jakarta.persistence.Entity;
import jakarta.persistence.GeneratedValue;
import jakarta.persistence.GenerationType;
import jakarta.persistence.Id;
import jakarta.persistence.Table;

/** A link a pair keeps in its room, optionally in a category. */
@Entity
@Table(name = "reference_link")
public class ReferenceLink {

    @Id
    @GeneratedValue(strategy = GenerationType.IDENTITY)
    private Long id;

    @Column(name = "pair_room_id", nullable = false)
    private Long pairRoomId;

    @Column(name = "category_id")
    private Long categoryId;

    private String url;

    @Column(name = "created_at")
    private LocalDateTime createdAt;

    protected ReferenceLink() {
    }

    ReferenceLink(Long pairRoomId, Long categoryId, String url) {
        this.pairRoomId = pairRoomId;
        this.categoryId = categoryId;
        this.url = url;
        this.createdAt = LocalDateTime.now();
    }

    public Long getId() {
        return id;
    }

    public Long getCategoryId() {
        return categoryId;
    }

    public String getUrl() {
        return url;
    }
}
