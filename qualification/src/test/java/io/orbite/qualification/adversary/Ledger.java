package io.orbite.qualification.adversary;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.Predicate;

/**
 * What an adversarial peer saw and did, kept by the peer itself: every HELLO, every data frame read
 * off a lane, every byte range of a WRITE put into its region, every answer and every late send.
 * Tests judge the engine's reports against this record instead of the engine's own flags. Shared by
 * the incarnations of one peer (a restart keeps the ledger), thread-safe.
 */
final class Ledger {
  /** A HELLO as received, and the status it was answered with. */
  record Hello(
      int incarnation,
      int connection,
      long namedEpoch,
      long requesterEpoch,
      long laneIndex,
      int status) {}

  /** A data frame as read off a lane ({@code connection} is unique per accepted socket). */
  record Received(int incarnation, int connection, long laneIndex, Wire.Header header) {
    long end() {
      return header.offset() + header.count();
    }
  }

  /** Bytes {@code [offset, offset + length)} of a WRITE put into the peer's region. */
  record Applied(int incarnation, int connection, long requestId, long offset, long length) {}

  /**
   * A response written to a lane: its status, the epoch it named and how many payload bytes went
   * out.
   */
  record Answered(
      int incarnation,
      int connection,
      long requestId,
      Wire.Type type,
      int status,
      long epoch,
      long payloadBytes) {}

  /**
   * A response sent after the test released it: whether the requester had already closed the lane
   * (end of stream or reset seen before sending), how many bytes the socket took, and the error, if
   * writing failed.
   */
  record LateSend(
      int connection, long requestId, boolean peerClosedFirst, long bytesWritten, String error) {}

  /**
   * A NOTIFY as read off a notification connection, and whether the peer answered it (false: the
   * connection was reset instead, as its script said).
   */
  record Notified(
      int incarnation,
      int connection,
      long sequence,
      long namedEpoch,
      long senderEpoch,
      Wire.Notify frame,
      boolean answered) {}

  /** How a lane ended, as the peer saw it. */
  record LaneEnd(int incarnation, int connection, String how) {}

  private final List<Hello> hellos = new CopyOnWriteArrayList<>();
  private final List<Received> received = new CopyOnWriteArrayList<>();
  private final List<Applied> applied = new CopyOnWriteArrayList<>();
  private final List<Answered> answered = new CopyOnWriteArrayList<>();
  private final List<LateSend> lateSends = new CopyOnWriteArrayList<>();
  private final List<LaneEnd> laneEnds = new CopyOnWriteArrayList<>();
  private final List<Notified> notified = new CopyOnWriteArrayList<>();
  private final List<Throwable> problems = new CopyOnWriteArrayList<>();

  void hello(Hello h) {
    hellos.add(h);
  }

  void received(Received r) {
    received.add(r);
  }

  void applied(Applied a) {
    applied.add(a);
  }

  void answered(Answered a) {
    answered.add(a);
  }

  void lateSend(LateSend s) {
    lateSends.add(s);
  }

  void notified(Notified n) {
    notified.add(n);
  }

  List<Notified> notified() {
    return List.copyOf(notified);
  }

  void laneEnded(LaneEnd e) {
    laneEnds.add(e);
  }

  void problem(Throwable t) {
    problems.add(t);
  }

  List<Hello> hellos() {
    return List.copyOf(hellos);
  }

  List<Received> received() {
    return List.copyOf(received);
  }

  List<Received> received(Wire.Type type) {
    return received.stream().filter(r -> r.header().type() == type).toList();
  }

  List<Applied> applied() {
    return List.copyOf(applied);
  }

  List<Answered> answered() {
    return List.copyOf(answered);
  }

  List<LateSend> lateSends() {
    return List.copyOf(lateSends);
  }

  List<LaneEnd> laneEnds() {
    return List.copyOf(laneEnds);
  }

  /** Failures of the peer's own code: a test that sees any of these is broken, not the engine. */
  List<Throwable> problems() {
    return List.copyOf(problems);
  }

  /** WRITE frames received whose remote range overlaps {@code [offset, offset + length)}. */
  List<Received> writesInto(long offset, long length) {
    return received(Wire.Type.WRITE_REQUEST).stream()
        .filter(r -> r.header().offset() < offset + length && offset < r.end())
        .toList();
  }

  /** Bytes applied into {@code [offset, offset + length)}, counting a byte applied twice twice. */
  long bytesAppliedInto(long offset, long length) {
    long n = 0;
    for (Applied a : applied) {
      long lo = Math.max(offset, a.offset());
      long hi = Math.min(offset + length, a.offset() + a.length());
      n += Math.max(0, hi - lo);
    }
    return n;
  }

  /** Whether any WRITE was acknowledged with status 0 for a frame covering part of the range. */
  boolean ackedInto(long offset, long length) {
    for (Answered a : answered) {
      if (a.type() == Wire.Type.WRITE_ACK && a.status() == Wire.OK) {
        for (Received r : received) {
          if (r.connection() == a.connection()
              && r.header().requestId() == a.requestId()
              && r.header().type() == Wire.Type.WRITE_REQUEST
              && r.header().offset() < offset + length
              && offset < r.end()) {
            return true;
          }
        }
      }
    }
    return false;
  }

  /**
   * The first WRITE range that reached this peer twice (the same region, offset and count, on any
   * lane or incarnation), or {@code null}: a replay of a WRITE, whether or not it was applied.
   */
  String firstReplayedWrite() {
    Map<List<Long>, List<Received>> seen = new HashMap<>();
    for (Received r : received(Wire.Type.WRITE_REQUEST)) {
      Wire.Header h = r.header();
      seen.computeIfAbsent(List.of(h.regionId(), h.offset(), h.count()), k -> new ArrayList<>())
          .add(r);
    }
    for (List<Received> same : seen.values()) {
      if (same.size() > 1) {
        return "WRITE of region "
            + same.getFirst().header().regionId()
            + " ["
            + same.getFirst().header().offset()
            + ", +"
            + same.getFirst().header().count()
            + ") reached the peer "
            + same.size()
            + " times: "
            + same;
      }
    }
    return null;
  }

  /** The first byte of the region that was written more than once, described, or {@code null}. */
  String firstByteAppliedTwice() {
    List<Applied> sorted = new ArrayList<>(applied);
    sorted.sort(Comparator.comparingLong(Applied::offset));
    for (int i = 1; i < sorted.size(); i++) {
      Applied prev = sorted.get(i - 1);
      Applied next = sorted.get(i);
      if (next.offset() < prev.offset() + prev.length()) {
        return "bytes from " + next.offset() + " applied twice: " + prev + " and " + next;
      }
    }
    return null;
  }

  /** Distinct connections that carried a data frame matching {@code which}. */
  long lanesCarrying(Predicate<Received> which) {
    return received.stream().filter(which).mapToInt(Received::connection).distinct().count();
  }

  /** Everything recorded for WRITE frames into the range, for failure messages. */
  String historyOf(long offset, long length) {
    StringBuilder b = new StringBuilder();
    for (Received r : writesInto(offset, length)) {
      b.append("\n  received ").append(r);
      for (Answered a : answered) {
        if (a.connection() == r.connection() && a.requestId() == r.header().requestId()) {
          b.append("\n  answered ").append(a);
        }
      }
      for (Applied a : applied) {
        if (a.connection() == r.connection() && a.requestId() == r.header().requestId()) {
          b.append("\n  applied ").append(a);
        }
      }
    }
    return b.toString();
  }

  @Override
  public String toString() {
    return "Ledger{hellos="
        + hellos.size()
        + ", received="
        + received.size()
        + ", applied="
        + applied.size()
        + ", answered="
        + answered.size()
        + ", lateSends="
        + lateSends
        + ", laneEnds="
        + laneEnds
        + ", problems="
        + problems
        + "}";
  }
}
