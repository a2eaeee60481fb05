package io.orbite.engine.security;

import io.orbite.config.EngineConfig;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.GeneralSecurityException;
import java.security.KeyPair;
import java.security.KeyPairGenerator;
import java.util.Base64;

/**
 * Writes an engine's Ed25519 key pair as the {@code security} section reads them: {@code
 * <name>.key}, the private key ({@code identityKeyFile}, PEM PKCS#8, mode 600), and {@code
 * <name>.pem}, the public key to copy into each peer's {@code peerKeysDir}. Behind {@code ./orbite
 * keygen NAME DIR}.
 */
public final class KeyFiles {
  private KeyFiles() {}

  /**
   * Generates a pair for {@code name} and writes both files into {@code dir}, refusing to replace
   * either.
   *
   * @param name the engine's name, as its {@code name} key gives it
   * @param dir where to write; created when missing
   * @return the private key file
   * @throws IllegalArgumentException when {@code name} is not an engine name
   * @throws IOException when a file exists already or cannot be written
   */
  public static Path writePair(String name, Path dir) throws IOException {
    if (name == null || !name.matches(EngineConfig.NAME_REGEX)) {
      throw new IllegalArgumentException(
          "engine name '" + name + "' does not match " + EngineConfig.NAME_REGEX);
    }
    KeyPair pair;
    try {
      pair = KeyPairGenerator.getInstance("Ed25519").generateKeyPair();
    } catch (GeneralSecurityException e) {
      throw new IllegalStateException("Ed25519 is unavailable in this JDK", e);
    }
    Files.createDirectories(dir);
    Path privateFile = dir.resolve(name + ".key");
    Path publicFile = dir.resolve(name + ".pem");
    for (Path f : new Path[] {privateFile, publicFile}) {
      if (Files.exists(f)) {
        throw new FileAlreadyExistsException(f + " exists; remove it first to make a new key");
      }
    }
    Files.createFile(
        privateFile,
        PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rw-------")));
    Files.writeString(
        privateFile,
        pem("PRIVATE KEY", pair.getPrivate().getEncoded()),
        StandardCharsets.US_ASCII,
        StandardOpenOption.TRUNCATE_EXISTING);
    Files.writeString(
        publicFile, pem("PUBLIC KEY", pair.getPublic().getEncoded()), StandardCharsets.US_ASCII);
    return privateFile;
  }

  private static String pem(String label, byte[] der) {
    return "-----BEGIN "
        + label
        + "-----\n"
        + Base64.getMimeEncoder(64, new byte[] {'\n'}).encodeToString(der)
        + "\n-----END "
        + label
        + "-----\n";
  }
}
