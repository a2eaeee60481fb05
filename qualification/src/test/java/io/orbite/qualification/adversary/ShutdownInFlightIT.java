package io.orbite.qualification.adversary;

import static io.orbite.qualification.adversary.Bytes.assertRegion;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.orbite.config.EngineConfig;
import io.orbite.engine.Access;
import io.orbite.engine.Batch;
import io.orbite.engine.BatchStatus;
import io.orbite.engine.EngineOwed;
import io.orbite.engine.Op;
import io.orbite.engine.RegisteredMemory;
import io.orbite.engine.RemoteEffect;
import io.orbite.engine.RemoteSegment;
import io.orbite.engine.TaskResult;
import io.orbite.engine.TaskState;
import io.orbite.engine.TransferEngine;
import io.orbite.engine.TransferRequest;
import io.orbite.engine.spi.Registration;
import io.orbite.qualification.Await;
import io.orbite.qualification.verify.Pattern;
import io.orbite.qualification.verify.Span;
import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ThreadLocalRandom;
import org.junit.jupiter.api.Test;

/**
 * C8 with work in flight, judged by adversarial peers. {@code closeRequester} with 1000 tasks in
 * flight against a source that answers only the first frames and holds the rest: every task ends
 * COMPLETED or FAILED after drain, nothing stays charged or on loan, the held answers sent after
 * the close land nowhere, and both regions hold exactly what the peer's ledger says happened.
 * {@code closeSource} with the engine's source lanes blocked mid-payload (a WRITE whose payload
 * stops halfway, a large READ whose response nobody reads): the close ends both, every loan comes
 * back, and the engine's region holds at most the part of the WRITE that was sent.
 */
class ShutdownInFlightIT {
  private static final long REGION = 16L << 20;
  private static final long PEER_SEED = 0xE1;
  private static final long LOCAL_SEED = 0xE2;
  private static final int TASKS = 1000;
  private static final long TASK = 4096;
  private static final long WRITES_AT = 8L << 20;

  @Test
  void closeRequesterWithAThousandTasksInFlightEndsEachDrainedAndLeavesNoLoan() throws Exception {
    CountDownLatch release = Script.gate();
    int served = 150;
    Script script =
        r -> r.frameOverall() < served ? new Script.Reply.Serve() : new Script.Reply.Hold(release);
    try (AdversarialSource peer = AdversarialSource.start(REGION, PEER_SEED, script);
        TransferEngine engine =
            TransferEngine.start(EngineConfig.defaults().withName("close-requester"))) {
      RegisteredMemory local = engine.allocate(REGION, Access.READ_WRITE);
      Pattern.fill(local.segment(), 0, REGION, LOCAL_SEED, 0);
      RemoteSegment segment = engine.openSegment(peer.endpoint(), Duration.ofSeconds(10));
      // READs of remote [0, 2 MiB) into local [0, 2 MiB) and WRITEs of local [8, 10) MiB to the
      // same
      // remote range, interleaved, in two batches.
      List<TransferRequest> all = new ArrayList<>();
      for (int i = 0; i < TASKS / 2; i++) {
        all.add(
            TransferRequest.read(
                local, i * TASK, segment, AdversarialSource.REGION_ID, i * TASK, TASK));
        all.add(
            TransferRequest.write(
                local,
                WRITES_AT + i * TASK,
                segment,
                AdversarialSource.REGION_ID,
                WRITES_AT + i * TASK,
                TASK));
      }
      Batch first = engine.allocateBatch(TASKS / 2);
      Batch second = engine.allocateBatch(TASKS / 2);
      first.submit(all.subList(0, TASKS / 2));
      second.submit(all.subList(TASKS / 2, TASKS));
      assertTrue(
          Await.until(Duration.ofSeconds(20), () -> peer.ledger().received().size() >= served + 2),
          () -> "the peer got its first frames: " + peer.ledger());
      long inFlight = engine.owed().tasksInFlight();
      assertTrue(
          inFlight >= TASKS - served,
          "most tasks still in flight when the close begins: " + inFlight);

      EngineOwed owed;
      try {
        owed = engine.closeRequester(Duration.ofMillis(300));
      } finally {
        // Only now may the peer send what it held (checked below); on a failure, let its threads
        // go.
        release.countDown();
      }
      assertEquals(0, owed.tasksInFlight(), owed::toString);
      assertEquals(0, owed.bytesInFlight(), owed::toString);
      assertEquals(0, owed.loans(), owed::toString);
      assertEquals(List.of(), owed.quarantined(), owed::toString);
      assertEquals(0, ((Registration) local).loans(), "no worker holds the requester's memory");

      List<TaskResult> results = new ArrayList<>(first.status().tasks());
      second.status().tasks().forEach(results::add);
      assertEquals(TASKS, results.size());
      checkEveryTask(all, results, peer, local.segment());
      assertTrue(
          results.stream().anyMatch(TaskResult::completed), "some work completed before the close");
      assertTrue(results.stream().anyMatch(t -> !t.completed()), "the close cut work off");

      // The held answers go out now: the lanes were closed first, so none of it lands.
      MemorySegment afterClose = Bytes.snapshot(local.segment());
      assertTrue(
          Await.until(
              Duration.ofSeconds(20),
              () -> peer.ledger().lateSends().size() >= 1 && peer.ledger().laneEnds().size() >= 3),
          peer.ledger()::toString);
      for (Ledger.LateSend s : peer.ledger().lateSends()) {
        assertTrue(
            s.peerClosedFirst(), () -> "a lane was still open after closeRequester returned: " + s);
      }
      Bytes.assertStaysUnchanged(
          local.segment(),
          afterClose,
          Duration.ofMillis(500),
          "requester region after the late answers");
      first.free();
      second.free();
      EngineOwed again = engine.closeRequester(Duration.ofSeconds(5));
      assertEquals(owed.tasksInFlight(), again.tasksInFlight(), again::toString);
      assertEquals(owed.loans(), again.loans(), again::toString);
      assertEquals(owed.quarantined(), again.quarantined(), again::toString);
      assertEquals(List.of(), peer.ledger().problems());
    }
  }

  @Test
  void closeRequesterWhoseWorkOutlastsItsTimeoutStillAnswersWithWhatItOwes() throws Exception {
    CountDownLatch release = Script.gate();
    try (AdversarialSource peer =
            AdversarialSource.start(REGION, PEER_SEED, r -> new Script.Reply.Hold(release));
        TransferEngine engine =
            // Eight READs of their own (merged, they would be one transfer): each lane's first is
            // held and the rest wait behind it.
            TransferEngine.start(
                EngineConfig.defaults()
                    .withName("close-requester-long")
                    .withMerge(io.orbite.config.MergeConfig.defaults().withEnabled(false)))) {
      RegisteredMemory local = engine.allocate(REGION, Access.READ_WRITE);
      Pattern.fill(local.segment(), 0, REGION, LOCAL_SEED, 0);
      RemoteSegment segment = engine.openSegment(peer.endpoint(), Duration.ofSeconds(10));
      Batch batch = engine.allocateBatch(8);
      List<TransferRequest> reads = new ArrayList<>();
      for (int i = 0; i < 8; i++) {
        reads.add(
            TransferRequest.read(
                local, i * TASK, segment, AdversarialSource.REGION_ID, i * TASK, TASK));
      }
      batch.submit(reads);
      EngineOwed owed;
      try {
        // Nothing finishes within the timeout: the close waits all of it (thousands of polls),
        // then closes the lanes and answers.
        owed = engine.closeRequester(Duration.ofSeconds(6));
      } finally {
        release.countDown();
      }
      assertEquals(0, owed.tasksInFlight(), owed::toString);
      assertEquals(0, owed.loans(), owed::toString);
      for (TaskResult t : batch.status().tasks()) {
        assertEquals(TaskState.FAILED, t.state(), t::toString);
        assertTrue(t.locallyDrained(), t::toString);
      }
      batch.free();
      assertRegion(
          local.segment(), List.of(), LOCAL_SEED, "requester region: no READ was answered");
      assertRegion(peer.region(), List.of(), PEER_SEED, "peer region (READs change nothing there)");
      // Each lane's first READ was held, and the others waited behind it, unread.
      assertEquals(
          2, peer.ledger().received(Wire.Type.READ_REQUEST).size(), peer.ledger()::toString);
      assertEquals(List.of(), peer.ledger().answered(), "the peer answered nothing in time");
    }
  }

  /**
   * Each task against the ledger and both regions: a COMPLETED READ holds the peer's bytes and a
   * failed one holds only its guard (the peer sent nothing for it); a COMPLETED WRITE was applied
   * once and acknowledged, a failed one was never acknowledged and is UNKNOWN if it reached the
   * peer; the peer's region holds exactly the WRITEs it applied.
   */
  private static void checkEveryTask(
      List<TransferRequest> all,
      List<TaskResult> results,
      AdversarialSource peer,
      MemorySegment local) {
    Ledger ledger = peer.ledger();
    List<Span> localSpans = new ArrayList<>();
    List<Span> peerSpans = new ArrayList<>();
    for (int i = 0; i < all.size(); i++) {
      TransferRequest r = all.get(i);
      TaskResult t = results.get(i);
      assertTrue(t.state() == TaskState.COMPLETED || t.state() == TaskState.FAILED, t::toString);
      assertTrue(t.locallyDrained(), t::toString);
      long remote = r.remoteOffset();
      if (r.op() == Op.READ) {
        assertEquals(RemoteEffect.NONE, t.remoteEffect(), t::toString);
        if (t.completed()) {
          localSpans.add(new Span(r.localOffset(), TASK, PEER_SEED, remote));
        }
        continue;
      }
      WriteVerdict.check(ledger, t, r, LOCAL_SEED).ifPresent(peerSpans::add);
    }
    assertEquals(null, ledger.firstByteAppliedTwice());
    assertEquals(null, ledger.firstReplayedWrite());
    assertRegion(
        local, localSpans, LOCAL_SEED, "requester region: completed READs, guards elsewhere");
    assertRegion(
        peer.region(), peerSpans, PEER_SEED, "peer region: the WRITEs it applied, nothing else");
  }

  @Test
  void closeSourceUnderARequesterMidTransferEndsEveryTaskDrainedAndLeavesNoLoan() throws Exception {
    long region = 128L << 20;
    long task = 4L << 20;
    long sourceSeed = 0xE5;
    long requesterSeed = 0xE6;
    try (TransferEngine source =
            TransferEngine.start(EngineConfig.defaults().withName("closing-source-busy"));
        TransferEngine requester =
            TransferEngine.start(EngineConfig.defaults().withName("busy-requester"))) {
      RegisteredMemory served = source.allocate(region, Access.READ_WRITE);
      Pattern.fill(served.segment(), 0, region, sourceSeed, 0);
      RegisteredMemory local = requester.allocate(region, Access.READ_WRITE);
      Pattern.fill(local.segment(), 0, region, requesterSeed, 0);
      RemoteSegment peer =
          requester.openSegment(source.localSegment().endpoint(), Duration.ofSeconds(10));
      // READs of the source's first half into the requester's first half; WRITEs of the requester's
      // second half into the source's second half.
      List<TransferRequest> all = new ArrayList<>();
      for (int i = 0; i < 16; i++) {
        all.add(TransferRequest.read(local, i * task, peer, served.regionId(), i * task, task));
        long at = region / 2 + i * task;
        all.add(TransferRequest.write(local, at, peer, served.regionId(), at, task));
      }
      Batch batch = requester.allocateBatch(all.size());
      batch.submit(all);
      assertTrue(
          Await.until(
              Duration.ofSeconds(20),
              () ->
                  source.counters().sourceBytesRead() + source.counters().sourceBytesWritten() > 0),
          "bytes are moving");

      EngineOwed owed = source.closeSource(Duration.ofSeconds(10));
      assertEquals(0, owed.loans(), owed::toString);
      assertEquals(0, ((Registration) served).loans(), "no source lane holds the served memory");
      assertEquals(List.of(), owed.quarantined(), owed::toString);

      BatchStatus s = batch.await(Duration.ofSeconds(30));
      assertTrue(s.done(), s::toString);
      assertTrue(s.tasks().stream().anyMatch(t -> !t.completed()), "the close cut work off: " + s);
      for (TaskResult t : s.tasks()) {
        TransferRequest r = all.get(t.index());
        assertTrue(t.state() == TaskState.COMPLETED || t.state() == TaskState.FAILED, t::toString);
        assertTrue(t.locallyDrained(), t::toString);
        long at = r.localOffset();
        if (r.op() == Op.READ) {
          assertEquals(RemoteEffect.NONE, t.remoteEffect(), t::toString);
          if (t.completed()) {
            assertEquals(
                -1, Pattern.verify(local.segment(), at, task, sourceSeed, at), "a completed READ");
          } else {
            Bytes.assertEachByteIsOneOf(
                local.segment(), at, task, sourceSeed, at, requesterSeed, at, "a failed READ");
          }
        } else if (t.completed()) {
          assertEquals(RemoteEffect.APPLIED, t.remoteEffect(), t::toString);
          assertEquals(
              -1,
              Pattern.verify(served.segment(), at, task, requesterSeed, at),
              "a completed WRITE");
        } else {
          Bytes.assertEachByteIsOneOf(
              served.segment(), at, task, requesterSeed, at, sourceSeed, at, "a failed WRITE");
          // APPLIED (some frames acknowledged, the rest never sent) or UNKNOWN allow any of it to
          // have landed; NONE promises none did.
          boolean landed = Pattern.verify(served.segment(), at, task, sourceSeed, at) >= 0;
          assertTrue(
              !landed || t.remoteEffect() != RemoteEffect.NONE,
              () -> "bytes of it landed at the source, yet " + t);
        }
      }
      // Untouched: the requester's WRITE sources, and the source's READ half.
      assertEquals(
          -1,
          Pattern.verify(local.segment(), region / 2, region / 2, requesterSeed, region / 2),
          "requester's WRITE half");
      assertEquals(
          -1, Pattern.verify(served.segment(), 0, region / 2, sourceSeed, 0), "source's READ half");
      batch.free();
      assertTrue(
          Await.until(Duration.ofSeconds(10), () -> requester.owed().isIdle()),
          requester.owed()::toString);
      EngineOwed again = source.closeSource(Duration.ofSeconds(5));
      assertEquals(0, again.loans(), again::toString);
      assertEquals(owed.quarantined(), again.quarantined());
    }
  }

  @Test
  void closeSourceWithItsLanesBlockedMidPayloadEndsThemAndEveryLoanComesBack() throws Exception {
    long engineSeed = 0xE3;
    long writeSeed = 0xE4;
    long writeAt = 1L << 20;
    long writeCount = 8L << 20;
    long writeSent = 3L << 20;
    long readAt = 16L << 20;
    long readCount = 16L << 20; // the largest frame the source accepts (tcp.maxFramePayloadBytes)
    long region = 64L << 20;
    try (TransferEngine engine =
        TransferEngine.start(EngineConfig.defaults().withName("close-source"))) {
      RegisteredMemory served = engine.allocate(region, Access.READ_WRITE);
      Pattern.fill(served.segment(), 0, region, engineSeed, 0);
      String[] hostPort = engine.localSegment().endpoint().split(":");
      String host = hostPort[0];
      int port = Integer.parseInt(hostPort[1]);
      long epoch = engine.localSegment().epoch();
      long me = ThreadLocalRandom.current().nextLong() | 1;
      try (AdversarialRequester writer = AdversarialRequester.open(host, port, epoch, me, 0);
          AdversarialRequester reader = AdversarialRequester.open(host, port, epoch, me, 1)) {
        writer.writePart(served.regionId(), writeAt, writeCount, writeSent, writeSeed);
        reader.read(served.regionId(), readAt, readCount);
        // Both source lanes now hold a loan: one blocked reading the WRITE's payload, one blocked
        // writing a READ response nobody reads.
        assertTrue(
            Await.until(Duration.ofSeconds(20), () -> ((Registration) served).loans() == 2),
            () -> "both source lanes took their loans: " + ((Registration) served).loans());

        EngineOwed owed = engine.closeSource(Duration.ofSeconds(10));
        assertEquals(0, owed.loans(), owed::toString);
        assertEquals(0, ((Registration) served).loans(), "no source lane holds the memory");
        assertEquals(List.of(), owed.quarantined(), owed::toString);

        // The engine closed both lanes: the writer sees its lane end without an acknowledgement,
        // the reader gets at most the start of the response, then the end.
        assertEquals(
            0,
            writer.drainUntilClosed(10_000),
            "the engine closed the WRITE lane without acknowledging it");
        Wire.Header h = reader.response(10_000);
        assertTrue(
            h == null || (h.type() == Wire.Type.READ_RESPONSE && h.status() == Wire.OK),
            () -> "got " + h);
        assertTrue(reader.drainUntilClosed(10_000) >= 0, "the engine closed the READ lane");
        assertThrows(
            IOException.class,
            () -> AdversarialRequester.open(host, port, epoch, me, 2),
            "after closeSource the engine takes no new lane");

        // The engine's region: outside the WRITE only its own bytes; inside, a prefix of at most
        // what was sent of the WRITE, then its own bytes.
        MemorySegment m = served.segment();
        long prefix = 0;
        while (prefix < writeSent
            && m.get(java.lang.foreign.ValueLayout.JAVA_BYTE, writeAt + prefix)
                == Pattern.at(writeSeed, writeAt + prefix)) {
          prefix++;
        }
        assertRegion(
            m,
            List.of(new Span(writeAt, prefix, writeSeed, writeAt)),
            engineSeed,
            "engine region after closeSource (a WRITE prefix of " + prefix + " B)");
        EngineOwed again = engine.closeSource(Duration.ofSeconds(5));
        assertEquals(0, again.loans(), again::toString);
        assertEquals(owed.quarantined(), again.quarantined());
      }
    }
  }
}
