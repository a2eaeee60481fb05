package io.orbite.engine.spi;

import io.orbite.engine.SegmentDescriptor;
import io.orbite.engine.Transport;

/**
 * The requester-side data plane to one peer incarnation, owned by a transport's endpoint actor.
 * Thread-safe; the engine calls it from submitting threads (several at once). It never blocks on
 * I/O.
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

  /**
   * {@link #dispatch} for the only task of a submission. A transport may run it on the calling
   * thread, now, when that is cheaper than a hand-off (a small copy to an idle lane), delivering
   * its receipt before this returns; it must hold the same lock its lane holds while it touches the
   * task's memory, so that a drain or fence of the lane waits for it.
   *
   * @return how many receipts the task will produce
   */
  default int dispatchAlone(TaskWork work) {
    return dispatch(work);
  }

  /**
   * {@link #dispatch} for a run of tasks of one submission, all for this channel: {@code work[k]}
   * for {@code from <= k < to}, each non-null. Each task's receipt count goes to {@code owed[k]} as
   * soon as the task is accepted, so that if this throws part-way, the tasks whose {@code owed[k]}
   * was left alone are known not to have been accepted. A transport that can take a run under one
   * lock, with one hand-off to each lane, overrides this; the default takes them one by one.
   */
  default void dispatchRun(TaskWork[] work, int from, int to, int[] owed) {
    for (int k = from; k < to; k++) {
      owed[k] = dispatch(work[k]);
    }
  }

  /**
   * How many bytes one physical transfer of this channel may carry when the engine merges adjacent
   * tasks of a submission into it (request merging): the least of this side's and the peer's
   * advertised limits. 0, the default, means this channel never takes merged work.
   *
   * @return the limit in bytes, or 0
   */
  default long mergeLimitBytes() {
    return 0;
  }

  /** Wakes lanes after a run of {@link #dispatch} calls. */
  void flush();

  /**
   * The channel's state: whether it takes work and, when not, the one error kind its refusals carry
   * (C18). Every channel has exactly one, and keeps no flag of its own beside it.
   *
   * @return the gate
   */
  ChannelGate gate();

  /**
   * Whether a request that lets the engine choose (UNSPEC) should run here now: the channel is
   * active and, for a transport with rails, at least one rail pair to the peer is healthy (C13).
   * Only looks; it never arms a trial.
   */
  default boolean healthy() {
    return gate().active();
  }

  /**
   * Why a task restricted to {@code mask} cannot be taken by this channel now, or null when it can:
   * the routing step asks before it chooses the channel for a task whose policy rule has a mask for
   * this transport ({@code policies[i].choose.laneMask} for TCP, {@code railMask} for RDMA). Bit
   * {@code i} stands for the channel's lane or rail {@code i}. A transport without lanes or rails
   * to choose among takes any mask (the default). Only looks, as {@link #healthy} does.
   *
   * @param mask the lanes or rails the task may use; never 0
   * @return a sentence for the refusal (after the mask's path: "names none of the 2 lanes ..."), or
   *     null
   */
  default String maskRefusal(long mask) {
    return null;
  }

  /**
   * Fences the channel: a newer incarnation answers at the peer's endpoint. No new work is
   * accepted, queued work fails EPOCH_MISMATCH unsent, and the transport drains and retires the
   * endpoint. Idempotent.
   *
   * @param newerEpoch the epoch learned, or 0 when only "not this one" is known
   * @param reason why, for messages
   */
  void fence(long newerEpoch, String reason);
}
