package lab.pairroom;

import java.time.LocalDateTime;

import jakarta.persistence.Column;
import jakarta.persistence.Entity;
import jakarta.persistence.GeneratedValue;
import jakarta.persistence.GenerationType;
import jakarta.persistence.Id;
import jakarta.persistence.Table;

/** A pair-programming room, found by its access code. */
@Entity
@Table(name = "pair_room")
public class PairRoom {

    @Id
    @GeneratedValue(strategy = GenerationType.IDENTITY)
    private Long id;

    @Column(name = "access_code", nullable = false, unique = true)
    private String accessCode;

    private String status;
    private String navigator;
    private String driver;

    @Column(name = "created_at")
    private LocalDateTime createdAt;

    @Column(name = "updated_at")
    private LocalDateTime updatedAt;

    protected PairRoom() {
    }

    PairRoom(String accessCode, String navigator, String driver) {
        this.accessCode = accessCode;
        this.status = "READY";
        this.navigator = navigator;
        this.driver = driver;
        this.createdAt = LocalDateTime.now();
        this.updatedAt = this.createdAt;
    }

    void changeStatus(String status) {
        this.status = status;
        this.updatedAt = LocalDateTime.now();
    }

    public Long getId() {
        return id;
    }

    public String getAccessCode() {
        return accessCode;
    }

    public String getStatus() {
        return status;
    }

    public String getNavigator() {
        return navigator;
    }

    public String getDriver() {
        return driver;
    }
}
