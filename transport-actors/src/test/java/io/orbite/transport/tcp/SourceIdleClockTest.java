package io.orbite.transport.tcp;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

/**
 * The idle clock of a source lane: idle only once quiet for the whole timeout, never while serving
 * (nor before the lane's HELLO is answered), and a request that finds the lane closed idle is not
 * served.
 */
class SourceIdleClockTest {
  private static final long TIMEOUT = 1_000_000_000L;

  /** A time well past the timeout of anything made quiet before it. */
  private static long later() {
    return System.nanoTime() + 2 * TIMEOUT;
  }

  @Test
  void aLaneThatWasNeverQuietIsNeverIdle() {
    SourceIdleClock clock = new SourceIdleClock();
    assertFalse(clock.closeIfIdle(later(), TIMEOUT), "not before its HELLO is answered");
    assertTrue(clock.serving());
    assertFalse(clock.closeIfIdle(later(), TIMEOUT), "not while it serves");
  }

  @Test
  void aQuietLaneIsIdleOnlyOnceTheTimeoutPassed() {
    SourceIdleClock clock = new SourceIdleClock();
    clock.quiet();
    assertFalse(clock.closeIfIdle(System.nanoTime(), TIMEOUT), "quiet, but not for long enough");
    assertTrue(clock.closeIfIdle(later(), TIMEOUT));
    assertFalse(clock.closeIfIdle(later(), TIMEOUT), "closed once");
    assertFalse(clock.serving(), "a request after the idle close is not served");
    clock.quiet();
    assertFalse(clock.serving(), "closed for good");
  }

  @Test
  void aRequestRestartsTheClock() {
    SourceIdleClock clock = new SourceIdleClock();
    clock.quiet();
    assertTrue(clock.serving());
    assertFalse(clock.closeIfIdle(later(), TIMEOUT), "serving");
    clock.quiet();
    assertFalse(
        clock.closeIfIdle(System.nanoTime(), TIMEOUT),
        "the clock started again when it went quiet");
    assertTrue(clock.serving());
    assertTrue(clock.serving(), "several requests in a row");
  }
}
