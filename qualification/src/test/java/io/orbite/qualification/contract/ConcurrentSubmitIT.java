package io.orbite.qualification.contract;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.orbite.config.EngineConfig;
import io.orbite.engine.Access;
import io.orbite.engine.Batch;
import io.orbite.engine.BatchStatus;
import io.orbite.engine.EngineOwed;
import io.orbite.engine.ErrorKind;
import io.orbite.engine.RegisteredMemory;
import io.orbite.engine.RemoteSegment;
import io.orbite.engine.TransferEngine;
import io.orbite.engine.TransferException;
import io.orbite.engine.TransferRequest;
import io.orbite.qualification.verify.Pattern;
import io.orbite.qualification.verify.RegionCheck;
import io.orbite.qualification.verify.Span;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Random;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/**
 * Budgets are charged on the submitting threads (C9): 8 threads submit groups of READs at once,
 * each to a batch of its own, against a task budget (12 in flight) far smaller than their demand. A
 * refused submission must have moved nothing: every attempt uses slots of its own, and a refused
 * one's slots still hold the guard pattern at the end. An accepted one's slots hold the source's
 * bytes. Afterwards nothing is charged.
 */
class ConcurrentSubmitIT {
  private static final int THREADS = 8;
  private static final int ATTEMPTS = 150;
  private static final int MAX_GROUP = 8;
  private static final long TASK = 4096;
  private static final long SRC_LEN = 1 << 20;
  private static final long SEED_SRC = 0xC0C0_0001L;
  private static final long SEED_GUARD = 0xC0C0_0002L;

  @Test
  void concurrentSubmittersAreRefusedBeforeAnySideEffectAndAcceptedOnesMoveExactlyTheirBytes()
      throws Exception {
    TransferEngine source =
        TransferEngine.start(EngineConfig.defaults().withName("concurrent-source"));
    EngineConfig tight = EngineConfig.defaults().withName("concurrent-requester");
    tight = tight.withBudgets(tight.budgets().withMaxTasksInFlight(12));
    TransferEngine requester = TransferEngine.start(tight);
    try {
      RegisteredMemory src = source.allocate(SRC_LEN, Access.READ_WRITE);
      Pattern.fill(src.segment(), 0, SRC_LEN, SEED_SRC, 0);
      long perThread = (long) ATTEMPTS * MAX_GROUP * TASK;
      RegisteredMemory local = requester.allocate(THREADS * perThread, Access.READ_WRITE);
      Pattern.fill(local.segment(), 0, local.lengthBytes(), SEED_GUARD, 0);
      RemoteSegment remote =
          requester.openSegment(source.localSegment().endpoint(), Duration.ofSeconds(10));

      List<Span> landed = Collections.synchronizedList(new ArrayList<>());
      AtomicInteger accepted = new AtomicInteger();
      AtomicInteger refused = new AtomicInteger();
      List<Throwable> problems = Collections.synchronizedList(new ArrayList<>());
      CountDownLatch go = new CountDownLatch(1);
      List<Thread> threads = new ArrayList<>();
      for (int t = 0; t < THREADS; t++) {
        int thread = t;
        threads.add(
            Thread.ofPlatform()
                .name("submitter-" + t)
                .start(
                    () -> {
                      Random random = new Random(thread);
                      try {
                        Batch batch = requester.allocateBatch(ATTEMPTS * MAX_GROUP);
                        go.await();
                        for (int a = 0; a < ATTEMPTS; a++) {
                          int group = 1 + random.nextInt(MAX_GROUP);
                          long base = thread * perThread + (long) a * MAX_GROUP * TASK;
                          List<TransferRequest> reads = new ArrayList<>();
                          List<Span> spans = new ArrayList<>();
                          for (int i = 0; i < group; i++) {
                            long localOff = base + i * TASK;
                            long remoteOff = random.nextInt((int) (SRC_LEN / TASK)) * TASK;
                            reads.add(
                                TransferRequest.read(
                                    local, localOff, remote, src.regionId(), remoteOff, TASK));
                            spans.add(new Span(localOff, TASK, SEED_SRC, remoteOff));
                          }
                          try {
                            batch.submit(reads);
                          } catch (TransferException e) {
                            if (e.kind() != ErrorKind.RESOURCE_EXHAUSTED) {
                              throw e;
                            }
                            refused.incrementAndGet();
                            continue;
                          }
                          BatchStatus status = batch.await(Duration.ofSeconds(20));
                          if (!status.allCompleted()) {
                            throw new AssertionError(
                                "thread " + thread + " attempt " + a + ": " + status);
                          }
                          accepted.incrementAndGet();
                          landed.addAll(spans);
                        }
                        batch.free();
                      } catch (Throwable e) {
                        problems.add(e);
                      }
                    }));
      }
      go.countDown();
      for (Thread t : threads) {
        t.join();
      }
      assertEquals(List.of(), problems, "submitter threads");
      assertTrue(
          refused.get() > 0,
          "the budgets were contended: " + accepted + " accepted, " + refused + " refused");
      assertTrue(accepted.get() > 0, "some submissions were accepted");
      // Accepted slots hold the source's bytes; every other byte (refused attempts' slots, unused
      // slots) still holds the guard pattern.
      long bad = RegionCheck.check(local.segment(), landed, SEED_GUARD);
      assertEquals(-1, bad, () -> "first wrong requester byte at " + bad);
      assertEquals(
          -1, Pattern.verify(src.segment(), 0, SRC_LEN, SEED_SRC, 0), "the source is untouched");
      EngineOwed owed = requester.owed();
      assertTrue(
          owed.isIdle()
              && owed.tasksInFlight() == 0
              && owed.bytesInFlight() == 0
              && owed.batches() == 0,
          owed::toString);
    } finally {
      requester.close(Duration.ofSeconds(20));
      source.close(Duration.ofSeconds(20));
    }
  }
}
