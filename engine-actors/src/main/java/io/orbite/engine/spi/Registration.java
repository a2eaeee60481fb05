package io.orbite.engine.spi;

import io.orbite.engine.Access;
import io.orbite.engine.ErrorKind;
import io.orbite.engine.RegisteredMemory;
import io.orbite.engine.TransferException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.concurrent.atomic.AtomicLong;

/**
 * One registered range: its memory, what peers may do with it, and the loans that workers hold on
 * it. The {@code Registry} actor owns its lifecycle (publish, hide, release); workers only take and
 * return loans, which is safe from any thread (C1).
 *
 * <p>Loan protocol: a worker increments the loan count and then checks the state; unregister hides
 * the range and then waits for the count to reach zero. Both sides use volatile accesses, so either
 * the worker sees the range hidden, or unregister sees its loan.
 */
public final class Registration implements RegisteredMemory {
  private final long regionId;
  private final MemorySegment segment;
  private final Access access;
  private final Arena ownedArena;
  private final SharedBacking shared;
  private final String name;
  private final java.util.Set<String> allowedPeers;
  private final AtomicLong loans = new AtomicLong();
  private final AtomicLong pins = new AtomicLong();

  /**
   * Where a registered range stands; it only moves forward:
   *
   * <pre>
   *   VISIBLE ──► HIDDEN ──► RELEASED
   *      │                      ▲
   *      └──────────────────────┘
   * </pre>
   *
   * <p>{@code VISIBLE}: published; workers may take loans and devices pins. {@code HIDDEN}:
   * unregistered (or its engine closing): no new loan or pin, the ones out still held. {@code
   * RELEASED}: its loans came back and the engine freed what it owned (caller-owned memory is never
   * freed); terminal.
   */
  public enum State implements Lifecycle.Stage<State> {
    VISIBLE,
    HIDDEN,
    RELEASED;

    @Override
    public boolean mayMoveTo(State next) {
      return Lifecycle.forward(this, next);
    }

    @Override
    public boolean terminal() {
      return this == RELEASED;
    }
  }

  private final Lifecycle<State> state = new Lifecycle<>(State.VISIBLE);

  /**
   * The registration behind {@code memory}: every {@link RegisteredMemory} an engine hands out is
   * one. Fails INVALID_ARGUMENT, naming {@code what}, for null or memory some other code made.
   */
  public static Registration of(RegisteredMemory memory, String what) {
    if (memory instanceof Registration r) {
      return r;
    }
    throw new TransferException(
        ErrorKind.INVALID_ARGUMENT,
        what
            + (memory == null
                ? " is null"
                : " is not memory an OrbiTE engine registered: " + memory.getClass().getName()));
  }

  public Registration(long regionId, MemorySegment segment, Access access, Arena ownedArena) {
    this(regionId, segment, access, ownedArena, null);
  }

  /**
   * @param shared the memfd behind engine-owned memory that the SHM transport exports; {@code null}
   *     for memory that is not shared (caller-owned memory never is)
   */
  public Registration(
      long regionId, MemorySegment segment, Access access, Arena ownedArena, SharedBacking shared) {
    this(regionId, segment, access, ownedArena, shared, null);
  }

  /**
   * @param shared the memfd behind engine-owned memory that the SHM transport exports; {@code null}
   *     for memory that is not shared
   * @param name the name the range is registered under, unique among the engine's live
   *     registrations (the Registry checks); {@code null} for an unnamed range
   */
  public Registration(
      long regionId,
      MemorySegment segment,
      Access access,
      Arena ownedArena,
      SharedBacking shared,
      String name) {
    this(regionId, segment, access, ownedArena, shared, name, null);
  }

  /**
   * @param shared the memfd behind engine-owned memory that the SHM transport exports; {@code null}
   *     for memory that is not shared
   * @param name the name the range is registered under, or {@code null}
   * @param allowedPeers the engine names that may READ or WRITE the range (as its access grants),
   *     each proven in its connection's handshake; {@code null} for every peer this engine serves
   */
  public Registration(
      long regionId,
      MemorySegment segment,
      Access access,
      Arena ownedArena,
      SharedBacking shared,
      String name,
      java.util.Set<String> allowedPeers) {
    this.allowedPeers = allowedPeers == null ? null : java.util.Set.copyOf(allowedPeers);
    this.name = name;
    this.regionId = regionId;
    this.segment = segment;
    this.access = access;
    this.ownedArena = ownedArena;
    this.shared = ownedArena == null ? null : shared;
  }

  @Override
  public java.util.Set<String> allowedPeers() {
    return allowedPeers;
  }

  /**
   * Whether {@code peer} may see and reach this range: always without an allow-list; with one, only
   * a peer whose handshake proved a listed name.
   *
   * @param peer who a connection's handshake proved its requester to be, or null when it proved
   *     nothing (an engine that does not authenticate)
   */
  public boolean allows(io.orbite.engine.security.AuthenticatedPeer peer) {
    return allowedPeers == null
        || (peer != null && peer.nameProven() && allowedPeers.contains(peer.name()));
  }

  /** The memfd this range is exported through to same-host peers, or {@code null}. */
  public SharedBacking shared() {
    return shared;
  }

  /**
   * One non-blocking step of fencing same-host peers out of this range before it is released: true
   * once no peer can copy into or out of it any more (at once for memory that is not shared). Only
   * the Registry calls this (and a qualification test, through {@code
   * FaultInjection.fenceSharedExport}); the backing serialises the calls.
   */
  public boolean fenceShared() {
    return shared == null || shared.tryFence();
  }

  public long regionId() {
    return regionId;
  }

  @Override
  public java.util.Optional<String> name() {
    return java.util.Optional.ofNullable(name);
  }

  public MemorySegment segment() {
    return segment;
  }

  public long lengthBytes() {
    return segment.byteSize();
  }

  public Access access() {
    return access;
  }

  /** Whether the engine allocated (and will free) this memory. */
  public boolean engineOwned() {
    return ownedArena != null;
  }

  /** The range's state now. */
  public State state() {
    return state.state();
  }

  public boolean visible() {
    return state.is(State.VISIBLE);
  }

  public boolean released() {
    return state.is(State.RELEASED);
  }

  /**
   * Loans currently held: by workers, and one per device pin ({@link #tryPin}). The registry frees
   * the memory only once this is 0.
   */
  public long loans() {
    return loans.get() + pins.get();
  }

  /** Device pins currently held (one per RDMA MR that names the range); part of {@link #loans}. */
  public long pins() {
    return pins.get();
  }

  /**
   * Takes a device pin if the range is still visible: a transport that registers the range with a
   * device (an RDMA MR) holds one for as long as the device may reach the pages, so the memory is
   * never freed under it. Unlike a worker's loan, a pin says nothing about work in flight: the
   * range is idle when {@code loans() == pins()}. A holder that gets {@code true} calls {@link
   * #unpin()} exactly once, when the device can no longer reach the memory; a holder whose release
   * failed keeps it for good.
   */
  public boolean tryPin() {
    pins.incrementAndGet();
    if (!state.is(State.VISIBLE)) {
      pins.decrementAndGet();
      return false;
    }
    return true;
  }

  public void unpin() {
    long left = pins.decrementAndGet();
    if (left < 0) {
      throw new IllegalStateException("region " + regionId + ": pin returned twice");
    }
  }

  /**
   * Takes a loan if the range is still visible. A worker that gets {@code true} must call {@link
   * #returnLoan()} exactly once when it no longer touches the memory.
   */
  public boolean tryLoan() {
    loans.incrementAndGet();
    if (!state.is(State.VISIBLE)) {
      loans.decrementAndGet();
      return false;
    }
    return true;
  }

  public void returnLoan() {
    long left = loans.decrementAndGet();
    if (left < 0) {
      throw new IllegalStateException("region " + regionId + ": loan returned twice");
    }
  }

  /** Whether {@code [offset, offset + length)} lies inside this range (length > 0). */
  public boolean covers(long offset, long length) {
    return offset >= 0 && length > 0 && offset <= segment.byteSize() - length;
  }

  /** Hides the range: no new loan is granted. Only the Registry calls this (LayeringArchTest). */
  public void hide() {
    state.moveTo(State.HIDDEN);
  }

  /** Frees engine-owned memory. Only the Registry calls this, after the last loan came back. */
  public void release() {
    if (!state.moveTo(State.RELEASED)) {
      return;
    }
    if (ownedArena != null) {
      ownedArena.close();
    }
  }

  @Override
  public String toString() {
    return "region "
        + regionId
        + (name == null ? "" : " '" + name + "'")
        + " ("
        + segment.byteSize()
        + " B, "
        + access
        + ")";
  }
}
