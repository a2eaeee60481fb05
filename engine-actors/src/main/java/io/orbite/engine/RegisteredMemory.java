package io.orbite.engine;

import io.orbite.engine.registry.Registration;
import java.lang.foreign.MemorySegment;

/**
 * A range registered with the engine: local memory that transfers may use and that peers may
 * reach within its {@link Access}. Returned by {@link TransferEngine#allocate} (engine-owned) and
 * {@link TransferEngine#register} (caller-owned).
 */
public final class RegisteredMemory {
  private final Registration registration;

  public RegisteredMemory(Registration registration) {
    this.registration = registration;
  }

  /** The id peers use to name this range (it appears in the engine's Describe answer). */
  public long regionId() {
    return registration.regionId();
  }

  /** The memory itself. Callers fill or read it between transfers. */
  public MemorySegment segment() {
    return registration.segment();
  }

  public long lengthBytes() {
    return registration.lengthBytes();
  }

  public Access access() {
    return registration.access();
  }

  public boolean engineOwned() {
    return registration.engineOwned();
  }

  /** Engine-internal state of this registration (loans, visibility). */
  public Registration registration() {
    return registration;
  }

  @Override
  public String toString() {
    return registration.toString();
  }
}
