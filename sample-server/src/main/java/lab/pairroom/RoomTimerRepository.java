package lab.pairroom;

import java.util.Optional;

import org.springframework.data.jpa.repository.JpaRepository;

public interface RoomTimerRepository extends JpaRepository<RoomTimer, Long> {

    Optional<RoomTimer> findByPairRoomId(Long pairRoomId);
}
