package io.orbite.engine.testkit;

import io.orbite.config.SecurityConfig;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.GeneralSecurityException;
import java.security.KeyPair;
import java.security.KeyPairGenerator;
import java.util.Base64;

/**
 * Ed25519 identities for engines in tests, written as the {@code security} section reads them: each
 * engine's private key in {@code <dir>/<name>.key} (PEM, PKCS#8) and every public key in {@code
 * <dir>/peers/<name>.pem}, so that engines configured from one directory prove their names to each
 * other.
 */
public final class TestKeys {
  private TestKeys() {}

  /**
   * Writes a fresh key pair for each of {@code names} under {@code dir}.
   *
   * @param dir an empty directory of the test's own
   * @param names the engine names to make identities for
   * @throws IOException when a file cannot be written
   */
  public static void write(Path dir, String... names) throws IOException {
    Path peers = Files.createDirectories(dir.resolve("peers"));
    try {
      KeyPairGenerator generator = KeyPairGenerator.getInstance("Ed25519");
      for (String name : names) {
        KeyPair pair = generator.generateKeyPair();
        Path key = dir.resolve(name + ".key");
        Files.writeString(key, pem("PRIVATE KEY", pair.getPrivate().getEncoded()));
        Files.setPosixFilePermissions(key, PosixFilePermissions.fromString("rw-------"));
        Files.writeString(
            peers.resolve(name + ".pem"), pem("PUBLIC KEY", pair.getPublic().getEncoded()));
      }
    } catch (GeneralSecurityException e) {
      throw new IllegalStateException("this JDK has no Ed25519", e);
    }
  }

  /**
   * The {@code security} section of engine {@code name}, whose keys {@link #write} wrote.
   *
   * @param dir the directory given to {@link #write}
   * @param name the engine's name
   * @return its identity key and the peer keys of every engine written there
   */
  public static SecurityConfig security(Path dir, String name) {
    return SecurityConfig.defaults()
        .withKeys(dir.resolve(name + ".key").toString(), dir.resolve("peers").toString());
  }

  private static String pem(String label, byte[] der) {
    return "-----BEGIN "
        + label
        + "-----\n"
        + new String(
            Base64.getMimeEncoder(64, "\n".getBytes(StandardCharsets.US_ASCII)).encode(der),
            StandardCharsets.US_ASCII)
        + "\n-----END "
        + label
        + "-----\n";
  }
}
