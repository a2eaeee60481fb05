package io.orbite.engine.spi;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;

import io.orbite.engine.Access;
import io.orbite.engine.security.AuthenticatedPeer;
import java.lang.foreign.Arena;
import java.util.HashSet;
import java.util.Set;
import org.junit.jupiter.api.Test;

/**
 * {@link Registration#allows}: without an allow-list every peer (and a connection that proved
 * nothing) may reach the range; with one, only a peer whose handshake proved a listed name.
 */
class RegistrationAllowListTest {
  private static final AuthenticatedPeer PROVEN_LISTED = new AuthenticatedPeer("decode-1", 7, true);
  private static final AuthenticatedPeer PROVEN_UNLISTED =
      new AuthenticatedPeer("decode-9", 7, true);
  private static final AuthenticatedPeer UNPROVEN_LISTED =
      new AuthenticatedPeer("decode-1", 7, false);

  private static Registration registered(Set<String> allowedPeers) {
    return new Registration(
        1, Arena.ofAuto().allocate(64), Access.READ_WRITE, null, null, "kv", allowedPeers);
  }

  @Test
  void onlyAProvenListedNameIsAllowedAndNoListAllowsEveryone() {
    Registration listed = registered(Set.of("decode-1", "decode-2"));
    Registration open = registered(null);
    Registration closed = registered(Set.of());
    Object[][] table = {
      // peer, allowed by the list, allowed without a list, allowed by the empty list
      {PROVEN_LISTED, true, true, false},
      {PROVEN_UNLISTED, false, true, false},
      {UNPROVEN_LISTED, false, true, false},
      {null, false, true, false},
    };
    for (Object[] row : table) {
      AuthenticatedPeer peer = (AuthenticatedPeer) row[0];
      assertEquals(row[1], listed.allows(peer), () -> "with the list: " + peer);
      assertEquals(row[2], open.allows(peer), () -> "without a list: " + peer);
      assertEquals(row[3], closed.allows(peer), () -> "with the empty list: " + peer);
    }
  }

  @Test
  void theListIsACopyThatTheCallerCannotChangeAfterwards() {
    Set<String> callers = new HashSet<>(Set.of("decode-1"));
    Registration r = registered(callers);
    callers.add("decode-9");
    callers.remove("decode-1");
    assertEquals(Set.of("decode-1"), r.allowedPeers());
    assertEquals(true, r.allows(PROVEN_LISTED));
    assertEquals(false, r.allows(PROVEN_UNLISTED));
    assertThrows(UnsupportedOperationException.class, () -> r.allowedPeers().add("x"));
    assertNull(registered(null).allowedPeers(), "no list: every peer");
  }
}
