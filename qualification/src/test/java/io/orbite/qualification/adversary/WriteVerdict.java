package io.orbite.qualification.adversary;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.orbite.engine.RemoteEffect;
import io.orbite.engine.TaskResult;
import io.orbite.engine.TransferRequest;
import io.orbite.qualification.verify.Span;
import java.util.Optional;

/**
 * One WRITE task's report judged against the adversary's ledger (C4, C6): a COMPLETED WRITE was
 * applied exactly once and acknowledged; a failed one was never acknowledged, and is UNKNOWN if any
 * frame of it reached the peer; none is applied in part (the tests' WRITEs are one frame).
 */
final class WriteVerdict {
  private WriteVerdict() {}

  /**
   * Checks {@code t}, the result of WRITE {@code r} whose local bytes hold pattern {@code
   * localSeed}, and returns the span it left in the peer's region, if it was applied.
   */
  static Optional<Span> check(Ledger ledger, TaskResult t, TransferRequest r, long localSeed) {
    long remote = r.remoteOffset();
    long length = r.lengthBytes();
    long applied = ledger.bytesAppliedInto(remote, length);
    if (t.completed()) {
      assertEquals(RemoteEffect.APPLIED, t.remoteEffect(), t::toString);
      assertEquals(length, applied, () -> "a COMPLETED WRITE was applied exactly once: " + t);
      assertTrue(
          ledger.ackedInto(remote, length), () -> "a COMPLETED WRITE was acknowledged: " + t);
    } else {
      assertEquals(0, t.bytes(), t::toString);
      assertTrue(
          !ledger.ackedInto(remote, length),
          () -> "an acknowledged WRITE reported failed: " + t + ledger.historyOf(remote, length));
      if (!ledger.writesInto(remote, length).isEmpty()) {
        assertEquals(
            RemoteEffect.UNKNOWN, t.remoteEffect(), () -> "reached the peer unacknowledged: " + t);
      }
    }
    if (applied == 0) {
      return Optional.empty();
    }
    assertEquals(length, applied, () -> "a one-frame WRITE applied in part: " + t);
    return Optional.of(new Span(remote, length, localSeed, r.localOffset()));
  }
}
