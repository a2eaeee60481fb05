package io.orbite.transport.shm;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.orbite.engine.ErrorKind;
import io.orbite.engine.TransferException;
import io.orbite.engine.spi.SharedAllocation;
import io.orbite.nativebind.Errno;
import io.orbite.nativebind.NativeCallException;
import io.orbite.nativebind.libc.Libc;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import org.junit.jupiter.api.Test;

/**
 * The source side of SHM against the kernel: the incarnation token, memfd allocations, and the
 * unregister fence (liveness withdrawn first, then the activity lock taken only once no requester
 * is inside a copy). A second open file description through /proc/self/fd stands in for a
 * requester.
 */
class ShmMemoryTest {

  @Test
  void theTokenHoldsTheEpochAndStaysLockedLiveUntilClose() {
    ShmMemory memory = ShmMemory.open("unit", 0x1234_5678_9abcL);
    int peer =
        Libc.open("/proc/self/fd/" + memory.host().tokenFd(), Libc.O_RDONLY | Libc.O_CLOEXEC);
    try {
      assertEquals(Libc.getpid(), memory.host().pid());
      assertEquals(memory.host().tokenInode(), Libc.fstat(peer).inode());
      MemorySegment page = Libc.mmap(ShmLocks.PAGE, Libc.PROT_READ, Libc.MAP_SHARED, peer, 0);
      assertEquals(0x1234_5678_9abcL, page.get(ValueLayout.JAVA_LONG, 0));
      Libc.munmap(page);
      assertEquals(
          Libc.F_RDLCK, Libc.ofdTestLock(peer, Libc.F_WRLCK, ShmLocks.LIVENESS, 1), "locked live");
      memory.close();
      assertEquals(
          Libc.F_UNLCK,
          Libc.ofdTestLock(peer, Libc.F_WRLCK, ShmLocks.LIVENESS, 1),
          "ended at close");
    } finally {
      Libc.close(peer);
      memory.close();
    }
  }

  @Test
  void anAllocationIsAZeroedSharedMemfdOfThatInode() {
    ShmMemory memory = ShmMemory.open("unit", 1);
    SharedAllocation a = memory.allocate(10_000, "unit-alloc");
    int peer = Libc.open("/proc/self/fd/" + a.backing().fd(), Libc.O_RDWR | Libc.O_CLOEXEC);
    try {
      assertEquals(10_000, a.segment().byteSize());
      assertEquals(0, a.segment().address() % ShmLocks.PAGE, "page aligned");
      assertEquals(-1, a.segment().mismatch(MemorySegment.ofArray(new byte[10_000])), "zeroed");
      assertEquals(a.backing().inode(), Libc.fstat(peer).inode());
      MemorySegment mapped =
          Libc.mmap(ShmLocks.PAGE * 3, Libc.PROT_READ | Libc.PROT_WRITE, Libc.MAP_SHARED, peer, 0);
      a.segment().set(ValueLayout.JAVA_LONG, 9_000, 42L);
      assertEquals(42L, mapped.get(ValueLayout.JAVA_LONG, 9_000), "one memory, two mappings");
      Libc.munmap(mapped);
      assertEquals(
          Libc.F_RDLCK,
          Libc.ofdTestLock(peer, Libc.F_WRLCK, ShmLocks.LIVENESS, 1),
          "allocation locked live");
      a.arena().close();
      assertEquals(
          Libc.F_UNLCK,
          Libc.ofdTestLock(peer, Libc.F_WRLCK, ShmLocks.LIVENESS, 1),
          "released: lock gone");
    } finally {
      Libc.close(peer);
      memory.close();
    }
  }

  @Test
  void theFenceWithdrawsLivenessAtOnceButWaitsForACopyInProgress() {
    ShmMemory memory = ShmMemory.open("unit", 1);
    SharedAllocation a = memory.allocate(4096, "unit-fence");
    int requester = Libc.open("/proc/self/fd/" + a.backing().fd(), Libc.O_RDWR | Libc.O_CLOEXEC);
    try {
      Libc.ofdLock(requester, Libc.F_RDLCK, ShmLocks.ACTIVITY, 1, false); // a copy is in progress
      assertFalse(a.backing().tryFence(), "cannot fence while a requester copies");
      assertEquals(
          Libc.F_UNLCK,
          Libc.ofdTestLock(requester, Libc.F_WRLCK, ShmLocks.LIVENESS, 1),
          "but liveness is already withdrawn: no new copy starts");
      assertFalse(a.backing().tryFence(), "still copying");
      Libc.ofdLock(requester, Libc.F_UNLCK, ShmLocks.ACTIVITY, 1, false); // the copy ended
      assertTrue(a.backing().tryFence(), "fenced once the copy ended");
      assertTrue(a.backing().tryFence(), "and stays fenced");
      NativeCallException e =
          assertThrows(
              NativeCallException.class,
              () -> Libc.ofdLock(requester, Libc.F_RDLCK, ShmLocks.ACTIVITY, 1, false));
      assertTrue(e.is(Errno.EAGAIN), "no copy can start after the fence: " + e.getMessage());
    } finally {
      Libc.close(requester);
      a.arena().close();
      memory.close();
    }
  }

  @Test
  void anImpossibleAllocationFailsNamingTheCall() {
    ShmMemory memory = ShmMemory.open("unit", 1);
    try {
      TransferException e =
          assertThrows(TransferException.class, () -> memory.allocate(Long.MAX_VALUE / 2, "huge"));
      assertTrue(
          e.kind() == ErrorKind.RESOURCE_EXHAUSTED || e.kind() == ErrorKind.UNAVAILABLE,
          e.toString());
      assertTrue(
          e.getMessage().contains("allocate " + (Long.MAX_VALUE / 2) + " B in a memfd"),
          e.getMessage());
      assertTrue(
          e.getMessage().contains("ftruncate") || e.getMessage().contains("mmap"), e.getMessage());
    } finally {
      memory.close();
    }
  }
}
