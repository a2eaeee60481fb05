package io.orbite.qualification.contract;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.orbite.config.EngineConfig;
import io.orbite.engine.Access;
import io.orbite.engine.Batch;
import io.orbite.engine.BatchStatus;
import io.orbite.engine.Priority;
import io.orbite.engine.RegisteredMemory;
import io.orbite.engine.RemoteSegment;
import io.orbite.engine.TaskResult;
import io.orbite.engine.TransferEngine;
import io.orbite.engine.TransferRequest;
import io.orbite.engine.Transport;
import io.orbite.engine.fault.FaultHooks;
import io.orbite.engine.fault.FaultInjection;
import io.orbite.qualification.verify.Pattern;
import io.orbite.qualification.verify.Span;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * C14 on a TCP lane, through the engine: the requester has one lane, a hook holds it on the READ
 * payload of a first (LOW) task, and while it is held a LOW backlog, then a MEDIUM task, then a
 * HIGH task are queued on it. Released, the lane finishes the task on the wire (posted work is
 * never preempted), then sends HIGH, MEDIUM and the backlog in its order.
 *
 * <p>The send order is read where it shows: responses come back in request order, and the lane
 * calls the hook before it moves each READ payload, so at each call exactly the tasks answered
 * before have landed. The order is exact, not a race with aging: frames queued while the lane is
 * held wait in its hand-over queue, and the lane stamps them all in the one pass that takes them
 * after the release, so none has waited longer than another and no promotion can reorder them,
 * however long the hold took. Every byte of both regions is checked afterwards.
 */
class TcpPriorityIT {
  private static final long TASK = 16 * 1024 + 3;
  private static final int BACKLOG = 24;
  private static final long GAP = 77;
  private static final long REGION = (BACKLOG + 3) * (TASK + GAP) + GAP;

  @Test
  void aHighTaskQueuedBehindALowBacklogIsSentFirstAndTheTaskOnTheWireIsNotPreempted() {
    List<String> expected = new ArrayList<>(List.of("first LOW", "last HIGH", "middle MEDIUM"));
    for (int i = 0; i < BACKLOG; i++) {
      expected.add("backlog " + i + " LOW");
    }
    assertEquals(expected, run(Priority.LOW, Priority.MEDIUM, Priority.HIGH));
  }

  @Test
  void withinOneTierTheLaneKeepsArrivalOrder() {
    List<String> expected = new ArrayList<>(List.of("first HIGH"));
    for (int i = 0; i < BACKLOG; i++) {
      expected.add("backlog " + i + " HIGH");
    }
    expected.add("middle HIGH");
    expected.add("last HIGH");
    assertEquals(expected, run(Priority.HIGH, Priority.HIGH, Priority.HIGH));
  }

  /** Where one task reads to and from, and what the test calls it. */
  private record Task(String name, long offset, Priority priority) {}

  /**
   * Holds the lane on a first task at {@code backlog}'s tier, queues the backlog at {@code backlog}
   * and then one task at {@code middle} and one at {@code last}, releases the lane, checks every
   * byte of both regions and returns the tasks' names in the order their payloads landed.
   */
  private static List<String> run(Priority backlog, Priority middle, Priority last) {
    List<Task> tasks = new ArrayList<>();
    long at = GAP;
    tasks.add(new Task("first " + backlog, at, backlog));
    for (int i = 0; i < BACKLOG; i++) {
      at += TASK + GAP;
      tasks.add(new Task("backlog " + i + " " + backlog, at, backlog));
    }
    at += TASK + GAP;
    tasks.add(new Task("middle " + middle, at, middle));
    at += TASK + GAP;
    tasks.add(new Task("last " + last, at, last));
    assertTrue(at + TASK + GAP <= REGION, "the tasks fit the regions");

    long data = 0x7c14L;
    long guard = 0x6a7dL;
    LandingOrder hook = new LandingOrder();
    EngineConfig d = EngineConfig.defaults();
    try (TransferEngine source = TransferEngine.start(d.withName("priority-source"));
        TransferEngine requester =
            FaultInjection.start(
                d.withName("priority-requester").withTcp(d.tcp().withLanes(1)), hook)) {
      RegisteredMemory remote = EnginePair.guarded(source, REGION, Access.READ_WRITE, data);
      RegisteredMemory local = EnginePair.guarded(requester, REGION, Access.READ_WRITE, guard);
      RemoteSegment peer =
          requester.openSegment(source.localSegment().endpoint(), Duration.ofSeconds(10));
      hook.watch(local, tasks, data);

      Batch first = submit(requester, local, peer, remote, tasks.subList(0, 1));
      hook.awaitHeld();
      // Batch.submit hands its frames to the lane before it returns: all queue behind the hold.
      Batch queued = submit(requester, local, peer, remote, tasks.subList(1, BACKLOG + 1));
      Batch middleBatch =
          submit(requester, local, peer, remote, tasks.subList(BACKLOG + 1, BACKLOG + 2));
      Batch lastBatch =
          submit(requester, local, peer, remote, tasks.subList(BACKLOG + 2, BACKLOG + 3));
      hook.release();

      for (Batch b : List.of(first, queued, middleBatch, lastBatch)) {
        BatchStatus s = b.await(Duration.ofSeconds(30));
        b.free();
        for (TaskResult r : s.tasks()) {
          assertTrue(r.completed() && r.locallyDrained(), r::toString);
          assertEquals(TASK, r.bytes(), r::toString);
        }
      }
      hook.landed(); // the last task's payload has no later hook call to see it

      List<Span> spans = new ArrayList<>();
      for (Task t : tasks) {
        spans.add(new Span(t.offset(), TASK, data, t.offset()));
      }
      EnginePair.assertRegion(local.segment(), spans, guard, "requester region");
      assertEquals(
          -1,
          Pattern.verify(remote.segment(), 0, REGION, data, 0),
          "the source region is untouched by READs");
      return hook.order();
    }
  }

  /** Submits {@code tasks} as one batch of TCP READs, each at its own offset on both sides. */
  private static Batch submit(
      TransferEngine requester,
      RegisteredMemory local,
      RemoteSegment peer,
      RegisteredMemory remote,
      List<Task> tasks) {
    List<TransferRequest> requests = new ArrayList<>();
    for (Task t : tasks) {
      requests.add(
          TransferRequest.read(local, t.offset(), peer, remote.regionId(), t.offset(), TASK)
              .withTransport(Transport.TCP)
              .withPriority(t.priority()));
    }
    Batch batch = requester.allocateBatch(requests.size());
    batch.submit(requests);
    return batch;
  }

  /**
   * Holds the lane on its first READ payload after {@link #watch} until {@link #release}, and at
   * every call notes which watched tasks have landed since the last one: the landing order. Runs on
   * the lane thread, the only one writing that memory, so what it reads is settled.
   */
  private static final class LandingOrder implements FaultHooks {
    private final CountDownLatch held = new CountDownLatch(1);
    private final CountDownLatch released = new CountDownLatch(1);
    private volatile List<Task> watched;
    private volatile RegisteredMemory local;
    private volatile long data;
    private final List<String> order = new ArrayList<>();
    private final boolean[] seen = new boolean[BACKLOG + 3];

    void watch(RegisteredMemory local, List<Task> tasks, long data) {
      this.local = local;
      this.data = data;
      this.watched = tasks;
    }

    @Override
    public void beforeReadPayload(String lane) {
      if (watched == null) {
        return;
      }
      landed();
      if (held.getCount() > 0) {
        held.countDown();
        try {
          // Bounded so that a failed test never leaves the lane held for good.
          released.await(60, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
        }
      }
    }

    /** Notes the watched tasks whose whole range landed since the last look. */
    synchronized void landed() {
      List<Task> tasks = watched;
      for (int i = 0; i < tasks.size(); i++) {
        Task t = tasks.get(i);
        if (!seen[i] && Pattern.verify(local.segment(), t.offset(), TASK, data, t.offset()) < 0) {
          seen[i] = true;
          order.add(t.name());
        }
      }
    }

    void awaitHeld() {
      try {
        assertTrue(held.await(20, TimeUnit.SECONDS), "the lane reached the first READ payload");
      } catch (InterruptedException e) {
        throw new AssertionError(e);
      }
    }

    void release() {
      released.countDown();
    }

    synchronized List<String> order() {
      return List.copyOf(order);
    }
  }
}
