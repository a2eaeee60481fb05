package io.orbite.qualification.rdma;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.orbite.config.EngineConfig;
import io.orbite.engine.Access;
import io.orbite.engine.Batch;
import io.orbite.engine.BatchStatus;
import io.orbite.engine.Priority;
import io.orbite.engine.RegisteredMemory;
import io.orbite.engine.RemoteSegment;
import io.orbite.engine.TransferEngine;
import io.orbite.engine.TransferRequest;
import io.orbite.engine.Transport;
import io.orbite.engine.fault.FaultHooks;
import io.orbite.engine.fault.FaultInjection;
import io.orbite.nativebind.verbs.soft.SoftFaults;
import io.orbite.qualification.Await;
import io.orbite.qualification.verify.Pattern;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * Priorities on an RDMA lane (C14): with a LOW backlog queued on the requester's only QP, a HIGH
 * task submitted later is posted as soon as a slot frees, ahead of the backlog, and posted work is
 * never preempted; a backlog that waited past the promotion timeout (10 ms by default) is promoted.
 * The order is the order of payload posts, seen by the lane's pre-post hook (the backlog is READs,
 * the HIGH task a WRITE). Aging moves old work ahead of newer HIGH work by design, so the ordering
 * test runs with a long timeout and the aging test with the default one.
 */
class RdmaPriorityIT {
  private static final long TASK = 64 * 1024;
  private static final int BACKLOG = 20;
  private static final long REGION = TASK * (BACKLOG + 2);

  @Test
  void aHighTaskSubmittedBehindALowBacklogIsPostedAheadOfIt() {
    List<Boolean> posts = run(60_000, 0, BACKLOG, BACKLOG);
    int writeAt = posts.indexOf(true);
    // Four slots on the QP: the held READ and three granted before the HIGH task arrived.
    assertTrue(
        writeAt >= 1 && writeAt <= 4,
        () -> "the HIGH WRITE was posted ahead of the backlog, at " + writeAt + ": " + posts);
  }

  /**
   * A short backlog, all but its first task handed to the lane while the lane is held, so that it
   * is still in the lane's inbox when the hold ends: its wait counts from the hand-off, not from
   * when the lane took it (a lane that was busy must not reset the clock). The two LOW tasks and
   * the HIGH one fit the QP's three free slots, so the first pass after the hold asks for all
   * three: only an aging pass in that pass, on the hand-off stamps, can promote them. (With stamps
   * taken when the lane drains its inbox nothing is ever promoted here; with the whole backlog in
   * one batch, a caller descheduled part-way through its submit left the rest in the inbox and the
   * count to chance, as once in CI.)
   */
  @Test
  void aLowBacklogThatWaitedPastTheTimeoutIsPromoted() {
    run(EngineConfig.defaults().rdma().priorityAgingMillis(), 20, 1, 3);
  }

  /**
   * Submits {@code firstLow} of {@code lowCount} LOW READs and holds the lane on the first one's
   * post; then submits the rest of them (as a second batch, when there is a rest) and one HIGH
   * WRITE, lets {@code holdMillis} pass, releases the lane, checks every byte, and returns the
   * order of payload posts (true: the WRITE). With {@code holdMillis} past the aging timeout the
   * backlog must have been promoted.
   */
  private static List<Boolean> run(int agingMillis, long holdMillis, int firstLow, int lowCount) {
    CountDownLatch held = new CountDownLatch(1);
    CountDownLatch release = new CountDownLatch(1);
    List<Boolean> posts = new CopyOnWriteArrayList<>();
    SoftFaults provider = SoftFaults.create();
    FaultHooks hooks =
        new FaultHooks() {
          @Override
          public Object rdmaFaults() {
            return provider;
          }

          @Override
          public void beforeRdmaPost(String lane, int qpNum, long wrId, boolean write) {
            posts.add(write);
            if (posts.size() == 1) {
              held.countDown();
              try {
                release.await(30, TimeUnit.SECONDS);
              } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
              }
            }
          }
        };
    EngineConfig one = RdmaTransferIT.rdmaConfig("prio-requester");
    one =
        one.withRdma(
            one.rdma()
                .withSoftwareDevices(1)
                .withLanes(1)
                .withMaxSendWr(16) // four slots on the QP: the backlog waits in its post queue
                .withPriorityAging(agingMillis, false));
    try (TransferEngine source = TransferEngine.start(RdmaTransferIT.rdmaConfig("prio-source"));
        TransferEngine requester = FaultInjection.start(one, hooks)) {
      RegisteredMemory remote = source.allocate(REGION, Access.READ_WRITE);
      RegisteredMemory local = requester.allocate(REGION, Access.READ_WRITE);
      long data = 5;
      long guard = 6;
      Pattern.fill(remote.segment(), 0, REGION, data, 0);
      Pattern.fill(local.segment(), 0, REGION, guard, 0);
      RemoteSegment peer =
          requester.openSegment(source.localSegment().endpoint(), Duration.ofSeconds(20));

      List<TransferRequest> low = new ArrayList<>();
      for (int i = 0; i < lowCount; i++) {
        low.add(
            TransferRequest.read(local, i * TASK, peer, remote.regionId(), i * TASK, TASK)
                .withTransport(Transport.RDMA)
                .withPriority(Priority.LOW));
      }
      Batch lowBatch = requester.allocateBatch(firstLow);
      lowBatch.submit(low.subList(0, firstLow));
      try {
        assertTrue(held.await(10, TimeUnit.SECONDS), "the first LOW slice was granted");
      } catch (InterruptedException e) {
        throw new AssertionError(e);
      }
      Batch restBatch = firstLow < lowCount ? requester.allocateBatch(lowCount - firstLow) : null;
      if (restBatch != null) {
        restBatch.submit(low.subList(firstLow, lowCount));
      }
      long at = lowCount * TASK;
      Batch highBatch = requester.allocateBatch(1);
      highBatch.submit(
          List.of(
              TransferRequest.write(local, at, peer, remote.regionId(), at, TASK)
                  .withTransport(Transport.RDMA)
                  .withPriority(Priority.HIGH)));
      // The aging test lets the backlog wait past the timeout while the lane is held.
      long t0 = System.nanoTime();
      Await.until(Duration.ofSeconds(1), () -> System.nanoTime() - t0 >= holdMillis * 1_000_000L);
      release.countDown();

      BatchStatus high = highBatch.await(Duration.ofSeconds(30));
      BatchStatus lowDone = lowBatch.await(Duration.ofSeconds(60));
      BatchStatus restDone = restBatch == null ? null : restBatch.await(Duration.ofSeconds(60));
      highBatch.free();
      lowBatch.free();
      if (restBatch != null) {
        restBatch.free();
      }
      assertTrue(high.allCompleted(), high::toString);
      assertTrue(lowDone.allCompleted(), lowDone::toString);
      if (restDone != null) {
        assertTrue(restDone.allCompleted(), restDone::toString);
      }
      assertEquals(lowCount + 1, posts.size(), "one post per slice: " + posts);
      assertEquals(
          (lowCount + 1) * TASK,
          provider.payloadBytes("soft0"),
          "the provider's own count: every slice's payload moved once, none twice");
      if (holdMillis > agingMillis) {
        assertTrue(
            Await.until(
                Duration.ofSeconds(2),
                () -> RdmaPeerIT.charge(requester, "RdmaEndpoint", "promotions") > 0),
            "the aged LOW backlog was promoted");
      } else {
        assertEquals(0, RdmaPeerIT.charge(requester, "RdmaEndpoint", "promotions"));
      }
      assertEquals(-1, Pattern.verify(local.segment(), 0, at, data, 0), "the READs landed");
      assertEquals(
          -1, Pattern.verify(local.segment(), at, REGION - at, guard, at), "and nothing else");
      assertEquals(-1, Pattern.verify(remote.segment(), at, TASK, guard, at), "the WRITE landed");
      assertEquals(-1, Pattern.verify(remote.segment(), 0, at, data, 0), "the source's rest");
      return List.copyOf(posts);
    }
  }
}
