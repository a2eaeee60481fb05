package io.orbite.engine.security;

import io.orbite.config.EngineConfig;
import io.orbite.config.SecurityConfig;
import io.orbite.engine.ErrorKind;
import io.orbite.engine.TransferException;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermission;
import java.security.GeneralSecurityException;
import java.security.KeyFactory;
import java.security.PrivateKey;
import java.security.PublicKey;
import java.security.spec.PKCS8EncodedKeySpec;
import java.security.spec.X509EncodedKeySpec;
import java.util.Arrays;
import java.util.Base64;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.function.Function;
import java.util.regex.Pattern;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What this engine proves itself with and checks its peers against, read once at start from the
 * {@code security} section: the shared secret (from {@code security.secretFile} or {@value
 * SecurityConfig#SECRET_ENV_VAR}), this engine's Ed25519 private key, and its peers' public keys by
 * engine name. Immutable; {@link #toString()} names where each came from, never a secret's bytes.
 */
public final class Credentials {
  private static final Logger LOG = LoggerFactory.getLogger(Credentials.class);
  private static final Pattern NAME = Pattern.compile(EngineConfig.NAME_REGEX);
  private static final int MAX_KEY_FILE_BYTES = 16 * 1024;

  /** No credentials: an engine that does not authenticate. */
  public static final Credentials NONE = new Credentials(null, "", null, null, null, false);

  private final byte[] secret;
  private final String secretSource;
  private final PrivateKey identityKey;
  private final Map<String, PublicKey> peerKeys;
  private final TlsIdentity tls;
  private final boolean open;

  private Credentials(
      byte[] secret,
      String secretSource,
      PrivateKey identityKey,
      Map<String, PublicKey> peerKeys,
      TlsIdentity tls,
      boolean open) {
    this.tls = tls;
    this.secret = secret;
    this.secretSource = secretSource;
    this.identityKey = identityKey;
    this.peerKeys = peerKeys;
    this.open = open;
  }

  /**
   * Reads the credentials {@code config} names, for the engine called {@code engineName}.
   *
   * @param config the engine's {@code security} section
   * @param engineName this engine's name, whose own public key (if listed) must match its identity
   *     key
   * @param env the environment, for {@value SecurityConfig#SECRET_ENV_VAR}
   * @return the credentials, read once
   * @throws TransferException INVALID_ARGUMENT naming the key ({@code security.secretFile}, {@code
   *     security.identityKeyFile}, {@code security.peerKeysDir}) or the environment variable whose
   *     value cannot be used, and why
   */
  public static Credentials load(
      SecurityConfig config, String engineName, Function<String, String> env) {
    String fromEnv = env.apply(SecurityConfig.SECRET_ENV_VAR);
    if (fromEnv != null && fromEnv.isEmpty()) {
      fromEnv = null;
    }
    if (config.open()) {
      if (fromEnv != null) {
        throw invalid(
            "security.mode",
            "\"open\" turns authentication off, but $"
                + SecurityConfig.SECRET_ENV_VAR
                + " holds a secret; unset one of them");
      }
      if (env.apply(SecurityConfig.TLS_PASSWORD_ENV_VAR) != null) {
        LOG.warn(
            "security.mode \"open\": ${} is set and ignored (no TLS)",
            SecurityConfig.TLS_PASSWORD_ENV_VAR);
      }
      return new Credentials(null, "", null, null, null, true);
    }
    byte[] secret = null;
    String source = "";
    if (!config.secretFile().isEmpty()) {
      if (fromEnv != null) {
        throw invalid(
            "security.secretFile",
            "is set, and so is $"
                + SecurityConfig.SECRET_ENV_VAR
                + "; the secret must come from one of them");
      }
      secret = readSecretFile(Path.of(config.secretFile()));
      source = "security.secretFile " + config.secretFile();
    } else if (fromEnv != null) {
      secret = fromEnv.getBytes(StandardCharsets.UTF_8);
      source = "$" + SecurityConfig.SECRET_ENV_VAR;
      checkSecretLength("$" + SecurityConfig.SECRET_ENV_VAR, secret.length);
    }
    PrivateKey identity =
        config.identityKeyFile().isEmpty()
            ? null
            : readPrivateKey(Path.of(config.identityKeyFile()));
    Map<String, PublicKey> peers =
        config.peerKeysDir().isEmpty() ? null : readPeerKeys(Path.of(config.peerKeysDir()));
    TlsIdentity tls = config.tls() ? TlsIdentity.load(config, engineName, env) : null;
    if (identity != null && secret == null && peers == null && tls == null) {
      throw invalid(
          "security.identityKeyFile",
          "is set, but neither a secret nor security.peerKeysDir (nor TLS) is: this engine would"
              + " prove its name and check no peer");
    }
    if (identity != null && peers != null && peers.containsKey(engineName)) {
      // An operator who copied the wrong key finds out here, not from every peer's refusals.
      byte[] probe = "orbite key check".getBytes(StandardCharsets.US_ASCII);
      if (!Signatures.verify(peers.get(engineName), probe, Signatures.sign(identity, probe))) {
        throw invalid(
            "security.identityKeyFile",
            "does not match " + engineName + ".pem in security.peerKeysDir, this engine's name");
      }
    }
    return new Credentials(secret, source, identity, peers, tls, false);
  }

  /** Credentials with TLS alone, for tests that hold an identity built around the checks. */
  static Credentials withTls(TlsIdentity tls) {
    return new Credentials(null, "", null, null, tls, false);
  }

  private static void checkSecretLength(String what, int length) {
    if (length < SecurityConfig.MIN_SECRET_BYTES || length > SecurityConfig.MAX_SECRET_BYTES) {
      throw invalid(
          what,
          "holds a secret of "
              + length
              + " bytes; it must be "
              + SecurityConfig.MIN_SECRET_BYTES
              + ".."
              + SecurityConfig.MAX_SECRET_BYTES
              + " bytes");
    }
  }

  private static byte[] readSecretFile(Path file) {
    String key = "security.secretFile";
    byte[] bytes = readBounded(key, file, SecurityConfig.MAX_SECRET_BYTES + 2);
    int length = bytes.length;
    if (length > 0 && bytes[length - 1] == '\n') {
      length--;
      if (length > 0 && bytes[length - 1] == '\r') {
        length--;
      }
    }
    checkSecretLength(key + " " + file, length);
    warnIfOthersRead(key, file);
    byte[] secret = Arrays.copyOf(bytes, length);
    Arrays.fill(bytes, (byte) 0);
    return secret;
  }

  private static void warnIfOthersRead(String key, Path file) {
    try {
      Set<PosixFilePermission> p = Files.getPosixFilePermissions(file);
      if (p.contains(PosixFilePermission.OTHERS_READ)
          || p.contains(PosixFilePermission.GROUP_READ)) {
        LOG.warn("{} {} is readable by its group or others; chmod 600 it", key, file);
      }
    } catch (IOException | UnsupportedOperationException e) {
      // Not a POSIX file system: nothing to warn about.
    }
  }

  private static byte[] readBounded(String key, Path file, int max) {
    if (Files.isDirectory(file)) {
      throw invalid(key, file + " is a directory, not a file");
    }
    try (var in = Files.newInputStream(file)) {
      byte[] bytes = in.readNBytes(max + 1);
      if (bytes.length > max) {
        throw invalid(key, file + " is over " + max + " bytes");
      }
      return bytes;
    } catch (NoSuchFileException e) {
      throw invalid(key, file + " does not exist");
    } catch (IOException e) {
      throw invalid(key, file + " cannot be read: " + e);
    }
  }

  private static byte[] pem(String key, Path file, String label) {
    String text = new String(readBounded(key, file, MAX_KEY_FILE_BYTES), StandardCharsets.US_ASCII);
    String begin = "-----BEGIN " + label + "-----";
    String end = "-----END " + label + "-----";
    int b = text.indexOf(begin);
    int e = text.indexOf(end);
    if (b < 0 || e < b) {
      throw invalid(key, file + " is not a PEM " + label + " (no " + begin + " ... " + end + ")");
    }
    try {
      return Base64.getMimeDecoder().decode(text.substring(b + begin.length(), e));
    } catch (IllegalArgumentException ex) {
      throw invalid(key, file + ": its PEM body is not base64: " + ex.getMessage());
    }
  }

  private static PrivateKey readPrivateKey(Path file) {
    String key = "security.identityKeyFile";
    byte[] der = pem(key, file, "PRIVATE KEY");
    warnIfOthersRead(key, file);
    try {
      return KeyFactory.getInstance("Ed25519").generatePrivate(new PKCS8EncodedKeySpec(der));
    } catch (GeneralSecurityException e) {
      throw invalid(key, file + " is not an Ed25519 private key (PKCS#8): " + e.getMessage());
    }
  }

  /** The public key in {@code file} (PEM {@code PUBLIC KEY}, Ed25519), naming {@code key}. */
  static PublicKey readPublicKey(String key, Path file) {
    byte[] der = pem(key, file, "PUBLIC KEY");
    try {
      return KeyFactory.getInstance("Ed25519").generatePublic(new X509EncodedKeySpec(der));
    } catch (GeneralSecurityException e) {
      throw invalid(key, file + " is not an Ed25519 public key: " + e.getMessage());
    }
  }

  private static Map<String, PublicKey> readPeerKeys(Path dir) {
    String key = "security.peerKeysDir";
    if (!Files.isDirectory(dir)) {
      throw invalid(key, dir + " is not a directory");
    }
    Map<String, PublicKey> keys = new TreeMap<>();
    try (DirectoryStream<Path> files = Files.newDirectoryStream(dir, "*.pem")) {
      for (Path f : files) {
        String file = f.getFileName().toString();
        String name = file.substring(0, file.length() - ".pem".length());
        if (!NAME.matcher(name).matches()) {
          throw invalid(
              key, f + ": '" + name + "' is not an engine name (" + EngineConfig.NAME_REGEX + ")");
        }
        keys.put(name, readPublicKey(key, f));
      }
    } catch (IOException e) {
      throw invalid(key, dir + " cannot be listed: " + e);
    }
    if (keys.isEmpty()) {
      throw invalid(key, dir + " holds no <engine name>.pem key: no peer could prove its name");
    }
    return Map.copyOf(keys);
  }

  private static TransferException invalid(String key, String why) {
    return new TransferException(ErrorKind.INVALID_ARGUMENT, key + ": " + why);
  }

  /**
   * Whether connections to and from this engine open with the handshake.
   *
   * @return true with a secret, peer keys or TLS
   */
  public boolean authenticates() {
    return secret != null || peerKeys != null || tls != null;
  }

  /**
   * Whether every peer must prove its name: with a key this engine holds, or a certificate.
   *
   * @return true with {@code security.peerKeysDir} or TLS
   */
  public boolean provesNames() {
    return peerKeys != null || tls != null;
  }

  /** Whether every peer must sign the handshake with a key in {@code security.peerKeysDir}. */
  boolean keysProveNames() {
    return peerKeys != null;
  }

  /**
   * This engine's TLS identity, when connections run over mutual TLS.
   *
   * @return the identity, or null without TLS
   */
  public TlsIdentity tls() {
    return tls;
  }

  /**
   * Whether {@code security.mode} is {@code "open"}.
   *
   * @return true when authentication is explicitly off
   */
  public boolean open() {
    return open;
  }

  byte[] secret() {
    return secret;
  }

  PrivateKey identityKey() {
    return identityKey;
  }

  /** The public key of peer {@code name}, or null when this engine holds none. */
  PublicKey peerKey(String name) {
    return peerKeys == null ? null : peerKeys.get(name);
  }

  /**
   * Where the credentials came from, for logs and the dashboard; never a secret's bytes.
   *
   * @return for example {@code "secret from $ORBITE_SECRET (32 bytes), identity key, 3 peer keys"}
   */
  @Override
  public String toString() {
    if (open) {
      return "open (security.mode \"open\": no authentication)";
    }
    if (!authenticates()) {
      return "none";
    }
    StringBuilder b = new StringBuilder();
    if (secret != null) {
      b.append("secret from ").append(secretSource).append(" (").append(secret.length);
      b.append(" bytes)");
    }
    if (identityKey != null) {
      b.append(b.isEmpty() ? "" : ", ").append("identity key");
    }
    if (peerKeys != null) {
      b.append(", ").append(peerKeys.size()).append(" peer keys");
    }
    if (tls != null) {
      b.append(b.isEmpty() ? "" : ", ").append(tls);
    }
    return b.toString();
  }
}
