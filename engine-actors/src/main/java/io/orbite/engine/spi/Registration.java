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
 * it. The {@link Registry} actor owns its lifecycle (publish, hide, release); workers only take and
 * return loans, which is safe from any thread (C1).
 *
 * <p>Loan protocol: a worker increments the loan count and then checks visibility; unregister
 * clears visibility and then waits for the count to reach zero. Both sides use volatile accesses,
 * so either the worker sees the range hidden, or unregister sees its loan.
 */
public final class Registration implements RegisteredMemory {
  private final long regionId;
  private final MemorySegment segment;
  private final Access access;
  private final Arena ownedArena;
  private final SharedBacking shared;
  private final AtomicLong loans = new AtomicLong();
  private final AtomicLong pins = new AtomicLong();
  private volatile boolean visible = true;
  private volatile boolean released;

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
    this.regionId = regionId;
    this.segment = segment;
    this.access = access;
    this.ownedArena = ownedArena;
    this.shared = ownedArena == null ? null : shared;
  }

  /** The memfd this range is exported through to same-host peers, or {@code null}. */
  public SharedBacking shared() {
    return shared;
  }

  /**
   * One non-blocking step of fencing same-host peers out of this range before it is released: true
   * once no peer can copy into or out of it any more (at once for memory that is not shared). Only
   * the Registry calls this.
   */
  public boolean fenceShared() {
    return shared == null || shared.tryFence();
  }

  public long regionId() {
    return regionId;
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

  public boolean visible() {
    return visible;
  }

  public boolean released() {
    return released;
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
    if (!visible) {
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
    if (!visible) {
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
    visible = false;
  }

  /** Frees engine-owned memory. Only the Registry calls this, after the last loan came back. */
  public void release() {
    if (released) {
      return;
    }
    released = true;
    if (ownedArena != null) {
      ownedArena.close();
    }
  }

  @Override
  public String toString() {
    return "region " + regionId + " (" + segment.byteSize() + " B, " + access + ")";
  }
}
