package io.orbite.qualification.policy;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.orbite.config.EngineConfig;
import io.orbite.engine.Access;
import io.orbite.engine.Batch;
import io.orbite.engine.BatchStatus;
import io.orbite.engine.Op;
import io.orbite.engine.RegisteredMemory;
import io.orbite.engine.RemoteEffect;
import io.orbite.engine.RemoteSegment;
import io.orbite.engine.Route;
import io.orbite.engine.TaskResult;
import io.orbite.engine.TransferEngine;
import io.orbite.engine.TransferRequest;
import io.orbite.engine.Transport;
import io.orbite.engine.fault.FaultHooks;
import io.orbite.engine.fault.FaultInjection;
import io.orbite.qualification.verify.Pattern;
import io.orbite.qualification.verify.RegionCheck;
import io.orbite.qualification.verify.Span;
import java.io.IOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/**
 * A policy rule's {@code choose.laneMask} between two engines over TCP with three lanes: the
 * requester's per-lane byte counters ({@code EngineCounters.laneBytes}, which count a frame's bytes
 * when its lane confirms it) prove that every task of a rule travelled on the lanes its mask names
 * and no other, while the same tasks without a rule spread over the lanes. Every byte of both
 * regions is checked, payload and guards. When a masked lane breaks, a READ on it is retried only
 * on another lane of its mask, or waits for its lane to reconnect while the other lanes work.
 */
class LaneMaskIT {
  private static final long REGION = 32L << 20;
  private static final long REMOTE_SEED = 0x5eed;
  private static final long LOCAL_GUARD = 0x6a;
  private static final long WRITE_SEED = 0x77;

  /** READs go on lane 1 only, WRITEs on lane 2 only; lane 0 carries nothing of theirs. */
  private static final String BY_OP =
      "{\"name\":\"%s\",\"tcp\":{\"lanes\":3},\"policies\":["
          + "{\"match\":{\"op\":\"READ\"},\"choose\":{\"transports\":[\"TCP\"],\"laneMask\":2}},"
          + "{\"match\":{\"op\":\"WRITE\"},\"choose\":{\"transports\":[\"TCP\"],\"laneMask\":4}}"
          + "]}";

  /** A task's placement. */
  private record Task(Op op, long localOffset, long remoteOffset, long length) {}

  /** Sliced tasks, single-frame ones, neighbours that merge, and gaps between them. */
  private static List<Task> tasks() {
    List<Task> out = new ArrayList<>();
    out.add(new Task(Op.READ, 3, 4096 + 5, (4L << 20) + 11));
    for (int k = 0; k < 8; k++) {
      out.add(new Task(Op.READ, (5L << 20) + k * 4096L, (6L << 20) + k * 4096L, 4096));
    }
    out.add(new Task(Op.READ, (6L << 20) + 7, (9L << 20) + 1, 65_537));
    out.add(new Task(Op.WRITE, (10L << 20) + 1, (12L << 20) + 3, (2L << 20) + 5));
    for (int k = 0; k < 4; k++) {
      out.add(new Task(Op.WRITE, (14L << 20) + k * 8192L, (16L << 20) + k * 8192L, 4096));
    }
    out.add(new Task(Op.WRITE, (18L << 20) + 9, (20L << 20) + 13, (1L << 20) + 17));
    return out;
  }

  /** Bytes each lane of the requester confirmed so far: index i is "tcp/lane i to ...". */
  private static long[] lanes(TransferEngine engine, int count) {
    long[] out = new long[count];
    engine
        .counters()
        .laneBytes()
        .forEach(
            (name, bytes) -> {
              for (int i = 0; i < count; i++) {
                if (name.startsWith("tcp/lane " + i + " to ")) {
                  out[i] += bytes;
                }
              }
            });
    return out;
  }

  private static long[] minus(long[] after, long[] before) {
    long[] out = new long[after.length];
    for (int i = 0; i < after.length; i++) {
      out[i] = after[i] - before[i];
    }
    return out;
  }

  /**
   * Runs {@code tasks} in one submission (named TCP when {@code named}, else routed by the rules),
   * checks every byte of both regions and every result, and returns the bytes each lane confirmed.
   */
  private static long[] run(
      TransferEngine requester,
      RegisteredMemory local,
      RegisteredMemory remote,
      RemoteSegment peer,
      List<Task> tasks,
      boolean named) {
    Pattern.fill(remote.segment(), 0, REGION, REMOTE_SEED, 0);
    Pattern.fill(local.segment(), 0, REGION, LOCAL_GUARD, 0);
    List<TransferRequest> requests = new ArrayList<>();
    List<Span> localSpans = new ArrayList<>();
    List<Span> remoteSpans = new ArrayList<>();
    for (Task t : tasks) {
      TransferRequest r;
      if (t.op == Op.READ) {
        r =
            TransferRequest.read(
                local, t.localOffset, peer, remote.regionId(), t.remoteOffset, t.length);
        localSpans.add(new Span(t.localOffset, t.length, REMOTE_SEED, t.remoteOffset));
      } else {
        Pattern.fill(local.segment(), t.localOffset, t.length, WRITE_SEED, t.localOffset);
        r =
            TransferRequest.write(
                local, t.localOffset, peer, remote.regionId(), t.remoteOffset, t.length);
        localSpans.add(new Span(t.localOffset, t.length, WRITE_SEED, t.localOffset));
        remoteSpans.add(new Span(t.remoteOffset, t.length, WRITE_SEED, t.localOffset));
      }
      requests.add(named ? r.withTransport(Transport.TCP) : r);
    }
    long[] before = lanes(requester, 3);
    Batch batch = requester.allocateBatch(requests.size());
    batch.submit(requests);
    BatchStatus s = batch.await(Duration.ofSeconds(60));
    batch.free();
    assertTrue(s.allCompleted(), s::toString);
    for (TaskResult r : s.tasks()) {
      Task t = tasks.get(r.index());
      assertEquals(t.length, r.bytes(), r::toString);
      assertEquals(Transport.TCP, r.transport(), r::toString);
      assertEquals(named ? Route.REQUESTED : Route.POLICY, r.route(), r::toString);
      assertEquals(named ? TaskResult.NO_RULE : t.op.ordinal(), r.rule(), r::toString);
      assertEquals(t.op == Op.WRITE ? RemoteEffect.APPLIED : RemoteEffect.NONE, r.remoteEffect());
    }
    assertEquals(-1, RegionCheck.check(local.segment(), localSpans, LOCAL_GUARD), "local region");
    assertEquals(
        -1, RegionCheck.check(remote.segment(), remoteSpans, REMOTE_SEED), "remote region");
    return minus(lanes(requester, 3), before);
  }

  private static long bytes(List<Task> tasks, Op op) {
    return tasks.stream().filter(t -> t.op == op).mapToLong(Task::length).sum();
  }

  @Test
  void everyTaskOfARuleTravelsOnTheLaneItsMaskNamesAndUnruledTasksSpread() {
    try (TransferEngine source =
            TransferEngine.start(EngineConfig.defaults().withName("mask-source"));
        TransferEngine requester =
            TransferEngine.start(EngineConfig.fromJson(BY_OP.formatted("mask-requester")))) {
      RegisteredMemory remote = source.allocate(REGION, Access.READ_WRITE);
      RegisteredMemory local = requester.allocate(REGION, Access.READ_WRITE);
      RemoteSegment peer =
          requester.openSegment(source.localSegment().endpoint(), Duration.ofSeconds(10));
      List<Task> tasks = tasks();

      // The same tasks naming TCP: no rule applies, and the sliced ones spread over the lanes.
      long[] spread = run(requester, local, remote, peer, tasks, true);
      int used = 0;
      for (long b : spread) {
        used += b > 0 ? 1 : 0;
      }
      assertTrue(used >= 2, () -> "without a mask the lanes share the work: " + str(spread));
      assertEquals(
          bytes(tasks, Op.READ) + bytes(tasks, Op.WRITE), spread[0] + spread[1] + spread[2]);

      // Routed by the rules, twice: READs on lane 1 alone, WRITEs on lane 2 alone.
      for (int round = 0; round < 2; round++) {
        long[] masked = run(requester, local, remote, peer, tasks, false);
        assertEquals(0, masked[0], () -> "lane 0 is in no rule's mask: " + str(masked));
        assertEquals(
            bytes(tasks, Op.READ), masked[1], () -> "every READ on lane 1: " + str(masked));
        assertEquals(
            bytes(tasks, Op.WRITE), masked[2], () -> "every WRITE on lane 2: " + str(masked));
      }
    }
  }

  /** Breaks the first lane whose name starts with one of {@code lanes} as a READ payload lands. */
  private static final class BreakOnce implements FaultHooks {
    final List<String> lanes;
    final AtomicInteger fired = new AtomicInteger();
    volatile String broken;

    BreakOnce(String... lanes) {
      this.lanes = List.of(lanes);
    }

    @Override
    public void beforeReadPayload(String lane) throws IOException {
      if (lanes.stream().anyMatch(lane::startsWith) && fired.compareAndSet(0, 1)) {
        broken = lane;
        throw new IOException("test hook: connection reset on " + lane);
      }
    }
  }

  /**
   * One READ of a rule whose mask is {@code mask}, its lane broken by the hook as the payload
   * lands: the READ completes with every byte, and returns the bytes each lane confirmed.
   */
  private static long[] readThroughABreak(String mask, BreakOnce hook, boolean waits) {
    String json =
        ("{\"name\":\"break-requester\",\"tcp\":{\"lanes\":3},\"policies\":[{\"choose\":"
                + "{\"transports\":[\"TCP\"],\"laneMask\":%s}}]}")
            .formatted(mask);
    try (TransferEngine source =
            TransferEngine.start(EngineConfig.defaults().withName("break-source"));
        TransferEngine requester = FaultInjection.start(EngineConfig.fromJson(json), hook)) {
      RegisteredMemory remote = source.allocate(REGION, Access.READ_WRITE);
      RegisteredMemory local = requester.allocate(REGION, Access.READ_WRITE);
      RemoteSegment peer =
          requester.openSegment(source.localSegment().endpoint(), Duration.ofSeconds(10));
      List<Task> read = List.of(new Task(Op.READ, 5, 4096 + 3, (4L << 20) + 7));
      long[] moved = run(requester, local, remote, peer, read, false);
      assertEquals(1, hook.fired.get(), "the hook broke a lane");
      assertTrue(requester.counters().readRetries() >= 1, "the READ's frame was sent again");
      if (waits) {
        assertTrue(
            requester.counters().lanesRestored() >= 1, "it waited for its lane, which reconnected");
      }
      assertEquals(read.getFirst().length(), moved[0] + moved[1] + moved[2], str(moved));
      return moved;
    }
  }

  @Test
  void aReadWhoseMaskedLaneBreaksIsRetriedOnlyOnAnotherLaneOfItsMask() {
    BreakOnce hook = new BreakOnce("lane 1 to ", "lane 2 to ");
    long[] moved = readThroughABreak("6", hook, false);
    assertEquals(0, moved[0], () -> "lane 0 is not in the mask: " + str(moved));
  }

  @Test
  void aReadWhoseOnlyMaskedLaneBreaksWaitsForItToReconnectWhileTheOtherLanesWork() {
    BreakOnce hook = new BreakOnce("lane 1 to ");
    long[] moved = readThroughABreak("2", hook, true);
    assertTrue(hook.broken.startsWith("lane 1 to "), hook.broken);
    assertEquals(0, moved[0], () -> "lanes 0 and 2 work but are not in the mask: " + str(moved));
    assertEquals(0, moved[2], () -> "lanes 0 and 2 work but are not in the mask: " + str(moved));
  }

  private static String str(long[] lanes) {
    return java.util.Arrays.toString(lanes);
  }
}
