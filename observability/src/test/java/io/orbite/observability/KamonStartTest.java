package io.orbite.observability;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import java.util.List;
import kamon.Kamon;
import org.junit.jupiter.api.Test;
import org.slf4j.LoggerFactory;

/**
 * Kamon's start, as the first engine that serves metrics makes it in a JVM (this class runs in a
 * JVM of its own: the module's surefire forks one per class): Kamon logs nothing about the Kanela
 * agent it runs without, no ANSI escape reaches the application's console from it, and the
 * Prometheus reporter still gets every tick.
 */
class KamonStartTest {
  @Test
  void kamonStartsWithoutAKanelaLineAndStillReports() throws Exception {
    Logger kamonLogs = (Logger) LoggerFactory.getLogger("kamon");
    kamonLogs.setLevel(Level.ALL);
    ListAppender<ILoggingEvent> seen = new ListAppender<>();
    seen.start();
    kamonLogs.addAppender(seen);
    try {
      KamonRuntime.acquire(100);
      try {
        Kamon.counter("kamon_start_probe", "A probe of the first tick.").withoutTags().increment(7);
        long deadline = System.nanoTime() + 10_000_000_000L;
        while (!KamonRuntime.scrape().contains("kamon_start_probe_total 7.0")
            && System.nanoTime() < deadline) {
          Thread.sleep(50);
        }
        String scrape = KamonRuntime.scrape();
        assertTrue(
            scrape.contains("kamon_start_probe_total 7.0"), "the reporter got a tick: " + scrape);
        assertTrue(
            scrape.contains("# HELP kamon_start_probe_total A probe of the first tick."),
            "descriptions become HELP lines: " + scrape);
        assertEquals(100, KamonRuntime.tickMillis());
      } finally {
        KamonRuntime.release();
      }
    } finally {
      kamonLogs.detachAppender(seen);
    }
    List<String> lines = seen.list.stream().map(ILoggingEvent::getFormattedMessage).toList();
    assertFalse(
        lines.stream().anyMatch(l -> l.toLowerCase(java.util.Locale.ROOT).contains("kanela")),
        "Kamon said something about Kanela: " + lines);
    assertFalse(
        lines.stream().anyMatch(l -> l.indexOf('\u001b') >= 0),
        "Kamon logged an ANSI escape: " + lines);
  }
}
