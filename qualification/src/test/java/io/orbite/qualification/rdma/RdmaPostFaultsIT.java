package io.orbite.qualification.rdma;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.orbite.config.EngineConfig;
import io.orbite.engine.Access;
import io.orbite.engine.Batch;
import io.orbite.engine.BatchStatus;
import io.orbite.engine.ErrorKind;
import io.orbite.engine.RegisteredMemory;
import io.orbite.engine.RemoteEffect;
import io.orbite.engine.RemoteSegment;
import io.orbite.engine.TaskResult;
import io.orbite.engine.TaskState;
import io.orbite.engine.TransferEngine;
import io.orbite.engine.TransferRequest;
import io.orbite.engine.Transport;
import io.orbite.engine.fault.FaultHooks;
import io.orbite.engine.fault.FaultInjection;
import io.orbite.nativebind.verbs.Ibv;
import io.orbite.nativebind.verbs.soft.SoftFaults;
import io.orbite.qualification.Await;
import io.orbite.qualification.verify.Pattern;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.IntConsumer;
import org.junit.jupiter.api.Test;

/**
 * The software provider's post and wire faults driven through the engine: each armed from the
 * requester lane's pre-post hook on the QP the slice is about to be posted on, so it hits exactly
 * that slice. A refused first WR (the payload never posted), a refused completion SEND behind a
 * posted payload, a dropped connection and a stalled one: each task's outcome, effect, drain and
 * bytes (payload and guards, in both regions), the provider's own payload count, and a later task
 * on the repaired slot that moves verified bytes. The requester has one rail and one lane, so every
 * slice shares one QP slot and its fate.
 */
class RdmaPostFaultsIT {

  /**
   * The requester's WRITE source (its third task-sized range) still holds {@code written} and the
   * rest of its region past it still holds {@code guard}.
   */
  private static void writeSourceAndRestIntact(MemorySegment l, long written, long guard) {
    assertEquals(-1, Pattern.verify(l, 2 * TASK, TASK, written, 2 * TASK), "WRITE's source");
    assertEquals(
        -1, Pattern.verify(l, 3 * TASK, REGION - 3 * TASK, guard, 3 * TASK), "requester rest");
  }

  private static final long TASK = 64 * 1024;
  private static final long REGION = 16 * TASK;
  private static final int EIO = 5;

  /** One rail, one lane: every slice goes through one QP slot. */
  private static EngineConfig requesterConfig(String name) {
    EngineConfig c = RdmaTransferIT.rdmaConfig(name);
    return c.withRdma(c.rdma().withSoftwareDevices(1).withLanes(1));
  }

  /** Hands the provider {@code faults}; runs the armed action (once) on the next payload post. */
  private static final class ArmedPost implements FaultHooks {
    private final SoftFaults faults;
    private final AtomicReference<IntConsumer> armed = new AtomicReference<>();
    private final AtomicInteger fired = new AtomicInteger();

    ArmedPost(SoftFaults faults) {
      this.faults = faults;
    }

    @Override
    public Object rdmaFaults() {
      return faults;
    }

    @Override
    public void beforeRdmaPost(String lane, int qpNum, long wrId, boolean write) {
      IntConsumer action = armed.getAndSet(null);
      if (action != null) {
        action.accept(qpNum);
        fired.incrementAndGet();
      }
    }

    /** Arms {@code action} (given the QP's number) for the next payload post only. */
    void arm(IntConsumer action) {
      armed.set(action);
    }
  }

  /** Two engines, the requester's provider faults armed through {@link ArmedPost}. */
  private record Pair(
      TransferEngine source,
      TransferEngine requester,
      SoftFaults faults,
      ArmedPost hooks,
      RegisteredMemory remote,
      RegisteredMemory local,
      RemoteSegment peer)
      implements AutoCloseable {
    static Pair open(String name) {
      SoftFaults faults = SoftFaults.create();
      ArmedPost hooks = new ArmedPost(faults);
      TransferEngine source = TransferEngine.start(RdmaTransferIT.rdmaConfig(name + "-source"));
      TransferEngine requester = FaultInjection.start(requesterConfig(name + "-req"), hooks);
      RegisteredMemory remote = source.allocate(REGION, Access.READ_WRITE);
      RegisteredMemory local = requester.allocate(REGION, Access.READ_WRITE);
      RemoteSegment peer =
          requester.openSegment(source.localSegment().endpoint(), Duration.ofSeconds(20));
      return new Pair(source, requester, faults, hooks, remote, local, peer);
    }

    long moved() {
      return faults.payloadBytes("soft0");
    }

    /** A counter of the requester's RDMA transport, from its owner view. */
    long transport(String name) {
      return RdmaPeerIT.charge(requester, "RdmaTransport", name);
    }

    /** Waits for the transport to count {@code n} more retired QPs and {@code n} more repairs. */
    void awaitRetiredAndRepaired(long failedBefore, long repairedBefore, int n) {
      assertTrue(
          Await.until(
              Duration.ofSeconds(5),
              () ->
                  transport("qpsFailed") >= failedBefore + n
                      && transport("qpsRepaired") >= repairedBefore + n),
          () ->
              "the QP retired and its slot repaired "
                  + n
                  + " times: "
                  + transport("qpsFailed")
                  + " retired, "
                  + transport("qpsRepaired")
                  + " repaired");
    }

    TransferRequest read(long at) {
      return TransferRequest.read(local, at, peer, remote.regionId(), at, TASK)
          .withTransport(Transport.RDMA);
    }

    TransferRequest write(long at) {
      return TransferRequest.write(local, at, peer, remote.regionId(), at, TASK)
          .withTransport(Transport.RDMA);
    }

    /** Fills both regions afresh: the source with {@code data}, the requester with guard. */
    void fill(long data, long guard) {
      Pattern.fill(remote.segment(), 0, REGION, data, 0);
      Pattern.fill(local.segment(), 0, REGION, guard, 0);
    }

    /**
     * A READ at {@code readAt} and a WRITE at {@code writeAt} (whose requester range holds {@code
     * written}) complete on the repaired slot with their bytes; every other byte is as it was.
     */
    void laterTasksMoveVerifiedBytes(long data, long guard, long written) {
      fill(data, guard);
      long readAt = 8 * TASK;
      long writeAt = 10 * TASK;
      Pattern.fill(local.segment(), writeAt, TASK, written, writeAt);
      long before = moved();
      BatchStatus s = run(requester, List.of(read(readAt), write(writeAt)));
      assertTrue(s.allCompleted(), s::toString);
      assertEquals(TaskState.COMPLETED, s.tasks().get(1).state());
      assertEquals(RemoteEffect.APPLIED, s.tasks().get(1).remoteEffect(), s::toString);
      for (TaskResult r : s.tasks()) {
        assertEquals(TASK, r.bytes(), r::toString);
        assertTrue(r.locallyDrained(), r::toString);
      }
      assertEquals(2 * TASK, moved() - before, "the provider moved both payloads, once each");
      MemorySegment l = local.segment();
      assertEquals(-1, Pattern.verify(l, 0, readAt, guard, 0), "requester before the READ");
      assertEquals(-1, Pattern.verify(l, readAt, TASK, data, readAt), "the READ landed");
      assertEquals(-1, Pattern.verify(l, readAt + TASK, TASK, guard, readAt + TASK), "between");
      assertEquals(-1, Pattern.verify(l, writeAt, TASK, written, writeAt), "the WRITE's source");
      long end = writeAt + TASK;
      assertEquals(-1, Pattern.verify(l, end, REGION - end, guard, end), "requester after");
      MemorySegment r = remote.segment();
      assertEquals(-1, Pattern.verify(r, 0, writeAt, data, 0), "source before the WRITE");
      assertEquals(-1, Pattern.verify(r, writeAt, TASK, written, writeAt), "the WRITE landed");
      assertEquals(-1, Pattern.verify(r, end, REGION - end, data, end), "source after");
    }

    @Override
    public void close() {
      requester.close(Duration.ofSeconds(30));
      source.close(Duration.ofSeconds(30));
    }
  }

  private static BatchStatus run(TransferEngine requester, List<TransferRequest> requests) {
    Batch batch = requester.allocateBatch(requests.size());
    batch.submit(requests);
    BatchStatus s = batch.await(Duration.ofSeconds(30));
    batch.free();
    assertTrue(s.done(), s::toString);
    return s;
  }

  /** Every byte of {@code [at, at + length)} is {@code a}'s pattern or {@code b}'s. */
  private static void eachByteIsOneOf(MemorySegment m, long at, long length, long a, long b) {
    for (long p = at; p < at + length; p++) {
      byte v = m.get(ValueLayout.JAVA_BYTE, p);
      if (v != Pattern.at(a, p) && v != Pattern.at(b, p)) {
        throw new AssertionError("byte " + p + " is neither pattern " + a + " nor " + b);
      }
    }
  }

  /**
   * {@code ibv_post_send} refuses the slice's first WR (bad index 0): its payload was never posted,
   * so the READ and then the WRITE each fail {@code UNAVAILABLE} naming the post, effect {@code
   * NONE} (a WRITE too: nothing of it was posted), drained, 0 bytes, with no byte moved by the
   * provider and both regions untouched; later tasks on the slot move their bytes.
   */
  @Test
  void aRefusedFirstWorkRequestFailsTheSliceUnsentAndTheRepairedSlotCarriesOn() {
    try (Pair p = Pair.open("post0")) {
      long data = 11;
      long guard = 12;
      long written = 13;
      p.fill(data, guard);
      Pattern.fill(p.local().segment(), 2 * TASK, TASK, written, 2 * TASK);
      long movedBefore = p.moved();
      for (TransferRequest request : List.of(p.read(0), p.write(2 * TASK))) {
        p.hooks().arm(qp -> p.faults().failPostSend(qp, 0, EIO));
        TaskResult r = run(p.requester(), List.of(request)).tasks().getFirst();
        assertEquals(TaskState.FAILED, r.state(), r::toString);
        assertEquals(ErrorKind.UNAVAILABLE, r.errorKind(), r::toString);
        assertEquals(RemoteEffect.NONE, r.remoteEffect(), "nothing of it was posted: " + r);
        assertEquals(0, r.bytes(), r::toString);
        assertTrue(r.locallyDrained(), r::toString);
        assertTrue(r.detail().contains("ibv_post_send"), r::toString);
        assertTrue(r.detail().contains("errno " + EIO), r::toString);
      }
      assertEquals(2, p.hooks().fired.get(), "each fault hit its task's post");
      assertEquals(movedBefore, p.moved(), "the provider moved no byte");
      assertEquals(-1, Pattern.verify(p.local().segment(), 0, 2 * TASK, guard, 0), "READ range");
      assertEquals(
          -1, Pattern.verify(p.local().segment(), 2 * TASK, TASK, written, 2 * TASK), "WRITE's");
      assertEquals(
          -1,
          Pattern.verify(p.local().segment(), 3 * TASK, REGION - 3 * TASK, guard, 3 * TASK),
          "requester rest");
      assertEquals(-1, Pattern.verify(p.remote().segment(), 0, REGION, data, 0), "source intact");
      // The slot carries on: a later READ and WRITE move their bytes.
      p.laterTasksMoveVerifiedBytes(data + 10, guard + 10, written + 10);
    }
  }

  /**
   * {@code ibv_post_send} posts the payload and refuses the completion SEND behind it ({@code
   * failPostSendOf} the SEND opcode, however the lane groups its WRs into posts): the payload is
   * posted, but the source never learns the slice ended, so no receipt confirms it. The slice fails
   * once its payload's completion came back (drained only then), its QP retired: a READ {@code
   * NONE} (its bytes may have landed: each byte of its range is the guard's or the source's), a
   * WRITE {@code UNKNOWN} (each byte of the source's range old or new). Nothing outside the two
   * ranges changes, and the repaired slot then moves verified bytes.
   */
  @Test
  void aRefusedCompletionSendBehindAPostedPayloadFailsTheSliceAfterItsPayloadCompleted() {
    try (Pair p = Pair.open("post1")) {
      long data = 21;
      long guard = 22;
      long written = 23;
      p.fill(data, guard);
      Pattern.fill(p.local().segment(), 2 * TASK, TASK, written, 2 * TASK);
      long failedBefore = p.transport("qpsFailed");
      long repairedBefore = p.transport("qpsRepaired");
      List<TransferRequest> requests = List.of(p.read(0), p.write(2 * TASK));
      for (int i = 0; i < requests.size(); i++) {
        p.hooks().arm(qp -> p.faults().failPostSendOf(qp, Ibv.WR_SEND, EIO));
        TaskResult r = run(p.requester(), List.of(requests.get(i))).tasks().getFirst();
        assertEquals(TaskState.FAILED, r.state(), r::toString);
        assertEquals(0, r.bytes(), r::toString);
        assertTrue(r.locallyDrained(), r::toString);
        RemoteEffect effect = i == 0 ? RemoteEffect.NONE : RemoteEffect.UNKNOWN;
        assertEquals(effect, r.remoteEffect(), r::toString);
        // The QP was retired for a refused post, not a wire failure: what it held fails
        // UNAVAILABLE (rdma.md, Failure handling).
        assertEquals(ErrorKind.UNAVAILABLE, r.errorKind(), r::toString);
      }
      assertEquals(2, p.hooks().fired.get(), "each fault hit its task's post");
      MemorySegment l = p.local().segment();
      eachByteIsOneOf(l, 0, TASK, guard, data);
      assertEquals(-1, Pattern.verify(l, TASK, TASK, guard, TASK), "requester between");
      writeSourceAndRestIntact(l, written, guard);
      MemorySegment r = p.remote().segment();
      assertEquals(-1, Pattern.verify(r, 0, 2 * TASK, data, 0), "source before the WRITE");
      eachByteIsOneOf(r, 2 * TASK, TASK, data, written);
      assertEquals(
          -1, Pattern.verify(r, 3 * TASK, REGION - 3 * TASK, data, 3 * TASK), "source after");
      p.laterTasksMoveVerifiedBytes(data + 10, guard + 10, written + 10);
      p.awaitRetiredAndRepaired(failedBefore, repairedBefore, 2);
    }
  }

  /**
   * The QP's connection drops just before the slice's post: its WR completes {@code
   * WC_RETRY_EXC_ERR}, so the READ fails {@code PEER_LOST} with effect {@code NONE} and the WRITE
   * {@code PEER_LOST} with {@code UNKNOWN} (its payload was posted), both drained with 0 bytes, no
   * byte moved by the provider; the QP is retired and repaired, and the next tasks move verified
   * bytes.
   */
  @Test
  void aDroppedWireFailsTheSlicePeerLostAndTheRepairedSlotCarriesOn() {
    try (Pair p = Pair.open("drop")) {
      long data = 31;
      long guard = 32;
      long written = 33;
      p.fill(data, guard);
      Pattern.fill(p.local().segment(), 2 * TASK, TASK, written, 2 * TASK);
      long movedBefore = p.moved();
      long failedBefore = p.transport("qpsFailed");
      long repairedBefore = p.transport("qpsRepaired");
      List<TransferRequest> requests = List.of(p.read(0), p.write(2 * TASK));
      for (int i = 0; i < requests.size(); i++) {
        p.hooks().arm(qp -> p.faults().dropWire(qp));
        TaskResult r = run(p.requester(), List.of(requests.get(i))).tasks().getFirst();
        assertEquals(TaskState.FAILED, r.state(), r::toString);
        assertEquals(ErrorKind.PEER_LOST, r.errorKind(), r::toString);
        RemoteEffect effect = i == 0 ? RemoteEffect.NONE : RemoteEffect.UNKNOWN;
        assertEquals(effect, r.remoteEffect(), r::toString);
        assertEquals(0, r.bytes(), r::toString);
        assertTrue(r.locallyDrained(), r::toString);
      }
      assertEquals(2, p.hooks().fired.get(), "each fault hit its task's post");
      assertEquals(movedBefore, p.moved(), "the provider moved no byte");
      MemorySegment l = p.local().segment();
      assertEquals(-1, Pattern.verify(l, 0, 2 * TASK, guard, 0), "nothing landed");
      writeSourceAndRestIntact(l, written, guard);
      assertEquals(-1, Pattern.verify(p.remote().segment(), 0, REGION, data, 0), "source intact");
      p.laterTasksMoveVerifiedBytes(data + 10, guard + 10, written + 10);
      p.awaitRetiredAndRepaired(failedBefore, repairedBefore, 2);
    }
  }

  /**
   * The QP's wire stalls just before a READ's and a WRITE's posts: both tasks wait, no byte moves
   * (the provider's count, the requester's READ range and the source's WRITE range unchanged) and
   * nothing is drained; once the wire is released both complete with their bytes, the WRITE {@code
   * APPLIED}.
   */
  @Test
  void aStalledWireHoldsTheTasksUntilItIsReleasedThenTheyCompleteWithTheirBytes() {
    try (Pair p = Pair.open("stall")) {
      long data = 41;
      long guard = 42;
      long written = 43;
      p.fill(data, guard);
      Pattern.fill(p.local().segment(), 2 * TASK, TASK, written, 2 * TASK);
      long movedBefore = p.moved();
      AtomicInteger stalledQp = new AtomicInteger(-1);
      p.hooks()
          .arm(
              qp -> {
                p.faults().stallWire(qp);
                stalledQp.set(qp);
              });
      Batch batch = p.requester().allocateBatch(2);
      batch.submit(List.of(p.read(0), p.write(2 * TASK)));
      assertTrue(
          Await.until(Duration.ofSeconds(10), () -> stalledQp.get() >= 0), "the wire stalled");
      // Both tasks wait on the stalled wire: none ends within a second, and no byte moves.
      assertFalse(
          Await.until(
              Duration.ofSeconds(1),
              () -> batch.status().tasks().stream().anyMatch(t -> t.state().isTerminal())),
          () -> "a task ended while the wire was stalled: " + batch.status());
      assertEquals(movedBefore, p.moved(), "no byte moved while stalled");
      assertEquals(-1, Pattern.verify(p.local().segment(), 0, TASK, guard, 0), "READ not landed");
      assertEquals(
          -1, Pattern.verify(p.remote().segment(), 2 * TASK, TASK, data, 2 * TASK), "nor WRITE");

      p.faults().releaseWire(stalledQp.get());
      BatchStatus s = batch.await(Duration.ofSeconds(30));
      batch.free();
      assertTrue(s.allCompleted(), s::toString);
      for (TaskResult r : s.tasks()) {
        assertEquals(TASK, r.bytes(), r::toString);
        assertTrue(r.locallyDrained(), r::toString);
      }
      assertEquals(RemoteEffect.APPLIED, s.tasks().get(1).remoteEffect(), s::toString);
      assertEquals(2 * TASK, p.moved() - movedBefore, "the provider moved both, once each");
      MemorySegment l = p.local().segment();
      assertEquals(-1, Pattern.verify(l, 0, TASK, data, 0), "the READ landed");
      assertEquals(-1, Pattern.verify(l, TASK, TASK, guard, TASK), "requester between");
      writeSourceAndRestIntact(l, written, guard);
      MemorySegment r = p.remote().segment();
      assertEquals(-1, Pattern.verify(r, 0, 2 * TASK, data, 0), "source before the WRITE");
      assertEquals(-1, Pattern.verify(r, 2 * TASK, TASK, written, 2 * TASK), "the WRITE landed");
      assertEquals(
          -1, Pattern.verify(r, 3 * TASK, REGION - 3 * TASK, data, 3 * TASK), "source after");
    }
  }
}
