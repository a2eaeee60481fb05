package io.orbite.engine.batch;

import io.orbite.engine.SegmentDescriptor;
import io.orbite.engine.Transport;
import io.orbite.engine.spi.ChannelGate;
import io.orbite.engine.spi.PeerChannel;

/**
 * A TCP channel to one fixed peer that is always active, never fenced and has nothing to flush: the
 * parts of {@link PeerChannel} a batch test's channel does not care about.
 */
abstract class QuietTcpChannel implements PeerChannel {
  @Override
  public SegmentDescriptor peer() {
    return new SegmentDescriptor("127.0.0.1", 4000, 0x5e1fL);
  }

  @Override
  public Transport transport() {
    return Transport.TCP;
  }

  @Override
  public void flush() {}

  private final ChannelGate gate = new ChannelGate("a quiet TCP channel");

  @Override
  public ChannelGate gate() {
    return gate;
  }

  @Override
  public void fence(long newerEpoch, String reason) {}
}
