package io.orbite.qualification.shm;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.orbite.engine.Access;
import io.orbite.engine.RegisteredMemory;
import io.orbite.engine.RemoteSegment;
import io.orbite.engine.TransferEngine;
import io.orbite.qualification.harness.EngineProcess;
import io.orbite.qualification.verify.Pattern;
import io.orbite.qualification.verify.Span;
import java.io.IOException;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * Helpers for SHM tests whose source is an engine process: its configuration, counters and byte
 * checks.
 */
final class ShmPeer {
  /** ORBITE_CONF of a source that exports its allocations through SHM. */
  static final Map<String, String> SHM_SOURCE =
      Map.of("ORBITE_CONF", "{\"shm\":{\"enabled\":true}}");

  private ShmPeer() {}

  /**
   * A source allocation, a local region of the same size, and the source opened from the requester.
   */
  record Opened(long remote, RegisteredMemory local, RemoteSegment peer) {}

  /**
   * Allocates {@code bytes} at the source filled with {@code sourceSeed}'s pattern, the same in the
   * requester filled with {@code localSeed}'s, and opens the source, asserting that its allocation
   * is reached over SHM.
   */
  static Opened open(
      EngineProcess source, TransferEngine requester, long bytes, long sourceSeed, long localSeed)
      throws IOException {
    long remote = Long.parseLong(source.call("ALLOC " + bytes + " READ_WRITE"));
    source.call("FILL " + remote + " " + sourceSeed);
    RegisteredMemory local = requester.allocate(bytes, Access.READ_WRITE);
    Pattern.fill(local.segment(), 0, bytes, localSeed, 0);
    RemoteSegment peer = requester.openSegment(source.endpoint(), Duration.ofSeconds(10));
    assertTrue(peer.sharedReachable(remote), "SHM chosen for the same-host source");
    return new Opened(remote, local, peer);
  }

  /** The process's counters ({@code COUNTERS}) by name. */
  static Map<String, Long> counters(EngineProcess p) throws IOException {
    Map<String, Long> out = new HashMap<>();
    for (String kv : p.call("COUNTERS").split(" ")) {
      int eq = kv.indexOf('=');
      out.put(kv.substring(0, eq), Long.parseLong(kv.substring(eq + 1)));
    }
    return out;
  }

  /**
   * Asserts that the process's region holds {@code spans} and its guard pattern everywhere else.
   */
  static void assertRemoteRegion(
      EngineProcess p, long regionId, long guardSeed, List<Span> spans, String what)
      throws IOException {
    assertEquals("OK", p.verify(regionId, guardSeed, spans), what);
  }
}
