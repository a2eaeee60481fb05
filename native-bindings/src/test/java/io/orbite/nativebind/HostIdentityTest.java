package io.orbite.nativebind;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.nio.file.Files;
import java.util.UUID;
import org.junit.jupiter.api.Test;

class HostIdentityTest {

  @Test
  void currentHasNonEmptyHostnameAndBootId() {
    HostIdentity id = HostIdentity.current();
    assertFalse(id.hostname().isBlank());
    assertFalse(id.bootId().isBlank());
  }

  @Test
  void bootIdIsTheKernelsUuidWithoutTrailingNewline() throws Exception {
    HostIdentity id = HostIdentity.current();
    assertEquals(Files.readString(HostIdentity.BOOT_ID).trim(), id.bootId());
    assertEquals(id.bootId(), UUID.fromString(id.bootId()).toString());
  }

  @Test
  void hostnameMatchesTheKernelsHostname() throws Exception {
    assertEquals(Files.readString(HostIdentity.HOSTNAME).trim(), HostIdentity.current().hostname());
  }

  @Test
  void twoReadsInOneBootAreEqual() {
    assertEquals(HostIdentity.current(), HostIdentity.current());
  }

  @Test
  void blankComponentsAreRejected() {
    assertThrows(IllegalArgumentException.class, () -> new HostIdentity(" ", "x"));
    assertThrows(IllegalArgumentException.class, () -> new HostIdentity("h", ""));
    assertThrows(NullPointerException.class, () -> new HostIdentity(null, "x"));
  }
}
