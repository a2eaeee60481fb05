package io.orbite.transport.rdma;

import io.orbite.config.RdmaConfig;
import io.orbite.engine.SegmentDescriptor;
import io.orbite.engine.spi.Conduit;
import io.orbite.engine.spi.TransportContext;
import io.orbite.transport.tcp.Authority;
import java.nio.ByteBuffer;
import java.nio.channels.SocketChannel;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import org.slf4j.LoggerFactory;

/**
 * One engine's RDMA rails over the software provider, opened as the {@link RdmaTransport} opens
 * them ({@link RailOpener}: the devices of {@code rdma.*}, each rail's CQ lanes started), with what
 * its endpoints and source sessions share: for tests that drive a source session or an endpoint's
 * link by hand, without the transport's actors. {@link #close} stops the lanes and releases the
 * rails, reporting what could not be released.
 */
final class SoftRails implements AutoCloseable {
  final TransportContext context;
  final RdmaStack stack;

  /** {@code rdma.maxGrants} on the source side: parents reserved here at once. */
  final AtomicInteger grantsHeld = new AtomicInteger();

  private SoftRails(TransportContext context, RdmaStack stack) {
    this.context = context;
    this.stack = stack;
  }

  /** Opens the rails of {@code context}'s {@code rdma.*} and starts their lanes. */
  static SoftRails open(TransportContext context) {
    RdmaConfig config = context.config().rdma();
    RailOpener.Opened opened = new RailOpener(context).openRails();
    opened.rails().forEach(r -> r.lanes.forEach(CqLane::start));
    RdmaStack stack =
        new RdmaStack(
            opened.rails(),
            RailOpener.health(config),
            new RailSelector(
                opened.rails().stream().mapToDouble(Rail::gbps).toArray(), opened.policy()),
            new RdmaCounters(context.counters()),
            new DirectBytes(config.maxDirectBytes()),
            new DirectBytes("rdma.maxGrants", config.maxGrants()));
    return new SoftRails(context, stack);
  }

  List<Rail> rails() {
    return stack.rails();
  }

  /** The requester's end of an RDMA endpoint to {@code peer}, opened now (blocking). */
  RdmaLink connect(SegmentDescriptor peer) {
    return RdmaLink.open(peer, null, context, stack, () -> {});
  }

  /**
   * The source session of an accepted RDMA control connection whose HELLO was read into {@code
   * hello}, over these rails, as the transport makes it (not started, no owner yet).
   */
  SourceSession session(String name, SocketChannel accepted, ByteBuffer hello) {
    RdmaConfig config = context.config().rdma();
    return new SourceSession(
        name,
        Conduit.plain(accepted),
        hello,
        context.localEpoch(),
        0,
        java.util.concurrent.CompletableFuture.completedFuture(null),
        1,
        rails(),
        new Authority(context.registry(), context.localEpoch()),
        grantsHeld,
        config.maxGrants(),
        stack.direct(),
        stack.counters());
  }

  /** Stops every lane (after the QPs it is closing), then releases the rails. */
  @Override
  public void close() {
    List<String> failed = new ArrayList<>();
    for (Rail rail : rails()) {
      rail.lanes.forEach(CqLane::stop);
    }
    for (Rail rail : rails()) {
      for (CqLane lane : rail.lanes) {
        if (!lane.join(10_000)) {
          failed.add(lane.name() + " did not stop");
        }
      }
    }
    if (failed.isEmpty()) {
      for (Rail rail : rails()) {
        failed.addAll(rail.close());
      }
    }
    if (!failed.isEmpty()) {
      LoggerFactory.getLogger(SoftRails.class).info("not released: {}", failed);
    }
  }
}
