package io.orbite.engine.spi;

import io.orbite.engine.SegmentDescriptor;
import io.orbite.engine.Transport;

/**
 * The requester-side data plane to one peer incarnation, owned by a transport's endpoint actor.
 * Thread-safe; the engine calls it from batch actors. It never blocks on I/O.
 */
public interface PeerChannel {
  SegmentDescriptor peer();

  Transport transport();

  /**
   * Plans {@code work} into frames and queues them on lanes.
   *
   * @return how many receipts the task will produce (one per frame)
   */
  int dispatch(TaskWork work);

  /** Wakes lanes after a run of {@link #dispatch} calls. */
  void flush();

  /** Whether the channel still accepts work (its endpoint is active). */
  boolean active();
}
