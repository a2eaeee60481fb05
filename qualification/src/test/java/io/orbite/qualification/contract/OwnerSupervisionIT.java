package io.orbite.qualification.contract;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.orbite.config.EngineConfig;
import io.orbite.engine.Access;
import io.orbite.engine.Batch;
import io.orbite.engine.BatchStatus;
import io.orbite.engine.EngineOwed;
import io.orbite.engine.ErrorKind;
import io.orbite.engine.QuarantinedOwner;
import io.orbite.engine.RegisteredMemory;
import io.orbite.engine.RemoteSegment;
import io.orbite.engine.TaskResult;
import io.orbite.engine.TaskState;
import io.orbite.engine.TransferEngine;
import io.orbite.engine.TransferException;
import io.orbite.engine.TransferRequest;
import io.orbite.engine.fault.FaultHooks;
import io.orbite.engine.fault.FaultInjection;
import io.orbite.qualification.Await;
import io.orbite.qualification.harness.EngineProcess;
import io.orbite.qualification.verify.Pattern;
import io.orbite.qualification.verify.RegionCheck;
import io.orbite.qualification.verify.Span;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.function.Executable;
import org.junit.jupiter.api.io.CleanupMode;
import org.junit.jupiter.api.io.TempDir;

/**
 * Supervision of the engine's owners: an unexpected exception inside the Registry, the SegmentTable
 * or Admission (injected through {@link FaultHooks#beforeOwnerMessage}) turns that owner
 * quarantined. Calls that need it fail UNAVAILABLE naming it within 100 ms, not after an ask's
 * timeout; it is listed by {@code quarantined()} with the charges it held, which stay held; and the
 * rest of the engine keeps moving bytes, checked with their guards.
 */
class OwnerSupervisionIT {
  private static final Duration PROMPT = Duration.ofMillis(100);
  private static final long REGION = 4L << 20;
  private static final long TASK = 256L << 10;

  /** Throws once, inside the owner it is armed for, as an invariant check of that owner would. */
  private static final class ThrowingOwner implements FaultHooks {
    private final AtomicReference<String> armed = new AtomicReference<>();

    void arm(String owner) {
      armed.set(owner);
    }

    @Override
    public void beforeOwnerMessage(String owner, Object message) {
      // By value: an owner's name may be built at run time (transport-tcp), not a constant.
      String want = armed.get();
      if (owner.equals(want) && armed.compareAndSet(want, null)) {
        throw new IllegalStateException("injected invariant failure in " + owner);
      }
    }
  }

  @Test
  void aFailedOwnerIsQuarantinedAnswersAtOnceAndTheRestKeepsMovingBytes(
      @TempDir(cleanup = CleanupMode.ON_SUCCESS) Path logs) throws Exception {
    ThrowingOwner hook = new ThrowingOwner();
    try (EngineProcess source = EngineProcess.start("supervision-source", logs, Map.of());
        TransferEngine requester =
            FaultInjection.start(EngineConfig.defaults().withName("supervised"), hook)) {
      long remote = Long.parseLong(source.call("ALLOC " + REGION + " READ_WRITE"));
      source.call("FILL " + remote + " 41");
      RegisteredMemory local = requester.allocate(REGION, Access.READ_WRITE);
      RegisteredMemory second = requester.allocate(1L << 20, Access.READ_WRITE);
      RemoteSegment peer = requester.openSegment(source.endpoint(), Duration.ofSeconds(10));
      long guard = 42;
      Pattern.fill(local.segment(), 0, REGION, guard, 0);
      List<Span> landed = new java.util.ArrayList<>();
      assertRead(requester, local, peer, remote, 0, guard, landed, "before any failure");

      // The Registry fails on the next registration: that call and every later one are refused at
      // once.
      hook.arm("Registry");
      TransferException first =
          refusedPromptly(() -> requester.allocate(1L << 20, Access.READ_WRITE));
      assertTrue(
          first.getMessage().contains("Registry")
              && first.getMessage().contains("quarantined")
              && first.getMessage().contains("injected invariant failure"),
          first.getMessage());
      TransferException again =
          refusedPromptly(() -> requester.allocate(1L << 20, Access.READ_WRITE));
      assertTrue(
          again.getMessage().contains("Registry") && again.getMessage().contains("quarantined"),
          again.getMessage());
      refusedPromptly(() -> requester.unregister(second));
      QuarantinedOwner registry = quarantined(requester, "Registry");
      assertEquals(QuarantinedOwner.Kind.OWNER, registry.kind());
      assertTrue(
          registry.reason().contains("registrations=2"),
          () -> "listed with what it held: " + registry);

      // The registrations it held stay usable: READ and WRITE move verified bytes.
      assertRead(
          requester, local, peer, remote, TASK, guard, landed, "with the Registry quarantined");
      assertWrite(requester, local, source, peer, remote, landed);

      // The SegmentTable fails on the next open: refused at once; the segment already open still
      // works.
      hook.arm("SegmentTable");
      TransferException open =
          refusedPromptly(() -> requester.openSegment(source.endpoint(), Duration.ofSeconds(10)));
      assertTrue(
          open.getMessage().contains("SegmentTable") && open.getMessage().contains("quarantined"),
          open.getMessage());
      refusedPromptly(() -> requester.openSegment(source.endpoint(), Duration.ofSeconds(10)));
      refusedPromptly(requester::peers);
      assertTrue(
          quarantined(requester, "SegmentTable").reason().contains("entries=1"),
          () -> requester.quarantined().toString());
      assertRead(
          requester,
          local,
          peer,
          remote,
          2 * TASK,
          guard,
          landed,
          "with the SegmentTable quarantined");

      // The engine closes, and says what it could not give back.
      EngineOwed owed = requester.close(Duration.ofSeconds(20));
      List<String> names = owed.quarantined().stream().map(QuarantinedOwner::owner).toList();
      assertTrue(names.containsAll(List.of("Registry", "SegmentTable")), owed::toString);
    }
  }

  @Test
  void aFailedAdmissionRefusesEndpointChargesAsUnavailable(
      @TempDir(cleanup = CleanupMode.ON_SUCCESS) Path logs) throws Exception {
    ThrowingOwner hook = new ThrowingOwner();
    try (EngineProcess source = EngineProcess.start("supervision-source-2", logs, Map.of());
        TransferEngine requester =
            FaultInjection.start(EngineConfig.defaults().withName("supervised-2"), hook)) {
      long remote = Long.parseLong(source.call("ALLOC " + REGION + " READ_WRITE"));
      source.call("FILL " + remote + " 51");
      RegisteredMemory local = requester.allocate(REGION, Access.READ_WRITE);
      hook.arm("Admission");
      // The open's endpoint charge reaches the failing Admission (or its once-a-second report tick
      // does first): either way the open is refused UNAVAILABLE naming it, and nothing is charged.
      TransferException e =
          assertThrows(
              TransferException.class,
              () -> requester.openSegment(source.endpoint(), Duration.ofSeconds(10)));
      assertEquals(ErrorKind.UNAVAILABLE, e.kind(), e::getMessage);
      assertTrue(
          e.getMessage().contains("Admission") && e.getMessage().contains("quarantined"),
          e.getMessage());
      assertEquals(0, requester.owed().endpoints(), requester.owed()::toString);
      assertEquals(QuarantinedOwner.Kind.OWNER, quarantined(requester, "Admission").kind());
      // Batches and tasks are charged on the callers' threads, not by Admission: they still run,
      // here over a file segment of this engine (no peer needed).
      Path file = logs.resolve("supervised.dat");
      java.nio.file.Files.write(file, new byte[(int) TASK]);
      RemoteSegment seg =
          requester.openFileSegment(file, Access.READ_WRITE, Duration.ofSeconds(10));
      Pattern.fill(local.segment(), 0, REGION, 52, 0);
      Batch b = requester.allocateBatch(1);
      b.submit(
          List.of(
              TransferRequest.write(local, 0, seg, seg.regions().getFirst().regionId(), 0, TASK)));
      TaskResult w = b.await(Duration.ofSeconds(30)).tasks().getFirst();
      assertEquals(TaskState.COMPLETED, w.state(), w::toString);
      b.free();
      byte[] written = java.nio.file.Files.readAllBytes(file);
      for (int i = 0; i < written.length; i++) {
        assertEquals(Pattern.at(52, i), written[i], "file byte " + i);
      }
    }
  }

  @Test
  void aFailedTransportSupervisorOrBatchOwnerIsQuarantinedAndTheRestKeepsMovingBytes(
      @TempDir(cleanup = CleanupMode.ON_SUCCESS) Path logs) throws Exception {
    ThrowingOwner hook = new ThrowingOwner();
    try (TransferEngine source = TransferEngine.start(EngineConfig.defaults().withName("tcp-src"));
        TransferEngine requester =
            FaultInjection.start(EngineConfig.defaults().withName("supervised-3"), hook)) {
      RegisteredMemory local = requester.allocate(REGION, Access.READ_WRITE);
      Pattern.fill(local.segment(), 0, REGION, 61, 0);
      // The TCP transport's supervisor throws: the open that needs it fails UNAVAILABLE naming it
      // (its refusal answers the SegmentTable at once), and it is listed with what it held.
      hook.arm("transport-tcp");
      TransferException open =
          assertThrows(
              TransferException.class,
              () -> requester.openSegment(source.localSegment(), Duration.ofSeconds(10)));
      assertEquals(ErrorKind.UNAVAILABLE, open.kind(), open::getMessage);
      assertTrue(
          open.getMessage().contains("transport-tcp") && open.getMessage().contains("quarantined"),
          open.getMessage());
      assertEquals(QuarantinedOwner.Kind.OWNER, quarantined(requester, "transport-tcp").kind());
      // The refused open's endpoint charge is given back when the SegmentTable takes the refusal,
      // which may be just after the caller saw it.
      Await.until(Duration.ofSeconds(10), () -> requester.owed().endpoints() == 0);
      assertEquals(0, requester.owed().endpoints(), requester.owed()::toString);

      // The first batch's owner throws on its first message (the watchdog's Arm at submit): the
      // batch is listed, and its task, which runs on the caller's and the lane's threads, still
      // moves exactly its bytes, here into a file segment (the file transport is untouched).
      Path file = logs.resolve("supervised-3.dat");
      java.nio.file.Files.write(file, new byte[(int) (2 * TASK)]);
      RemoteSegment seg =
          requester.openFileSegment(file, Access.READ_WRITE, Duration.ofSeconds(10));
      hook.arm("batch-1");
      Batch b = requester.allocateBatch(1);
      b.submit(
          List.of(
              TransferRequest.write(
                  local, 0, seg, seg.regions().getFirst().regionId(), TASK / 2, TASK)));
      TaskResult w = b.await(Duration.ofSeconds(30)).tasks().getFirst();
      assertEquals(TaskState.COMPLETED, w.state(), w::toString);
      assertTrue(
          Await.until(Duration.ofSeconds(5), () -> requester.quarantined().size() == 2),
          () -> "the batch owner is listed: " + requester.quarantined());
      assertEquals(QuarantinedOwner.Kind.OWNER, quarantined(requester, "batch-1").kind());
      b.free();
      byte[] written = java.nio.file.Files.readAllBytes(file);
      for (int i = 0; i < written.length; i++) {
        byte expected = i < TASK / 2 || i >= TASK / 2 + TASK ? 0 : Pattern.at(61, i - TASK / 2);
        assertEquals(expected, written[i], "file byte " + i);
      }
      EngineOwed owed = requester.close(Duration.ofSeconds(30));
      assertTrue(
          owed.quarantined().stream()
              .map(QuarantinedOwner::owner)
              .toList()
              .containsAll(List.of("transport-tcp", "batch-1")),
          owed::toString);
    }
  }

  /** The call fails UNAVAILABLE within {@link #PROMPT}. */
  private static TransferException refusedPromptly(Executable call) {
    long start = System.nanoTime();
    TransferException e = assertThrows(TransferException.class, call);
    long elapsed = System.nanoTime() - start;
    assertEquals(ErrorKind.UNAVAILABLE, e.kind(), e::getMessage);
    assertTrue(
        elapsed <= PROMPT.toNanos(),
        () -> "refused after " + elapsed / 1_000_000 + " ms: " + e.getMessage());
    return e;
  }

  private static QuarantinedOwner quarantined(TransferEngine engine, String owner) {
    return engine.quarantined().stream()
        .filter(q -> q.owner().equals(owner))
        .findFirst()
        .orElseThrow(() -> new AssertionError(owner + " not listed: " + engine.quarantined()));
  }

  /**
   * READs {@code [at, +TASK)} of the source into the same offset, adds it to {@code landed}, and
   * checks the whole local region: every span landed so far, and the guard pattern everywhere else.
   */
  private static void assertRead(
      TransferEngine requester,
      RegisteredMemory local,
      RemoteSegment peer,
      long remote,
      long at,
      long guard,
      List<Span> landed,
      String when) {
    Batch b = requester.allocateBatch(1);
    b.submit(List.of(TransferRequest.read(local, at, peer, remote, at, TASK)));
    BatchStatus s = b.await(Duration.ofSeconds(30));
    b.free();
    TaskResult r = s.tasks().getFirst();
    assertEquals(TaskState.COMPLETED, r.state(), () -> when + ": " + r);
    landed.add(new Span(at, TASK, 41, at));
    assertEquals(-1, RegionCheck.check(local.segment(), landed, guard), when);
  }

  /**
   * WRITEs a fresh pattern from the local region's last TASK bytes (added to {@code landed}) and
   * checks the source.
   */
  private static void assertWrite(
      TransferEngine requester,
      RegisteredMemory local,
      EngineProcess source,
      RemoteSegment peer,
      long remote,
      List<Span> landed)
      throws Exception {
    long at = REGION - TASK;
    Pattern.fill(local.segment(), at, TASK, 43, 0);
    landed.add(new Span(at, TASK, 43, 0));
    Batch b = requester.allocateBatch(1);
    b.submit(List.of(TransferRequest.write(local, at, peer, remote, at, TASK)));
    TaskResult w = b.await(Duration.ofSeconds(30)).tasks().getFirst();
    b.free();
    assertEquals(TaskState.COMPLETED, w.state(), w::toString);
    assertEquals(
        "OK",
        source.ask("VERIFY " + remote + " 41 1", List.of(at + " " + TASK + " 43 0")),
        "the source holds the WRITE's bytes and its own pattern around them");
  }
}
