package io.orbite.engine.guardian;

import io.orbite.engine.EngineOwed;
import io.orbite.engine.EngineOwed.Phase;
import io.orbite.engine.admission.AdmissionGate;
import io.orbite.engine.admission.Budgets;
import io.orbite.engine.spi.QuarantineLedger;
import io.orbite.engine.spi.Registration;
import io.orbite.engine.spi.RegistryView;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicReference;

/**
 * The engine's lifecycle ({@code RUNNING → CLOSING → CLOSED}) and what it owes, as the guardian
 * publishes them. The guardian moves the phase: a close begins when anyone asks for it (the facade
 * marks it at once, so later calls are refused without an ask), and ends when the guardian has
 * stopped every owner and seen the Registry terminate. {@link #owed()} reads no mailbox, so it
 * answers while the engine runs, while it closes and after every actor has stopped.
 *
 * <p>Registrations are counted from the Registry's view while the engine runs. From the moment a
 * close begins, every range the view shows is remembered, so that what the Registry retains under a
 * worker's loan after it stopped (it hides everything) is still reported. Ranges an unregister left
 * UNQUIESCED are remembered the same way until they are released.
 */
public final class EngineLifecycle {
  private final String identity;
  private final AdmissionGate gate;
  private final RegistryView view;
  private final QuarantineLedger quarantine;
  private final AtomicReference<Phase> phase = new AtomicReference<>(Phase.RUNNING);

  /** Every range visible since the close began, to report what is retained. */
  private final Map<Long, Registration> atClose = new ConcurrentHashMap<>();

  /** Ranges whose unregister answered UNQUIESCED: hidden, but retained while workers hold loans. */
  private final Map<Long, Registration> unquiesced = new ConcurrentHashMap<>();

  EngineLifecycle(
      String identity, AdmissionGate gate, RegistryView view, QuarantineLedger quarantine) {
    this.identity = identity;
    this.gate = gate;
    this.view = view;
    this.quarantine = quarantine;
  }

  /** {@code name@host:port@epoch}, as logs and {@link EngineOwed} name the engine. */
  public String identity() {
    return identity;
  }

  public Phase phase() {
    return phase.get();
  }

  /**
   * Marks the close begun; true for the one call that began it. Every later operation of the facade
   * is refused from here on.
   */
  public boolean beginClose() {
    boolean began = phase.compareAndSet(Phase.RUNNING, Phase.CLOSING);
    atClose.putAll(view.snapshot());
    return began;
  }

  /** The guardian saw the Registry stop: the budgets ended, only retained memory remains. */
  void closed() {
    atClose.putAll(view.snapshot());
    phase.set(Phase.CLOSED);
  }

  /** An unregister answered UNQUIESCED: the range is still owed until its last loan returns. */
  public void retainUnquiesced(long regionId, Registration registration) {
    unquiesced.put(regionId, registration);
  }

  /** What the engine still has charged, read now; see {@link EngineOwed}. */
  public EngineOwed owed() {
    Phase now = phase.get();
    if (now == Phase.CLOSED) {
      atClose.putAll(unquiesced);
      int retained = 0;
      long loans = 0;
      for (Registration r : atClose.values()) {
        if (!r.released()) {
          retained++;
          loans += r.loans();
        }
      }
      return new EngineOwed(
          identity, Phase.CLOSED, true, 0, 0, 0, 0, retained, loans, quarantine.list());
    }
    Budgets.Usage u = gate.usage();
    Map<Long, Registration> visible = view.snapshot();
    int registrations;
    long loans;
    if (now == Phase.RUNNING) {
      unquiesced.values().removeIf(Registration::released);
      registrations = visible.size() + unquiesced.size();
      // A live range's device pins (its RDMA MRs) are not work owed; a retained range's are.
      loans =
          visible.values().stream().mapToLong(r -> r.loans() - r.pins()).sum()
              + unquiesced.values().stream().mapToLong(Registration::loans).sum();
    } else {
      // Closing: the Registry may already have hidden everything; count what is not yet released.
      atClose.putAll(unquiesced);
      atClose.putAll(visible);
      registrations = (int) atClose.values().stream().filter(r -> !r.released()).count();
      loans =
          atClose.values().stream().filter(r -> !r.released()).mapToLong(Registration::loans).sum();
    }
    return new EngineOwed(
        identity,
        now,
        true,
        u.batches(),
        u.tasks(),
        u.bytes(),
        u.endpoints(),
        registrations,
        loans,
        quarantine.list());
  }
}
