package io.orbite.transport.shm;

/**
 * Where the SHM transport's OFD locks live in a memfd. Locks are byte ranges of the file, not of
 * its data: they are placed far beyond any allocation's end (fcntl accepts ranges past EOF), so
 * they never interfere with the bytes themselves.
 *
 * <ul>
 *   <li>{@link #LIVENESS}: the source holds a read lock here through its own open file description
 *       for as long as the allocation (or, on the token, the engine incarnation) is live. It goes
 *       away when the source unregisters the allocation (it unlocks) or dies (the kernel closes its
 *       descriptors). Requesters only test it ({@code F_OFD_GETLK}), never lock it, so they cannot
 *       disturb one another's view.
 *   <li>{@link #ACTIVITY}: a requester holds a read lock here while it copies; the source's
 *       unregister takes a write lock here (non-blocking, polled), which succeeds only once no
 *       requester is copying, and keeps it, so no copy starts afterwards.
 * </ul>
 */
final class ShmLocks {
  static final long LIVENESS = 1L << 62;
  static final long ACTIVITY = LIVENESS + 1;
  static final long PAGE = 4096;

  private ShmLocks() {}

  static long pageAligned(long bytes) {
    return (bytes + PAGE - 1) & -PAGE;
  }
}
