package io.orbite.engine.testkit;

import io.orbite.engine.SegmentDescriptor;
import io.orbite.engine.Transport;
import io.orbite.engine.spi.ChannelGate;
import io.orbite.engine.spi.PeerChannel;
import io.orbite.engine.spi.TaskWork;

/**
 * A peer channel that is its gate and nothing else, for the tests of the actors that open, fence
 * and close channels: the test sets its state through the gate and reads it back; no task is ever
 * dispatched to it.
 */
public final class GateChannel implements PeerChannel {
  private final SegmentDescriptor peer;
  private final Transport transport;
  private final ChannelGate gate;

  /**
   * An active channel to {@code peer}, labelled {@code the fake <transport> channel to <peer>}.
   *
   * @param peer its peer incarnation
   * @param transport the transport it stands for
   */
  public GateChannel(SegmentDescriptor peer, Transport transport) {
    this.peer = peer;
    this.transport = transport;
    this.gate = new ChannelGate("the fake " + transport + " channel to " + peer);
  }

  /**
   * Why it was fenced.
   *
   * @return the fence's reason, or null while it is not fenced
   */
  public String fencedBecause() {
    return gate.state() instanceof ChannelGate.Fenced f ? f.reason() : null;
  }

  @Override
  public SegmentDescriptor peer() {
    return peer;
  }

  @Override
  public Transport transport() {
    return transport;
  }

  @Override
  public int dispatch(TaskWork work) {
    throw new AssertionError("no task is dispatched in this test");
  }

  @Override
  public void flush() {}

  @Override
  public ChannelGate gate() {
    return gate;
  }

  @Override
  public void fence(long newerEpoch, String reason) {
    gate.fence(newerEpoch, reason);
  }
}
