package io.orbite.engine;

import io.orbite.engine.admission.Admission;
import io.orbite.engine.admission.AdmissionGate;
import io.orbite.engine.batch.BatchCore;
import io.orbite.engine.batch.BatchPool;
import io.orbite.engine.guardian.EngineGuardian;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CompletionStage;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.Scheduler;
import org.apache.pekko.actor.typed.javadsl.AskPattern;

/**
 * Where the facade's batches come from and go back to: a batch slot is charged on the caller's
 * thread ({@link AdmissionGate#tryBatch}); a freed batch of the same capacity is taken from the
 * {@link BatchPool} (no actor spawn, no ask), else the guardian spawns a new batch owner. A freed
 * batch goes back to the pool, or is retired once the engine is closing.
 */
final class BatchAllocator {
  private final int maxCapacity;
  private final AdmissionGate gate;
  private final ActorRef<EngineGuardian.Command> guardian;
  private final Scheduler scheduler;
  private final BatchPool pool = new BatchPool();

  BatchAllocator(
      int maxCapacity,
      AdmissionGate gate,
      ActorRef<EngineGuardian.Command> guardian,
      Scheduler scheduler) {
    this.maxCapacity = maxCapacity;
    this.gate = gate;
    this.guardian = guardian;
    this.scheduler = scheduler;
  }

  /** A leased batch of {@code capacity} tasks for {@code engine}; refusals throw or fail. */
  CompletionStage<Batch> allocate(int capacity, TransferEngine engine) {
    if (capacity < 1 || capacity > maxCapacity) {
      throw new TransferException(
          ErrorKind.INVALID_ARGUMENT,
          "allocateBatch: capacity must be 1.." + maxCapacity + ", got " + capacity);
    }
    refuse(gate.tryBatch());
    BatchCore pooled = pool.take(capacity);
    if (pooled != null) {
      return CompletableFuture.completedFuture(new Batch(pooled, pooled.lease(), engine));
    }
    return AskPattern.<EngineGuardian.Command, EngineGuardian.SpawnBatchReply>ask(
            guardian,
            to -> new EngineGuardian.SpawnBatch(capacity, to),
            CallTimeouts.CONTROL,
            scheduler)
        .handle(
            (reply, failure) -> {
              if (reply instanceof EngineGuardian.BatchSpawned s) {
                return new Batch(s.core(), s.core().lease(), engine);
              }
              gate.releaseBatch();
              if (reply instanceof EngineGuardian.BatchRefused r) {
                refuse(r.decision());
              }
              throw new CompletionException(failure);
            });
  }

  /** A batch was freed: keep it for the next allocation of its capacity, or retire it. */
  void recycle(BatchCore core, boolean closing) {
    if (closing) {
      core.retire();
    } else {
      pool.give(core);
    }
  }

  /** The engine is closing: retire what the pool holds, and every batch freed from now on. */
  void close() {
    pool.close();
  }

  /** Throws the refusal of a budget decision that did not grant. */
  private static void refuse(Admission.Decision decision) {
    if (!decision.granted()) {
      throw new TransferException(
          decision.fenced() ? ErrorKind.UNAVAILABLE : ErrorKind.RESOURCE_EXHAUSTED,
          "allocateBatch: " + decision.refusal());
    }
  }
}
