package lab.pairroom;

import java.util.List;

import org.springframework.data.jpa.repository.JpaRepository;

public interface TodoRepository extends JpaRepository<Todo, Long> {

    List<Todo> findByPairRoomIdOrderBySortOrderAscIdAsc(Long pairRoomId);

    long countByPairRoomId(Long pairRoomId);
}
