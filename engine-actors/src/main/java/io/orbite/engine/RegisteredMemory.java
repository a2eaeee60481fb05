package io.orbite.engine;

import io.orbite.engine.spi.Registration;
import java.lang.foreign.MemorySegment;
import java.util.Optional;
import java.util.Set;

/**
 * A range registered with the engine: local memory that transfers may use and that peers may reach
 * within its {@link Access}. Returned by {@link TransferEngine#allocate} (engine-owned) and {@link
 * TransferEngine#register} (caller-owned). Sealed: only the engine implements it, and a request
 * naming memory that this engine did not register (or that was unregistered) fails
 * INVALID_ARGUMENT.
 */
public sealed interface RegisteredMemory permits Registration {
  /**
   * The id peers use to name this range (it appears in the engine's Describe answer).
   *
   * @return the region id, unique within this engine incarnation
   */
  long regionId();

  /**
   * The name the range was registered under ({@link Engine#allocate(long, Access, String)}, {@link
   * Engine#register(MemorySegment, Access, String)}); peers find it by that name in the engine's
   * Describe answer ({@link RemoteSegment#region(String)}). A name only finds the id: peers'
   * requests still name the id, and are checked against the live registration (C2).
   *
   * @return the name, or empty for an unnamed range
   */
  Optional<String> name();

  /**
   * Who may see and reach the range besides this engine ({@link Engine#allocate(long, Access,
   * String, Set)}): only peers whose handshake proved one of these engine names.
   *
   * @return the names, unmodifiable (empty: no peer); null when every peer this engine serves may
   */
  Set<String> allowedPeers();

  /**
   * The memory itself. Callers fill or read it between transfers.
   *
   * @return the registered native segment (for {@code register}, the caller's own segment)
   */
  MemorySegment segment();

  /**
   * The size of the range.
   *
   * @return its length in bytes
   */
  long lengthBytes();

  /**
   * What peers may do with the range.
   *
   * @return the access it was registered with
   */
  Access access();

  /**
   * Whether the engine allocated this memory ({@link TransferEngine#allocate}) and frees it when
   * the range is unregistered or the engine closes.
   *
   * @return true for engine-owned memory, false for caller-owned memory from {@link
   *     TransferEngine#register}
   */
  boolean engineOwned();
}
