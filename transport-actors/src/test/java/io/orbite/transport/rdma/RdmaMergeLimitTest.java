package io.orbite.transport.rdma;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.orbite.config.MergeConfig;
import io.orbite.engine.wire.TransferLimits;
import org.junit.jupiter.api.Test;

/**
 * How far an RDMA channel merges ({@link RdmaLink#mergeLimit}): the least of {@code
 * merge.maxBytes}, the peer's Describe-advertised merge limit, this side's {@code
 * rdma.maxDirectBytes} and the largest task the peer reserves (its RAILS), so that merging never
 * makes a task the channel refuses as oversized; 0 with merging off.
 */
class RdmaMergeLimitTest {
  private static final RdmaWire.Limits RAILS = new RdmaWire.Limits(64L << 20, 64);

  @Test
  void theLeastOfMergeMaxBytesThePeersLimitsAndTheDirectBudget() {
    MergeConfig defaults = MergeConfig.defaults();
    TransferLimits peer = new TransferLimits(16 << 20, 1 << 20);
    assertEquals(1 << 20, RdmaLink.mergeLimit(defaults, peer, RAILS, 64L << 20));
    assertEquals(1 << 20, RdmaLink.mergeLimit(defaults, null, RAILS, 64L << 20));
    assertEquals(
        131_072,
        RdmaLink.mergeLimit(defaults, new TransferLimits(4096, 131_072), RAILS, 64L << 20));
    assertEquals(
        65_536, RdmaLink.mergeLimit(defaults, peer, new RdmaWire.Limits(65_536, 64), 64L << 20));
    assertEquals(262_144, RdmaLink.mergeLimit(defaults, peer, RAILS, 262_144));
    assertEquals(8192, RdmaLink.mergeLimit(defaults.withMaxBytes(8192), peer, RAILS, 64L << 20));
  }

  @Test
  void mergingOffIsZero() {
    MergeConfig off = MergeConfig.defaults().withEnabled(false);
    assertEquals(
        0, RdmaLink.mergeLimit(off, new TransferLimits(16 << 20, 1 << 20), RAILS, 64L << 20));
    assertEquals(0, RdmaLink.mergeLimit(off, null, RAILS, 64L << 20));
  }
}
