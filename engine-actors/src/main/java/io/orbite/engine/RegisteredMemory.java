package io.orbite.engine;

import io.orbite.engine.registry.Registration;
import java.lang.foreign.MemorySegment;

/**
 * A range registered with the engine: local memory that transfers may use and that peers may reach
 * within its {@link Access}. Returned by {@link TransferEngine#allocate} (engine-owned) and {@link
 * TransferEngine#register} (caller-owned).
 */
public final class RegisteredMemory {
  private final Registration registration;

  /**
   * Wraps a registration (engine-internal: the Registry makes one for each range it registers).
   *
   * @param registration the Registry's record of the range
   */
  public RegisteredMemory(Registration registration) {
    this.registration = registration;
  }

  /**
   * The id peers use to name this range (it appears in the engine's Describe answer).
   *
   * @return the region id, unique within this engine incarnation
   */
  public long regionId() {
    return registration.regionId();
  }

  /**
   * The memory itself. Callers fill or read it between transfers.
   *
   * @return the registered native segment (for {@code register}, the caller's own segment)
   */
  public MemorySegment segment() {
    return registration.segment();
  }

  /**
   * The size of the range.
   *
   * @return its length in bytes
   */
  public long lengthBytes() {
    return registration.lengthBytes();
  }

  /**
   * What peers may do with the range.
   *
   * @return the access it was registered with
   */
  public Access access() {
    return registration.access();
  }

  /**
   * Whether the engine allocated this memory ({@link TransferEngine#allocate}) and frees it when
   * the range is unregistered or the engine closes.
   *
   * @return true for engine-owned memory, false for caller-owned memory from {@link
   *     TransferEngine#register}
   */
  public boolean engineOwned() {
    return registration.engineOwned();
  }

  /**
   * Engine-internal state of this registration (loans, visibility).
   *
   * @return the Registry's record of the range
   */
  public Registration registration() {
    return registration;
  }

  @Override
  public String toString() {
    return registration.toString();
  }
}
