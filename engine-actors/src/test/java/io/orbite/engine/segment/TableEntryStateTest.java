package io.orbite.engine.segment;

import io.orbite.engine.segment.TableEntry.State;
import io.orbite.engine.testkit.StateTypes;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;

/** A segment-table entry's one state: ACTIVE → SUPERSEDED → RECLAIMED, forward only. */
class TableEntryStateTest {
  @Test
  void everyPairOfStatesAndRacingMovers() throws Exception {
    StateTypes.everyPair(
        State.class,
        Set.of(
            List.of(State.ACTIVE, State.SUPERSEDED),
            List.of(State.ACTIVE, State.RECLAIMED),
            List.of(State.SUPERSEDED, State.RECLAIMED)));
    StateTypes.racing(
        State.class, List.of(State.SUPERSEDED, State.RECLAIMED), Set.of(State.RECLAIMED));
  }
}
