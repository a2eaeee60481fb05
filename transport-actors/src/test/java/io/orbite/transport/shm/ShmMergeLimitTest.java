package io.orbite.transport.shm;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.orbite.config.MergeConfig;
import io.orbite.engine.wire.TransferLimits;
import org.junit.jupiter.api.Test;

/**
 * How far an SHM channel merges ({@link ShmPeerChannel#mergeLimit}): the least of {@code
 * merge.maxBytes}, the peer's advertised merge limit and the part a run is dealt to one lane in
 * ({@link ShmPeerChannel#DEAL_BYTES}); 0 with merging off.
 */
class ShmMergeLimitTest {
  @Test
  void theLeastOfMergeMaxBytesThePeersAdvertisedLimitAndOneDealtPart() {
    MergeConfig defaults = MergeConfig.defaults();
    assertEquals(256 << 10, ShmPeerChannel.DEAL_BYTES);
    assertEquals(
        ShmPeerChannel.DEAL_BYTES,
        ShmPeerChannel.mergeLimit(defaults, new TransferLimits(16 << 20, 1 << 20)));
    assertEquals(ShmPeerChannel.DEAL_BYTES, ShmPeerChannel.mergeLimit(defaults, null));
    assertEquals(65_536, ShmPeerChannel.mergeLimit(defaults, new TransferLimits(16 << 20, 65_536)));
    assertEquals(
        16_384,
        ShmPeerChannel.mergeLimit(
            defaults.withMaxBytes(16_384), new TransferLimits(16 << 20, 1 << 20)));
    // The peer's TCP frame limit has nothing to do with a copy.
    assertEquals(
        ShmPeerChannel.DEAL_BYTES,
        ShmPeerChannel.mergeLimit(defaults, new TransferLimits(4096, 1 << 30)));
  }

  @Test
  void mergingOffIsZero() {
    MergeConfig off = MergeConfig.defaults().withEnabled(false);
    assertEquals(0, ShmPeerChannel.mergeLimit(off, new TransferLimits(16 << 20, 1 << 20)));
    assertEquals(0, ShmPeerChannel.mergeLimit(off, null));
  }
}
