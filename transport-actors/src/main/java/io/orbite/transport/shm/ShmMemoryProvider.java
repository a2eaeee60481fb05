package io.orbite.transport.shm;

import io.orbite.engine.spi.SharedMemory;
import io.orbite.engine.spi.SharedMemoryProvider;
import java.util.Optional;

/**
 * Plugs the SHM source side (memfd allocations) into the engine through {@link
 * java.util.ServiceLoader}.
 */
public final class ShmMemoryProvider implements SharedMemoryProvider {
  @Override
  public Optional<String> unavailabilityCause() {
    return ShmTransportProvider.unavailability();
  }

  @Override
  public SharedMemory open(String engineName, long epoch) {
    return ShmMemory.open(engineName, epoch);
  }
}
