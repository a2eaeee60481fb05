package io.orbite.nativebind.uring;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.orbite.nativebind.Errno;
import io.orbite.nativebind.NativeCallException;
import io.orbite.nativebind.libc.Libc;
import io.orbite.nativebind.testkit.Prerequisite;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A real ring on this kernel: NOP, WRITE then READ of a file byte for byte (on an ordinary ring and
 * on a single-issuer ring with deferred completions, which refuses any other thread), and
 * cancelling a stalled FIFO read.
 */
class RingTest {
  private record Completion(long userData, int result) {}

  @BeforeEach
  void needsIoUring() {
    Prerequisite.require(
        IoUring.isAvailable(), "io_uring unavailable: " + IoUring.unavailabilityCause().orElse(""));
  }

  @Test
  void probeFindsTheOpcodesThisBindingUses() {
    assertTrue(IoUring.isAvailable());
    assertTrue(IoUring.unavailabilityCause().isEmpty());
  }

  @Test
  void nopCompletesWithItsUserData() {
    try (Ring ring = Ring.open(8)) {
      assertEquals(8, ring.sqEntries());
      assertEquals(16, ring.cqEntries());
      ring.prepare(IoUring.IORING_OP_NOP, -1, 0, 0, 0, 0, 0xC0FFEEL);
      assertEquals(1, ring.enter(1, TimeUnit.SECONDS.toNanos(5)));
      List<Completion> got = new ArrayList<>();
      assertEquals(1, ring.reap((u, r, f) -> got.add(new Completion(u, r)), 16));
      assertEquals(List.of(new Completion(0xC0FFEEL, 0)), got);
    }
  }

  @Test
  void aWaitWithNothingInFlightTimesOutWithoutError() {
    try (Ring ring = Ring.open(4)) {
      assertEquals(0, ring.enter(1, TimeUnit.MILLISECONDS.toNanos(5)));
      assertEquals(0, ring.ready());
    }
  }

  @Test
  void writeThenReadMovesExactlyTheRequestedBytes(@TempDir Path dir) throws Exception {
    try (Ring ring = Ring.open(8)) {
      writeThenRead(ring, dir.resolve("data"));
    }
  }

  @Test
  void aSingleIssuerRingServesOnlyTheThreadThatEnteredItFirst(@TempDir Path dir) throws Exception {
    try (Ring ring = Ring.openSingleIssuer(8)) {
      Prerequisite.require(
          ring.deferredCompletions(),
          "io_uring SINGLE_ISSUER | DEFER_TASKRUN need Linux 6.1; this kernel refused them");
      // Set up here, bound to the owner at its first enter: the file lane's ring is created by the
      // transport and entered only by the lane's own thread.
      ExecutorService owner = Executors.newSingleThreadExecutor();
      try {
        // A buffered write to ext4 is done by an io-wq worker: its completion is deferred to the
        // owner.
        owner
            .submit(
                () -> {
                  writeThenRead(ring, dir.resolve("data"));
                  return null;
                })
            .get(10, TimeUnit.SECONDS);
        ring.prepare(IoUring.IORING_OP_NOP, -1, 0, 0, 0, 0, 0xBEEFL);
        NativeCallException refused =
            assertThrows(
                NativeCallException.class, () -> ring.enter(1, TimeUnit.SECONDS.toNanos(1)));
        assertEquals(Errno.EEXIST.number(), refused.errno(), refused.getMessage());
        assertTrue(refused.getMessage().contains("io_uring_enter"), refused.getMessage());
        // The refused call submitted nothing: the owner's next enter submits and completes the NOP.
        List<Completion> got =
            owner
                .submit(
                    () -> {
                      List<Completion> seen = new ArrayList<>();
                      ring.enter(1, TimeUnit.SECONDS.toNanos(5));
                      ring.reap((u, r, f) -> seen.add(new Completion(u, r)), 16);
                      return seen;
                    })
                .get(10, TimeUnit.SECONDS);
        assertEquals(List.of(new Completion(0xBEEFL, 0)), got);
      } finally {
        owner.shutdownNow();
      }
    }
  }

  /**
   * WRITE 1000 patterned bytes at file offset 4097, READ them back 1 B into a guarded buffer;
   * checks every byte.
   */
  private static void writeThenRead(Ring ring, Path file) throws Exception {
    Files.write(file, new byte[8192]);
    int fd = Libc.open(file.toString(), Libc.O_RDWR | Libc.O_CLOEXEC);
    try (Arena arena = Arena.ofConfined()) {
      MemorySegment src = arena.allocate(1000);
      for (int i = 0; i < 1000; i++) {
        src.set(ValueLayout.JAVA_BYTE, i, (byte) (i * 7 + 3));
      }
      ring.prepare(IoUring.IORING_OP_WRITE, fd, 4097, src.address(), 1000, 0, 1);
      ring.enter(1, TimeUnit.SECONDS.toNanos(5));
      List<Completion> got = new ArrayList<>();
      ring.reap((u, r, f) -> got.add(new Completion(u, r)), 16);
      assertEquals(List.of(new Completion(1, 1000)), got);

      MemorySegment dst = arena.allocate(1002);
      dst.fill((byte) 0x5A);
      ring.prepare(IoUring.IORING_OP_READ, fd, 4097, dst.address() + 1, 1000, 0, 2);
      ring.enter(1, TimeUnit.SECONDS.toNanos(5));
      got.clear();
      ring.reap((u, r, f) -> got.add(new Completion(u, r)), 16);
      assertEquals(List.of(new Completion(2, 1000)), got);
      assertArrayEquals(
          src.toArray(ValueLayout.JAVA_BYTE), dst.asSlice(1, 1000).toArray(ValueLayout.JAVA_BYTE));
      assertEquals((byte) 0x5A, dst.get(ValueLayout.JAVA_BYTE, 0));
      assertEquals((byte) 0x5A, dst.get(ValueLayout.JAVA_BYTE, 1001));
    } finally {
      Libc.close(fd);
    }
    byte[] onDisk = Files.readAllBytes(file);
    for (int i = 0; i < onDisk.length; i++) {
      byte want = i >= 4097 && i < 5097 ? (byte) ((i - 4097) * 7 + 3) : 0;
      assertEquals(want, onDisk[i], "file byte " + i);
    }
  }

  @Test
  void aStalledFifoReadIsCancelledWithEcanceled(@TempDir Path dir) throws Exception {
    Path fifo = dir.resolve("fifo");
    Process mk = new ProcessBuilder("mkfifo", fifo.toString()).start();
    assertEquals(0, mk.waitFor());
    // O_RDWR on a FIFO opens without blocking and holds a writer, so a read waits for data forever.
    int fd = Libc.open(fifo.toString(), Libc.O_RDWR | Libc.O_CLOEXEC);
    try (Ring ring = Ring.open(8);
        Arena arena = Arena.ofConfined()) {
      MemorySegment dst = arena.allocate(64);
      ring.prepare(IoUring.IORING_OP_READ, fd, 0, dst.address(), 64, 0, 7);
      ring.enter(0, 0);
      assertEquals(
          0, ring.enter(1, TimeUnit.MILLISECONDS.toNanos(50)), "the read must still be waiting");
      assertEquals(0, ring.ready());
      ring.prepare(IoUring.IORING_OP_ASYNC_CANCEL, -1, 0, 7, 0, 0, 8);
      List<Completion> got = new ArrayList<>();
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
      while (got.size() < 2 && System.nanoTime() < deadline) {
        ring.enter(1, TimeUnit.MILLISECONDS.toNanos(100));
        ring.reap((u, r, f) -> got.add(new Completion(u, r)), 16);
      }
      assertTrue(got.contains(new Completion(7, -Errno.ECANCELED.number())), got.toString());
      assertTrue(got.contains(new Completion(8, 0)), got.toString());
    } finally {
      Libc.close(fd);
    }
  }
}
