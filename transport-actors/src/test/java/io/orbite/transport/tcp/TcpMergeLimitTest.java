package io.orbite.transport.tcp;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.orbite.config.EngineConfig;
import io.orbite.config.MergeConfig;
import io.orbite.config.TcpConfig;
import io.orbite.engine.wire.TransferLimits;
import org.junit.jupiter.api.Test;

/**
 * How far a TCP channel merges ({@link TcpLink#mergeLimit}) and the frame limit it cuts to: the
 * least of {@code merge.maxBytes}, one frame (its own and the peer's advertised limit) and the
 * peer's advertised merge limit; 0 with merging off; an older peer's missing limits leave this
 * side's own.
 */
class TcpMergeLimitTest {
  private static EngineConfig config(boolean merge, long mergeBytes, int frameBytes) {
    return EngineConfig.defaults()
        .withMerge(new MergeConfig(merge, mergeBytes))
        .withTcp(TcpConfig.defaults().withMaxFramePayloadBytes(frameBytes));
  }

  @Test
  void theLeastOfThisSidesMergeAndFrameLimitsAndThePeersAdvertisedOnes() {
    EngineConfig defaults = EngineConfig.defaults();
    TransferLimits peerDefaults = new TransferLimits(16 << 20, 1 << 20);
    assertEquals(1 << 20, TcpLink.mergeLimit(defaults, peerDefaults));
    assertEquals(4096, TcpLink.mergeLimit(defaults, new TransferLimits(4096, 1 << 20)));
    assertEquals(65_536, TcpLink.mergeLimit(defaults, new TransferLimits(16 << 20, 65_536)));
    assertEquals(8192, TcpLink.mergeLimit(config(true, 1 << 20, 8192), peerDefaults));
    assertEquals(12_288, TcpLink.mergeLimit(config(true, 12_288, 16 << 20), peerDefaults));
  }

  @Test
  void mergingOffIsZeroWhateverTheLimits() {
    assertEquals(
        0,
        TcpLink.mergeLimit(config(false, 1 << 20, 16 << 20), new TransferLimits(1 << 30, 1 << 30)));
    assertEquals(0, TcpLink.mergeLimit(config(false, 1 << 20, 16 << 20), null));
  }

  @Test
  void aPeerThatAdvertisedNothingLeavesThisSidesLimits() {
    assertEquals(1 << 20, TcpLink.mergeLimit(EngineConfig.defaults(), null));
    assertEquals(4096, TcpLink.mergeLimit(config(true, 1 << 20, 4096), null));
    assertEquals(16 << 20, TransferLimits.framePayloadTowards(16 << 20, null));
    assertEquals(
        4096, TransferLimits.framePayloadTowards(16 << 20, new TransferLimits(4096, 1 << 20)));
    assertEquals(
        8192, TransferLimits.framePayloadTowards(8192, new TransferLimits(1 << 20, 1 << 20)));
  }
}
