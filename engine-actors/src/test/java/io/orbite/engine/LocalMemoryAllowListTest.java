package io.orbite.engine;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.orbite.engine.registry.Registry;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.HashSet;
import java.util.Set;
import java.util.stream.Collectors;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Test;

/**
 * The allow-list of {@code allocate} and {@code register}, checked on the caller's thread before
 * any memory is allocated or registered: engine names only, at most {@link
 * TransferEngine#MAX_ALLOWED_PEERS}, no null, and a non-empty list only where peers prove their
 * names; what is accepted is a copy, carried to the Registry.
 */
class LocalMemoryAllowListTest {
  /** More than any machine can allocate: an allocation tried first fails RESOURCE_EXHAUSTED. */
  private static final long UNALLOCATABLE = Long.MAX_VALUE / 2;

  private static TransferException refusedAllocate(Set<String> peers, boolean namesProven) {
    return assertThrows(
        TransferException.class,
        () ->
            LocalMemory.allocate(
                null, "test", UNALLOCATABLE, Access.READ_WRITE, "kv", peers, namesProven));
  }

  private static void assertRefused(TransferException e, String... phrases) {
    assertEquals(ErrorKind.INVALID_ARGUMENT, e.kind(), e.getMessage());
    for (String phrase : phrases) {
      assertTrue(e.detail().contains(phrase), () -> "'" + phrase + "' in " + e.detail());
    }
  }

  private static Set<String> names(int count) {
    return IntStream.range(0, count).mapToObj(i -> "peer-" + i).collect(Collectors.toSet());
  }

  @Test
  void malformedListsAreRefusedNamingWhatIsWrongBeforeAnyMemoryIsAllocated() {
    assertEquals(
        ErrorKind.RESOURCE_EXHAUSTED,
        refusedAllocate(Set.of("decode-1"), true).kind(),
        "a valid list lets the allocation be tried (and fail): the refusals below come first");
    assertRefused(
        refusedAllocate(Set.of("decode 1"), true),
        "allocate: allowedPeers holds 'decode 1'",
        "not an engine name",
        io.orbite.config.EngineConfig.NAME_REGEX);
    assertRefused(
        refusedAllocate(Set.of(""), true), "allocate: allowedPeers holds ''", "not an engine name");
    assertRefused(
        refusedAllocate(Set.of("n".repeat(65)), true),
        "allocate: allowedPeers holds 'nnn",
        "not an engine name");
    Set<String> withNull = new HashSet<>(Set.of("decode-1"));
    withNull.add(null);
    assertRefused(refusedAllocate(withNull, true), "allocate: allowedPeers holds a null name");
    assertRefused(
        refusedAllocate(names(TransferEngine.MAX_ALLOWED_PEERS + 1), true),
        "allocate: allowedPeers holds 1025 names; at most 1024");
  }

  @Test
  void aListOfNamesIsRefusedWherePeersDoNotProveTheirNames() {
    TransferException e = refusedAllocate(Set.of("decode-1"), false);
    assertEquals(ErrorKind.INVALID_ARGUMENT, e.kind(), e.getMessage());
    assertEquals(
        "allocate: allow-lists need proven peer names: configure security.identityKeyFile and"
            + " security.peerKeysDir, or mutual TLS (security.tlsKeyStore)",
        e.detail());
  }

  @Test
  void theLargestListAndTheEmptyListAreAcceptedAsCopies() {
    Set<String> largest = names(TransferEngine.MAX_ALLOWED_PEERS);
    assertEquals(largest, LocalMemory.checkAllowedPeers("allocate", largest, true));
    Set<String> none = new HashSet<>();
    Set<String> kept = LocalMemory.checkAllowedPeers("allocate", none, false);
    assertEquals(Set.of(), kept, "no peer at all needs no proof of names");
    none.add("decode-1");
    assertEquals(Set.of(), kept, "the caller's set is copied");
    assertNull(LocalMemory.checkAllowedPeers("allocate", null, false), "null: every peer");
  }

  @Test
  void aRegisterRefusedForItsListLeavesTheCallersMemoryUntouched() {
    try (Arena arena = Arena.ofConfined()) {
      MemorySegment range = arena.allocate(4096);
      for (long i = 0; i < range.byteSize(); i++) {
        range.set(ValueLayout.JAVA_BYTE, i, (byte) (i * 31 + 7));
      }
      TransferException e =
          assertThrows(
              TransferException.class,
              () -> LocalMemory.callers(range, Access.READ_WRITE, "kv", Set.of("decode-1"), false));
      assertEquals(ErrorKind.INVALID_ARGUMENT, e.kind());
      assertTrue(e.detail().startsWith("register: allow-lists need proven"), e.detail());
      for (long i = 0; i < range.byteSize(); i++) {
        assertEquals((byte) (i * 31 + 7), range.get(ValueLayout.JAVA_BYTE, i), "byte " + i);
      }
    }
  }

  @Test
  void anAcceptedListTravelsToTheRegistryAsACopy() {
    try (Arena arena = Arena.ofConfined()) {
      Set<String> peers = new HashSet<>(Set.of("decode-1", "decode-2"));
      LocalMemory m = LocalMemory.callers(arena.allocate(64), Access.READ, "kv", peers, true);
      peers.clear();
      Registry.Register register = m.register(null);
      assertEquals(Set.of("decode-1", "decode-2"), register.allowedPeers());
      assertEquals("kv", register.name());
      assertNull(
          LocalMemory.callers(arena.allocate(64), Access.READ, "kv2", null, false)
              .register(null)
              .allowedPeers());
    }
  }
}
