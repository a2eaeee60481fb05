package io.orbite.config;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

class SecurityConfigTest {
  @Test
  void defaultsAreAutoWithoutCredentials() {
    SecurityConfig d = EngineConfig.fromJson("{}").security();
    assertEquals(SecurityConfig.defaults(), d);
    assertEquals("auto", d.mode());
    assertFalse(d.open());
    assertEquals("", d.secretFile());
  }

  @Test
  void readsEveryKey() {
    SecurityConfig s =
        EngineConfig.fromJson(
                "{\"security\":{\"secretFile\":\"/s\",\"identityKeyFile\":\"/k\","
                    + "\"peerKeysDir\":\"/p\"}}")
            .security();
    assertEquals(new SecurityConfig("auto", "/s", "/k", "/p"), s);
  }

  @Test
  void anUnknownModeIsRefusedNamingTheKey() {
    ConfigException e =
        assertThrows(
            ConfigException.class,
            () -> EngineConfig.fromJson("{\"security\":{\"mode\":\"closed\"}}"));
    assertEquals("security.mode", e.path());
    assertTrue(e.getMessage().contains("\"closed\""), e.getMessage());
  }

  @Test
  void openBesideACredentialIsRefusedNamingTheMode() {
    ConfigException e =
        assertThrows(ConfigException.class, () -> new SecurityConfig("open", "/s", "", ""));
    assertEquals("security.mode", e.path());
    assertTrue(e.getMessage().contains("security.secretFile"), e.getMessage());
    ConfigException keys =
        assertThrows(ConfigException.class, () -> new SecurityConfig("open", "", "/k", ""));
    assertTrue(keys.getMessage().contains("security.identityKeyFile"), keys.getMessage());
    assertTrue(new SecurityConfig("open", "", "", "").open());
  }

  @Test
  void peerKeysWithoutAnIdentityKeyAreRefused() {
    ConfigException e =
        assertThrows(ConfigException.class, () -> new SecurityConfig("auto", "", "", "/p"));
    assertEquals("security.peerKeysDir", e.path());
    assertTrue(e.getMessage().contains("security.identityKeyFile"), e.getMessage());
  }

  @Test
  void withersKeepTheOtherKeys() {
    SecurityConfig s = SecurityConfig.defaults().withSecretFile("/s").withKeys("/k", "/p");
    assertEquals(new SecurityConfig("auto", "/s", "/k", "/p"), s);
    assertEquals("open", SecurityConfig.defaults().withMode("open").mode());
    assertEquals(
        s, EngineConfig.defaults().withSecurity(s).security(), "withSecurity replaces the section");
  }

  @Test
  void tlsReadsItsThreeKeysAndNeedsBothStores() {
    SecurityConfig s =
        EngineConfig.fromJson(
                "{\"security\":{\"tlsKeyStore\":\"/a.p12\",\"tlsTrustStore\":\"/t.p12\","
                    + "\"tlsPasswordFile\":\"/pw\"}}")
            .security();
    assertEquals(new SecurityConfig("auto", "", "", "", "/a.p12", "/t.p12", "/pw"), s);
    assertTrue(s.tls());
    assertFalse(SecurityConfig.defaults().tls());
    assertEquals(s, SecurityConfig.defaults().withTls("/a.p12", "/t.p12", "/pw"));
    ConfigException noTrust =
        assertThrows(
            ConfigException.class, () -> SecurityConfig.defaults().withTls("/a.p12", "", ""));
    assertEquals("security.tlsKeyStore", noTrust.path());
    assertTrue(noTrust.getMessage().contains("security.tlsTrustStore"), noTrust.getMessage());
    ConfigException noKey =
        assertThrows(
            ConfigException.class, () -> SecurityConfig.defaults().withTls("", "/t.p12", ""));
    assertEquals("security.tlsTrustStore", noKey.path());
    ConfigException open =
        assertThrows(
            ConfigException.class,
            () -> new SecurityConfig("open", "", "", "", "/a.p12", "/t.p12", ""));
    assertEquals("security.mode", open.path());
    assertTrue(open.getMessage().contains("security.tlsKeyStore"), open.getMessage());
  }
}
