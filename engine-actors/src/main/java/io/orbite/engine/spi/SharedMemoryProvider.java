package io.orbite.engine.spi;

import java.util.Optional;

/**
 * Source-side shared memory, found with {@link java.util.ServiceLoader} like the transports, so
 * that engine-actors does not depend on the native bindings.
 */
public interface SharedMemoryProvider {
  /** Why shared memory cannot work on this machine; empty when it can. Probed once. */
  Optional<String> unavailabilityCause();

  /** Creates the incarnation token of the engine {@code engineName} at {@code epoch}. */
  SharedMemory open(String engineName, long epoch);
}
