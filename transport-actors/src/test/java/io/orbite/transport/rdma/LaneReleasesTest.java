package io.orbite.transport.rdma;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.orbite.engine.SegmentDescriptor;
import io.orbite.engine.spi.ChannelGate;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * A lane pass's budget releases: held until the pass's end, then given back once, summed; and a
 * share added while they are given back (a task started by the release that fails at once on the
 * same lane) is given back in the same call, without disturbing the ones being given back.
 */
class LaneReleasesTest {
  private static final long SLICE = 64 * 1024;

  private final DirectBytes direct = new DirectBytes(4 * SLICE);
  private final ChannelBudget budget =
      new ChannelBudget(
          new SegmentDescriptor("127.0.0.1", 4000, 7),
          new ChannelGate("test channel"),
          new RdmaCounters(new io.orbite.engine.spi.EngineTally()),
          direct,
          new DirectBytes("rdma.maxGrants", 8),
          new RdmaWire.Limits(1L << 30, 8),
          (work, plan, policy) -> {});

  @Test
  void sharesAreHeldUntilTheEndOfThePassThenGivenBackOnce() {
    LaneReleases releases = new LaneReleases();
    for (int i = 0; i < 3; i++) {
      direct.tryCharge(SLICE);
      releases.bytes(budget, SLICE);
    }
    assertEquals(3 * SLICE, direct.usedBytes(), "nothing given back during the pass");
    releases.giveBack();
    assertEquals(0, direct.usedBytes(), "all three shares at the pass's end");
    releases.giveBack();
    assertEquals(0, direct.usedBytes(), "and once: a second end of pass gives nothing back");
  }

  @Test
  void aShareAddedByATaskTheReleaseStartedIsGivenBackInTheSameCall() {
    LaneReleases releases = new LaneReleases();
    List<String> log = new ArrayList<>();
    direct.tryCharge(4 * SLICE);
    releases.bytes(budget, SLICE);
    // A task waits for a slice's room; started by the release, it fails at once and gives its
    // charge back through the same lane's releases (a lane closing under it).
    direct.chargeOrWait(
        SLICE,
        this,
        () -> {
          log.add("started");
          releases.bytes(budget, SLICE);
        },
        why -> log.add("refused: " + why));
    assertEquals(4 * SLICE, direct.usedBytes());
    releases.giveBack();
    assertEquals(List.of("started"), log);
    assertEquals(
        3 * SLICE, direct.usedBytes(), "both shares back: the first and the started one's");
  }
}
