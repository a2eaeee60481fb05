package io.orbite.engine.spi;

import io.orbite.engine.QuarantinedOwner;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.BooleanSupplier;

/**
 * The quarantined owners of one engine incarnation. It outlives the engine's actors: an owner that
 * is still held when the engine closes stays listed, so a second close (or {@code owed()}) reports
 * it again. Each entry says how to tell that its worker has let go; entries whose worker let go are
 * dropped when the ledger is read. Thread-safe.
 */
public final class QuarantineLedger {
  private record Entry(QuarantinedOwner owner, BooleanSupplier stillHeld) {}

  private final ConcurrentHashMap<String, Entry> entries = new ConcurrentHashMap<>();

  /**
   * Lists an owner as quarantined (replacing an entry of the same name).
   *
   * @param stillHeld true while the worker it waits for may still touch memory; read from any
   *     thread
   */
  public void enter(QuarantinedOwner owner, BooleanSupplier stillHeld) {
    entries.put(owner.owner(), new Entry(owner, stillHeld));
  }

  /** Drops an owner that proved its drain late. */
  public void leave(String owner) {
    entries.remove(owner);
  }

  /** The owners still quarantined, oldest first. */
  public List<QuarantinedOwner> list() {
    entries.values().removeIf(e -> !e.stillHeld().getAsBoolean());
    List<QuarantinedOwner> out = new ArrayList<>();
    entries.values().forEach(e -> out.add(e.owner()));
    out.sort((a, b) -> a.since().compareTo(b.since()));
    return List.copyOf(out);
  }
}
