package io.orbite.engine.spi;

import io.orbite.engine.wire.SharedHost;

/**
 * The source side of SHM for one engine incarnation: its incarnation token (a memfd holding the
 * epoch, with a liveness lock held until {@link #close}) and the allocator of memfd-backed memory.
 * Opened when {@code shm.enabled} is set; closed after the engine's Registry has stopped.
 */
public interface SharedMemory extends AutoCloseable {
  /** What Describe publishes about this incarnation's shared memory. */
  SharedHost host();

  /**
   * Allocates {@code bytes} of zeroed memory in a fresh memfd, mapped shared read-write.
   *
   * @throws io.orbite.engine.TransferException RESOURCE_EXHAUSTED or UNAVAILABLE, naming the call
   *     that failed
   */
  SharedAllocation allocate(long bytes, String label);

  /**
   * Withdraws the incarnation's liveness lock and closes the token: peers see this incarnation as
   * ended.
   */
  @Override
  void close();
}
