package lab.pairroom;

import java.util.List;

import org.springframework.data.jpa.repository.JpaRepository;

public interface ReferenceLinkRepository extends JpaRepository<ReferenceLink, Long> {

    List<ReferenceLink> findByPairRoomId(Long pairRoomId);
}
