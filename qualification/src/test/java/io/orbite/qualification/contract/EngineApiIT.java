package io.orbite.qualification.contract;

import static io.orbite.qualification.contract.EnginePair.assertRegion;
import static org.junit.jupiter.api.Assertions.assertAll;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import io.orbite.config.EngineConfig;
import io.orbite.engine.Access;
import io.orbite.engine.Batch;
import io.orbite.engine.BatchStatus;
import io.orbite.engine.ErrorKind;
import io.orbite.engine.RegisteredMemory;
import io.orbite.engine.RemoteSegment;
import io.orbite.engine.TransferEngine;
import io.orbite.engine.TransferException;
import io.orbite.engine.TransferRequest;
import io.orbite.qualification.verify.Pattern;
import io.orbite.qualification.verify.Span;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.function.Executable;

/**
 * The public API's argument checks and lifecycles: what each call refuses, with which kind, and
 * that the calls that succeed move exactly the bytes they should.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class EngineApiIT {
  private static final long KIB = 1024;
  private static final long SRC_LEN = 512 * KIB;
  private static final long SEED_SRC = 0xE1A1_0001L;
  private static final long SEED_LOCAL = 0xE1A1_0002L;
  private static final long SEED_CALLER = 0xE1A1_0003L;
  private static final Duration AWAIT = Duration.ofSeconds(15);
  private static final Duration OPEN = Duration.ofSeconds(10);

  private EnginePair pair;
  private RegisteredMemory src;
  private RemoteSegment remote;

  @BeforeAll
  void start() {
    pair = new EnginePair();
    src = EnginePair.guarded(pair.source, SRC_LEN, Access.READ_WRITE, SEED_SRC);
    remote = pair.open();
  }

  @AfterAll
  void stop() {
    if (pair != null) {
      pair.close();
    }
  }

  @Test
  void allocateOfZeroOrNegativeBytesIsInvalidArgumentAndAPositiveAllocationIsZeroed() {
    assertRefused(
        () -> pair.requester.allocate(0, Access.READ_WRITE),
        ErrorKind.INVALID_ARGUMENT,
        "bytes must be positive");
    assertRefused(
        () -> pair.requester.allocate(-1, Access.READ_WRITE),
        ErrorKind.INVALID_ARGUMENT,
        "bytes must be positive");
    assertRefused(
        () -> pair.requester.allocate(Long.MIN_VALUE, Access.READ),
        ErrorKind.INVALID_ARGUMENT,
        "bytes must be positive");
    assertRefused(
        () -> pair.requester.allocate(4096, null), ErrorKind.INVALID_ARGUMENT, "access is null");

    RegisteredMemory m = pair.requester.allocate(100_003, Access.READ_WRITE);
    try {
      assertEquals(100_003, m.lengthBytes());
      assertTrue(m.engineOwned());
      assertEquals(0, m.segment().address() % 64, "engine memory is 64-byte aligned");
      try (Arena arena = Arena.ofConfined()) {
        MemorySegment zeros = arena.allocate(100_003);
        assertEquals(
            -1,
            MemorySegment.mismatch(m.segment(), 0, 100_003, zeros, 0, 100_003),
            "allocated memory must be zeroed");
      }
    } finally {
      pair.requester.unregister(m);
    }
  }

  @Test
  void registerOfAHeapSegmentIsInvalidArgumentAndLeavesTheArrayAlone() {
    byte[] heap = new byte[16];
    Pattern.fill(MemorySegment.ofArray(heap), 0, 16, SEED_CALLER, 0);
    assertRefused(
        () -> pair.requester.register(MemorySegment.ofArray(heap), Access.READ_WRITE),
        ErrorKind.INVALID_ARGUMENT,
        "heap segments cannot be registered");
    assertRegion(
        MemorySegment.ofArray(heap), List.of(), SEED_CALLER, "heap array after a refused register");
    try (Arena arena = Arena.ofConfined()) {
      assertRefused(
          () -> pair.requester.register(arena.allocate(64).asSlice(0, 0), Access.READ),
          ErrorKind.INVALID_ARGUMENT,
          "empty");
    }
    assertRefused(
        () -> pair.requester.register(null, Access.READ),
        ErrorKind.INVALID_ARGUMENT,
        "must not be null");
  }

  @Test
  void callerOwnedNativeMemoryReceivesTransfersAndSurvivesUnregisterUnchanged() {
    long len = 256 * KIB;
    try (Arena arena = Arena.ofShared()) {
      MemorySegment mine = arena.allocate(len, 64);
      Pattern.fill(mine, 0, len, SEED_CALLER, 0);
      RegisteredMemory registered = pair.requester.register(mine, Access.READ_WRITE);
      assertFalse(registered.engineOwned(), "caller memory is not engine-owned");
      assertEquals(
          mine.address(),
          registered.segment().address(),
          "the engine uses the caller's memory in place");

      Batch batch = pair.requester.allocateBatch(2);
      try {
        batch.submit(
            List.of(
                TransferRequest.read(registered, 1000, remote, src.regionId(), 3000, 100 * KIB),
                TransferRequest.write(
                    registered, 150 * KIB, remote, src.regionId(), 300 * KIB, 50 * KIB)));
        assertAllCompleted(batch, 2, 150 * KIB);
      } finally {
        batch.free();
      }
      List<Span> mineSpans = List.of(new Span(1000, 100 * KIB, SEED_SRC, 3000));
      assertRegion(mine, mineSpans, SEED_CALLER, "caller memory after a READ into it");
      assertRegion(
          src.segment(),
          List.of(new Span(300 * KIB, 50 * KIB, SEED_CALLER, 150 * KIB)),
          SEED_SRC,
          "source region after a WRITE from caller memory");

      pair.requester.unregister(registered);
      // Still the caller's: readable, and exactly as the transfer left it.
      assertRegion(mine, mineSpans, SEED_CALLER, "caller memory after unregister");
      assertRefused(
          () -> {
            Batch after = pair.requester.allocateBatch(1);
            try {
              after.submit(
                  List.of(TransferRequest.read(registered, 0, remote, src.regionId(), 0, 4096)));
            } finally {
              after.free();
            }
          },
          ErrorKind.INVALID_ARGUMENT,
          "unregistered");
      assertRegion(
          mine,
          mineSpans,
          SEED_CALLER,
          "caller memory after a refused use of its old registration");
    } finally {
      Pattern.fill(src.segment(), 0, SRC_LEN, SEED_SRC, 0);
    }
  }

  @Test
  void malformedEndpointsAreInvalidArgument() {
    for (String endpoint :
        new String[] {"nonsense", "host:", "host:70000", ":1234", "host:0", "host:port", ""}) {
      TransferException e =
          assertThrows(
              TransferException.class,
              () -> pair.requester.openSegment(endpoint, OPEN),
              () -> "openSegmentAsync(\"" + endpoint + "\") must be refused");
      assertEquals(
          ErrorKind.INVALID_ARGUMENT,
          e.kind(),
          () -> "openSegmentAsync(\"" + endpoint + "\"): " + e.getMessage());
    }
    assertRegion(src.segment(), List.of(), SEED_SRC, "source region");
  }

  @Test
  void openSegmentToAClosedPortIsUnavailable() throws IOException {
    int port;
    try (ServerSocket probe = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
      port = probe.getLocalPort();
    }
    String endpoint = "127.0.0.1:" + port;
    TransferException e =
        assertThrows(
            TransferException.class,
            () -> pair.requester.openSegment(endpoint, OPEN),
            "nothing listens at " + endpoint);
    assertEquals(ErrorKind.UNAVAILABLE, e.kind(), e::getMessage);
    assertTrue(
        e.getMessage().contains(String.valueOf(port)),
        () -> "the failure names the peer: " + e.getMessage());
    // The failed open left the engine usable.
    readAndCheck(pair.requester, remote);
  }

  @Test
  void unregisterTwiceIsInvalidArgumentTheSecondTime() {
    RegisteredMemory m =
        EnginePair.guarded(pair.requester, 64 * KIB, Access.READ_WRITE, SEED_LOCAL);
    pair.requester.unregister(m);
    assertRefused(
        () -> pair.requester.unregister(m), ErrorKind.INVALID_ARGUMENT, "region " + m.regionId());
    assertRefused(
        () -> pair.requester.unregister(null), ErrorKind.INVALID_ARGUMENT, "memory is null");
    readAndCheck(pair.requester, remote);
  }

  @Test
  void engineSpawnedInAHostSystemTransfersAndItsCloseLeavesTheHostRunning() {
    ActorSystem<Void> host = ActorSystem.create(Behaviors.empty(), "host");
    try {
      TransferEngine hosted =
          TransferEngine.spawn(host, EngineConfig.defaults().withName("hosted-one"));
      assertSame(host, hosted.system(), "a spawned engine runs in the host's system");
      try {
        RemoteSegment seg = hosted.openSegment(pair.source.localSegment().endpoint(), OPEN);
        readAndCheck(hosted, seg);
      } finally {
        hosted.close(Duration.ofSeconds(20));
      }
      assertFalse(
          host.getWhenTerminated().toCompletableFuture().isDone(),
          "closing a spawned engine must leave the host system running");

      // The host is not merely alive but usable: a second engine spawns in it and transfers.
      TransferEngine again =
          TransferEngine.spawn(host, EngineConfig.defaults().withName("hosted-two"));
      try {
        RemoteSegment seg = again.openSegment(pair.source.localSegment().endpoint(), OPEN);
        readAndCheck(again, seg);
      } finally {
        again.close(Duration.ofSeconds(20));
      }
      assertFalse(
          host.getWhenTerminated().toCompletableFuture().isDone(),
          "closing the second spawned engine must leave the host system running");
    } finally {
      host.terminate();
      host.getWhenTerminated().toCompletableFuture().orTimeout(30, TimeUnit.SECONDS).join();
    }
  }

  /**
   * A freed batch answers a second free at once, from its handle, as INVALID_ARGUMENT ("already
   * freed"). The second free runs on another thread with a 5 s deadline so that a regression (an
   * ask that is never answered) fails the test instead of blocking it.
   */
  @Test
  void freeOfAFinishedBatchWorksAndASecondFreeIsRefusedPromptlyAsAlreadyFreed() throws Exception {
    RegisteredMemory local =
        EnginePair.guarded(pair.requester, 128 * KIB, Access.READ_WRITE, SEED_LOCAL);
    try {
      Batch batch = pair.requester.allocateBatch(1);
      batch.submit(
          List.of(TransferRequest.read(local, 512, remote, src.regionId(), 1024, 64 * KIB)));
      assertAllCompleted(batch, 1, 64 * KIB);
      batch.free();
      assertRegion(
          local.segment(),
          List.of(new Span(512, 64 * KIB, SEED_SRC, 1024)),
          SEED_LOCAL,
          "requester region after the freed batch's READ");

      CompletableFuture<Void> second = CompletableFuture.runAsync(batch::free);
      try {
        second.get(5, TimeUnit.SECONDS);
        fail("a second free() of the same batch was silently accepted");
      } catch (ExecutionException e) {
        Throwable cause = unwrap(e);
        assertInstanceOf(
            TransferException.class,
            cause,
            () -> "a second free must throw TransferException: " + cause);
        TransferException te = (TransferException) cause;
        assertEquals(ErrorKind.INVALID_ARGUMENT, te.kind(), te::getMessage);
        assertTrue(te.getMessage().contains("already freed"), te::getMessage);
      } catch (TimeoutException e) {
        fail("a second free() issued after the first one returned was not answered within 5 s");
      }
      assertRegion(
          local.segment(),
          List.of(new Span(512, 64 * KIB, SEED_SRC, 1024)),
          SEED_LOCAL,
          "requester region after a second free");
      assertRegion(src.segment(), List.of(), SEED_SRC, "source region");
    } finally {
      pair.requester.unregister(local);
    }
  }

  /**
   * A second free of the same batch, right after the first, is refused at once with a {@link
   * TransferException} (the handle was released), and the batch's bytes stay as the READ left them.
   */
  @Test
  void aSecondFreeRightAfterTheFirstIsRefusedAtOnceWithATransferException() throws Exception {
    RegisteredMemory local =
        EnginePair.guarded(pair.requester, 128 * KIB, Access.READ_WRITE, SEED_LOCAL);
    try {
      Batch batch = pair.requester.allocateBatch(1);
      batch.submit(
          List.of(TransferRequest.read(local, 2048, remote, src.regionId(), 333, 32 * KIB)));
      assertAllCompleted(batch, 1, 32 * KIB);
      batch.free();
      long before = System.nanoTime();
      TransferException second = assertThrows(TransferException.class, batch::free);
      assertEquals(ErrorKind.INVALID_ARGUMENT, second.kind(), second::getMessage);
      assertTrue(
          System.nanoTime() - before < TimeUnit.SECONDS.toNanos(5),
          "a second free() must be answered at once");
      assertRegion(
          local.segment(),
          List.of(new Span(2048, 32 * KIB, SEED_SRC, 333)),
          SEED_LOCAL,
          "requester region after the batch's READ and two frees");
      assertRegion(src.segment(), List.of(), SEED_SRC, "source region");
    } finally {
      pair.requester.unregister(local);
    }
  }

  // ---------------------------------------------------------------- helpers

  /**
   * READs 64 KiB of the source into a fresh guarded region of {@code engine} and checks both sides.
   */
  private void readAndCheck(TransferEngine engine, RemoteSegment segment) {
    RegisteredMemory local = EnginePair.guarded(engine, 96 * KIB, Access.READ_WRITE, SEED_LOCAL);
    try {
      Batch batch = engine.allocateBatch(1);
      try {
        batch.submit(
            List.of(
                TransferRequest.read(local, 4 * KIB, segment, src.regionId(), 7 * KIB, 64 * KIB)));
        assertAllCompleted(batch, 1, 64 * KIB);
      } finally {
        batch.free();
      }
      assertRegion(
          local.segment(),
          List.of(new Span(4 * KIB, 64 * KIB, SEED_SRC, 7 * KIB)),
          SEED_LOCAL,
          "requester region after a 64 KiB READ");
      assertRegion(src.segment(), List.of(), SEED_SRC, "source region after a READ");
    } finally {
      engine.unregister(local);
    }
  }

  private static Throwable unwrap(ExecutionException e) {
    Throwable cause = e.getCause();
    return cause instanceof CompletionException ce && ce.getCause() != null ? ce.getCause() : cause;
  }

  private static void assertRefused(Executable call, ErrorKind kind, String fragment) {
    TransferException e =
        assertThrows(TransferException.class, call, "must be refused with " + kind);
    assertEquals(kind, e.kind(), e::getMessage);
    assertTrue(
        e.getMessage().contains(fragment),
        () -> "refusal must name '" + fragment + "': " + e.getMessage());
  }

  private static void assertAllCompleted(Batch batch, int tasks, long bytes) {
    BatchStatus status = batch.await(AWAIT);
    assertAll(
        "batch " + status,
        () -> assertTrue(status.allCompleted(), "every task completed within " + AWAIT),
        () -> assertEquals(tasks, status.tasks().size(), "tasks"),
        () -> assertEquals(bytes, status.completedBytes(), "completed bytes"));
  }
}
