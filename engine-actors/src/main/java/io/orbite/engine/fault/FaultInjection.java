package io.orbite.engine.fault;

import io.orbite.config.EngineConfig;
import io.orbite.engine.ErrorKind;
import io.orbite.engine.RegisteredMemory;
import io.orbite.engine.TransferEngine;
import io.orbite.engine.TransferException;
import io.orbite.engine.spi.Registration;
import java.util.Objects;
import java.util.function.BiFunction;

/**
 * Starts an engine with {@link FaultHooks} in its workers' data path: the qualification tests' way
 * in (and the RDMA bench's null wire). This package is exported only to the transports and the
 * qualification module, so no application can start an engine with hooks.
 */
public final class FaultInjection {
  private static volatile BiFunction<EngineConfig, FaultHooks, TransferEngine> starter;

  private FaultInjection() {}

  /**
   * Called once, by {@code TransferEngine}'s class initialiser: how an engine with hooks starts
   * (engine-internal; a second call is refused).
   *
   * @param start starts an engine in an ActorSystem of its own with the given hooks
   */
  public static void bind(BiFunction<EngineConfig, FaultHooks, TransferEngine> start) {
    synchronized (FaultInjection.class) {
      if (starter != null) {
        throw new IllegalStateException("FaultInjection is bound already");
      }
      starter = Objects.requireNonNull(start, "start");
    }
  }

  /**
   * {@link TransferEngine#start(EngineConfig)} with fault-injection hooks, for qualification tests
   * that must hold a worker or break a connection.
   *
   * @param config the engine's configuration
   * @param hooks the hooks the workers call ({@link FaultHooks#NONE} for none); not null
   * @return the running engine
   */
  public static TransferEngine start(EngineConfig config, FaultHooks hooks) {
    Objects.requireNonNull(hooks, "hooks");
    if (starter == null) {
      // Runs TransferEngine's class initialiser, which binds the starter.
      try {
        Class.forName(TransferEngine.class.getName(), true, TransferEngine.class.getClassLoader());
      } catch (ClassNotFoundException e) {
        throw new IllegalStateException(e);
      }
    }
    return starter.apply(config, hooks);
  }

  /**
   * Fences the same-host (SHM) export of {@code memory}, an allocation of an engine started with
   * {@code shm.enabled}, while the range stays registered and visible: the step unregister takes
   * first (the allocation's liveness lock withdrawn, then its activity lock taken once no peer is
   * inside a copy), without the rest. A same-host peer's next copy finds the allocation fenced and
   * fails its task unsent, while TCP still serves the range: how a test fences an SHM mapping under
   * a running transfer. Idempotent; the Registry's own fence at unregister then finds it done.
   *
   * @param memory engine-owned memory exported through SHM
   * @return true once no peer can copy into or out of it; false while a peer's copy that started
   *     before the call is still under way (no new copy can start)
   * @throws TransferException INVALID_ARGUMENT if the memory is not exported through SHM
   */
  public static boolean fenceSharedExport(RegisteredMemory memory) {
    Registration r = Registration.of(memory, "fenceSharedExport: memory");
    if (r.shared() == null) {
      throw new TransferException(
          ErrorKind.INVALID_ARGUMENT,
          "fenceSharedExport: region " + r.regionId() + " is not exported through SHM");
    }
    return r.fenceShared();
  }
}
