package io.orbite.engine.batch;

import io.orbite.engine.batch.BatchLease.State;
import io.orbite.engine.testkit.StateTypes;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;

/**
 * A batch lease's one state: LEASED → FREED → RETIRED, forward only; a new allocation is a new
 * lease.
 */
class BatchLeaseStateTest {
  @Test
  void everyPairOfStatesAndRacingMovers() throws Exception {
    StateTypes.everyPair(
        State.class,
        Set.of(
            List.of(State.LEASED, State.FREED),
            List.of(State.LEASED, State.RETIRED),
            List.of(State.FREED, State.RETIRED)));
    StateTypes.racing(State.class, List.of(State.FREED, State.RETIRED), Set.of(State.RETIRED));
  }
}
