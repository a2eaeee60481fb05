package io.orbite.qualification.shm;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.orbite.qualification.harness.EngineProcess;
import io.orbite.qualification.verify.Span;
import java.io.IOException;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/** Helpers for SHM tests whose source is an engine process: its configuration, counters and byte checks. */
final class ShmPeer {
  /** ORBITE_CONF of a source that exports its allocations through SHM. */
  static final Map<String, String> SHM_SOURCE = Map.of("ORBITE_CONF", "{\"shm\":{\"enabled\":true}}");

  private ShmPeer() {}

  /** The process's counters ({@code COUNTERS}) by name. */
  static Map<String, Long> counters(EngineProcess p) throws IOException {
    Map<String, Long> out = new HashMap<>();
    for (String kv : p.call("COUNTERS").split(" ")) {
      int eq = kv.indexOf('=');
      out.put(kv.substring(0, eq), Long.parseLong(kv.substring(eq + 1)));
    }
    return out;
  }

  /** Asserts that the process's region holds {@code spans} and its guard pattern everywhere else. */
  static void assertRemoteRegion(EngineProcess p, long regionId, long guardSeed, List<Span> spans, String what)
      throws IOException {
    List<String> lines = spans.stream()
        .map(s -> s.offset() + " " + s.length() + " " + s.seed() + " " + s.from()).toList();
    assertEquals("OK", p.ask("VERIFY " + regionId + " " + guardSeed + " " + spans.size(), lines), what);
  }
}
