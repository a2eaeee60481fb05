package io.orbite.transport;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.orbite.config.EngineConfig;
import io.orbite.engine.Access;
import io.orbite.engine.Batch;
import io.orbite.engine.BatchStatus;
import io.orbite.engine.ErrorKind;
import io.orbite.engine.RegisteredMemory;
import io.orbite.engine.RemoteRegion;
import io.orbite.engine.RemoteSegment;
import io.orbite.engine.TaskResult;
import io.orbite.engine.TransferEngine;
import io.orbite.engine.TransferException;
import io.orbite.engine.TransferRequest;
import io.orbite.engine.testkit.TestKeys;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Per-region allow-lists through real engines whose peers prove their names (Ed25519 keys): a peer
 * the list names finds the range by name and reads exactly its bytes; a peer it does not name gets
 * a Describe answer without it, so its READ is refused before a byte moves, while a range without a
 * list serves both; and the API refuses a malformed list, or a list on an engine whose peers prove
 * no name, registering nothing. Every READ checks the whole local buffer, payload and guard bytes,
 * and the source's range.
 */
class AllowListEngineTest {
  private static final Duration WAIT = Duration.ofSeconds(20);
  private static final int LEN = 64 * 1024;
  private static final int GUARD = 4096;
  private static final byte GUARD_BYTE = 0x5A;

  @TempDir Path keys;

  private final List<TransferEngine> engines = new ArrayList<>();

  @AfterEach
  void close() {
    engines.forEach(e -> e.close(WAIT));
  }

  private TransferEngine start(EngineConfig config) {
    TransferEngine engine = TransferEngine.start(config);
    engines.add(engine);
    return engine;
  }

  private TransferEngine proving(String name) {
    return start(
        EngineConfig.defaults().withName(name).withSecurity(TestKeys.security(keys, name)));
  }

  private static byte patternAt(long i, int seed) {
    return (byte) (i * 29 + (i >>> 9) + seed);
  }

  private static RegisteredMemory filled(RegisteredMemory region, int seed) {
    for (long i = 0; i < region.lengthBytes(); i++) {
      region.segment().set(ValueLayout.JAVA_BYTE, i, patternAt(i, seed));
    }
    return region;
  }

  private static void assertHolds(RegisteredMemory region, int seed, String what) {
    for (long i = 0; i < region.lengthBytes(); i++) {
      byte got = region.segment().get(ValueLayout.JAVA_BYTE, i);
      if (got != patternAt(i, seed)) {
        assertEquals(patternAt(i, seed), got, what + ": byte " + i);
      }
    }
  }

  /** A local buffer of guard, payload, guard, all guard bytes. */
  private static RegisteredMemory guarded(TransferEngine engine) {
    RegisteredMemory local = engine.allocate(GUARD + LEN + GUARD, Access.READ_WRITE);
    local.segment().fill(GUARD_BYTE);
    return local;
  }

  /** The local buffer holds {@code seed}'s pattern between its guards, or (null) only guards. */
  private static void assertLocal(RegisteredMemory local, Integer seed, String what) {
    for (long i = 0; i < local.lengthBytes(); i++) {
      boolean payload = i >= GUARD && i < GUARD + LEN;
      byte want = payload && seed != null ? patternAt(i - GUARD, seed) : GUARD_BYTE;
      byte got = local.segment().get(ValueLayout.JAVA_BYTE, i);
      if (got != want) {
        assertEquals(want, got, what + ": local byte " + i + (payload ? "" : " (guard)"));
      }
    }
  }

  private static TaskResult read(
      TransferEngine requester, RegisteredMemory local, RemoteSegment remote, long regionId) {
    Batch batch = requester.allocateBatch(1);
    try {
      batch.submit(List.of(TransferRequest.read(local, GUARD, remote, regionId, 0, LEN)));
      BatchStatus status = batch.await(WAIT);
      return status.tasks().getFirst();
    } finally {
      batch.free();
    }
  }

  @Test
  void onlyAPeerThatProvedAListedNameSeesAndReadsTheRange() throws IOException {
    TestKeys.write(keys, "source", "decode-1", "decode-2");
    TransferEngine source = proving("source");
    TransferEngine listed = proving("decode-1");
    TransferEngine unlisted = proving("decode-2");
    RegisteredMemory kept =
        filled(source.allocate(LEN, Access.READ_WRITE, "kv-private", Set.of("decode-1")), 1);
    RegisteredMemory open = filled(source.allocate(LEN, Access.READ, "kv-public"), 2);
    assertEquals(Set.of("decode-1"), kept.allowedPeers());

    try (RemoteSegment segment = listed.openSegment(source.localSegment(), WAIT)) {
      Optional<RemoteRegion> region = segment.region("kv-private");
      assertTrue(region.isPresent(), () -> "decode-1 sees it: " + segment.regions());
      RegisteredMemory local = guarded(listed);
      TaskResult r = read(listed, local, segment, region.get().regionId());
      assertEquals(null, r.errorKind(), r::toString);
      assertEquals(LEN, r.bytes());
      assertLocal(local, 1, "decode-1 read kv-private");
    }

    try (RemoteSegment segment = unlisted.openSegment(source.localSegment(), WAIT)) {
      assertEquals(
          List.of("kv-public"),
          segment.regions().stream().map(RemoteRegion::name).toList(),
          "decode-2's Describe answer lists only the range without a list");
      RegisteredMemory local = guarded(unlisted);
      TransferException refused =
          assertThrows(
              TransferException.class, () -> read(unlisted, local, segment, kept.regionId()));
      assertEquals(ErrorKind.INVALID_ARGUMENT, refused.kind(), refused::getMessage);
      assertTrue(refused.getMessage().contains("was not published"), refused::getMessage);
      assertLocal(local, null, "decode-2's refused READ");

      TaskResult r = read(unlisted, local, segment, open.regionId());
      assertEquals(null, r.errorKind(), r::toString);
      assertLocal(local, 2, "decode-2 read kv-public");
    }
    assertHolds(kept, 1, "kv-private at the source");
    assertHolds(open, 2, "kv-public at the source");
  }

  @Test
  void malformedListsAndListsWithoutProvenNamesAreRefusedAndNothingIsRegistered()
      throws IOException {
    TestKeys.write(keys, "source", "decode-1");
    TransferEngine source = proving("source");
    TransferException badName =
        assertThrows(
            TransferException.class,
            () -> source.allocate(LEN, Access.READ, "kv", Set.of("decode 1")));
    assertEquals(ErrorKind.INVALID_ARGUMENT, badName.kind());
    assertTrue(badName.getMessage().contains("'decode 1'"), badName::getMessage);
    List<String> many = new ArrayList<>();
    for (int i = 0; i <= TransferEngine.MAX_ALLOWED_PEERS; i++) {
      many.add("peer-" + i);
    }
    TransferException tooMany =
        assertThrows(
            TransferException.class,
            () -> source.allocate(LEN, Access.READ, "kv", Set.copyOf(many)));
    assertTrue(tooMany.getMessage().contains("at most 1024"), tooMany::getMessage);
    assertEquals(List.of(), source.localRegions(), "nothing was registered");

    TransferEngine plain = start(EngineConfig.defaults().withName("plain"));
    TransferException unproven =
        assertThrows(
            TransferException.class,
            () -> plain.allocate(LEN, Access.READ, "kv", Set.of("decode-1")));
    assertEquals(ErrorKind.INVALID_ARGUMENT, unproven.kind());
    assertTrue(unproven.getMessage().contains("security.peerKeysDir"), unproven::getMessage);
    try (Arena arena = Arena.ofShared()) {
      MemorySegment range = arena.allocate(LEN);
      range.fill((byte) 0x3C);
      TransferException callers =
          assertThrows(
              TransferException.class,
              () -> plain.register(range, Access.READ_WRITE, "kv", Set.of("decode-1")));
      assertTrue(callers.getMessage().contains("register: allow-lists need"), callers::getMessage);
      for (long i = 0; i < LEN; i++) {
        assertEquals((byte) 0x3C, range.get(ValueLayout.JAVA_BYTE, i), "caller's byte " + i);
      }
    }
    assertEquals(List.of(), plain.localRegions(), "nothing was registered");
    RegisteredMemory localOnly = plain.allocate(LEN, Access.READ, "kv", Set.of());
    assertEquals(Set.of(), localOnly.allowedPeers(), "the empty list needs no proven names");
  }
}
