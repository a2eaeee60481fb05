package io.orbite.qualification.adversary;

import java.util.concurrent.CountDownLatch;

/**
 * How an {@link AdversarialSource} answers each data frame. It is asked once per frame, on the
 * lane's own thread, after the header is read and before any WRITE payload is; frames of one lane
 * are answered in order, as the engine's source does, so holding one answer holds the lane.
 */
@FunctionalInterface
interface Script {
  Reply on(Request request);

  /** Every frame served as a correct source serves it. */
  Script SERVE = request -> new Reply.Serve();

  /**
   * One data frame.
   *
   * @param connection the accepted socket (unique for the peer's lifetime, across restarts)
   * @param laneIndex the lane index the requester's HELLO named
   * @param frameOnLane 0 for the first data frame on this connection, then 1, 2, ...
   * @param frameOverall 0 for the first data frame this peer (all incarnations) received, then 1,
   *     2, ...
   */
  record Request(
      int incarnation,
      int connection,
      long laneIndex,
      int frameOnLane,
      int frameOverall,
      Wire.Header header) {
    boolean read() {
      return header.type() == Wire.Type.READ_REQUEST;
    }

    boolean write() {
      return header.type() == Wire.Type.WRITE_REQUEST;
    }
  }

  /**
   * What to do with one frame. Requests the source would refuse (epoch, region, range) are refused
   * first.
   */
  sealed interface Reply {
    /** Serve it correctly: a READ's bytes from the region, a WRITE applied and acknowledged. */
    record Serve() implements Reply {}

    /**
     * READ: answer nothing until {@code release}, then send the whole response (a late send).
     * WRITE: apply the payload at once, hold the acknowledgement until {@code release}.
     */
    record Hold(CountDownLatch release) implements Reply {}

    /**
     * READ: send the header and the first {@code bytes} of the payload, then the rest after {@code
     * release}.
     */
    record Partial(long bytes, CountDownLatch release) implements Reply {}

    /** Never answer. A WRITE's payload is read and thrown away, not applied. */
    record Silent() implements Reply {}

    /** WRITE: apply the payload and never acknowledge it. */
    record DropAck() implements Reply {}

    /**
     * WRITE: apply the payload, read (and record, unapplied) whatever else the requester has
     * already sent on this lane, then reset the connection without an acknowledgement.
     */
    record ApplyThenReset() implements Reply {}

    /**
     * READ: send the header and the first {@code bytes} of the payload, then reset the connection.
     */
    record CutMidPayload(long bytes) implements Reply {}

    /** Serve it, but name {@code epoch} in the response header instead of this incarnation's. */
    record WrongEpoch(long epoch) implements Reply {}
  }

  /** A latch released once, to hold answers until the test lets them go. */
  static CountDownLatch gate() {
    return new CountDownLatch(1);
  }
}
