package lab.pairroom;

import java.util.Optional;

import org.springframework.data.jpa.repository.JpaRepository;

public interface PairRoomRepository extends JpaRepository<PairRoom, Long> {

    Optional<PairRoom> findByAccessCode(String accessCode);
}
