package io.orbite.engine.spi;

/**
 * The memfd behind one engine-owned allocation that the SHM transport exports, as the Registry and
 * Describe see it. Implemented by the SHM transport; the engine only publishes it and asks it to
 * fence.
 */
public interface SharedBacking {
  /** The memfd's descriptor number in this process. */
  int fd();

  /** The memfd's inode, published so a requester can check it opened this very file. */
  long inode();

  /** Where the registered range starts in the memfd. */
  long offset();

  /**
   * One non-blocking step of fencing the allocation before its memory is released (C1): withdraw
   * the allocation's liveness lock (so no requester starts a copy any more), then try to take its
   * activity lock exclusively (which succeeds once no requester is copying). Called by the Registry
   * on its loan poll, never blocks.
   *
   * @return true once no requester can touch the allocation again
   */
  boolean tryFence();
}
