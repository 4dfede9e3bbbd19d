package lab.pairroom;

import java.util.List;
import java.util.Optional;

import org.springframework.data.jpa.repository.JpaRepository;

public interface CategoryRepository extends JpaRepository<Category, Long> {

    List<Category> findByPairRoomId(Long pairRoomId);

    Optional<Category> findFirstByPairRoomIdAndName(Long pairRoomId, String name);
}
