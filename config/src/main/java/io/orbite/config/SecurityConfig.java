package io.orbite.config;

import java.util.List;

/**
 * Who may talk to this engine, and how peers prove it. JSON section {@code security}. The engine
 * reads the files named here once, at start; neither this record nor the logs ever hold a secret's
 * bytes, only where they come from.
 *
 * <p>With a secret, every connection (Describe, the data lanes of every transport, the RDMA control
 * connection, notifications) opens with a mutual HMAC-SHA256 challenge-response bound to both
 * nonces, both engine names and both epochs; a secret proves membership, not a name. With an
 * identity key and peer keys, each side also signs that exchange with its Ed25519 key, which proves
 * its name; per-region allow-lists need those proven names.
 *
 * @param mode {@value #AUTO} (default): authenticate whenever a secret or peer keys are configured,
 *     and refuse to start with a listener that is not loopback-only without them; {@value #OPEN}:
 *     never authenticate, whatever the listener (logged at start and shown on the dashboard as a
 *     warning); then no credential may be configured.
 * @param secretFile a file holding the shared secret (its bytes, one trailing line end dropped), at
 *     least {@value #MIN_SECRET_BYTES} bytes; empty for none. The secret may come from the
 *     environment variable {@value #SECRET_ENV_VAR} instead, never from both. Default empty.
 * @param identityKeyFile this engine's Ed25519 private key, PEM ({@code PRIVATE KEY}, PKCS#8), with
 *     which it proves its name to peers that hold its public key; empty for none. Default empty.
 * @param peerKeysDir a directory of peers' Ed25519 public keys, one PEM ({@code PUBLIC KEY}) file
 *     per engine named {@code <engine name>.pem}; set, every peer must prove a name found there,
 *     and this engine must have an {@code identityKeyFile}. Empty for none. Default empty.
 * @param tlsKeyStore a PKCS#12 key store holding this engine's private key and its certificate
 *     chain, the certificate naming the engine (a DNS subject alternative name, or else the common
 *     name, equal to {@code name}); set, every connection to and from this engine (Describe, TCP
 *     lanes, the RDMA control connection, notifications) runs over mutual TLS 1.3 and proves both
 *     names. Needs {@code tlsTrustStore}. Empty for none. Default empty.
 * @param tlsTrustStore a PKCS#12 store of the certificates (a CA's, or the peers' own) that peers'
 *     chains must lead to. Needs {@code tlsKeyStore}. Empty for none. Default empty.
 * @param tlsPasswordFile a file holding the password of both stores (one trailing line end
 *     dropped); the environment variable {@value #TLS_PASSWORD_ENV_VAR} may hold it instead, never
 *     both. Empty for none. Default empty.
 */
public record SecurityConfig(
    String mode,
    String secretFile,
    String identityKeyFile,
    String peerKeysDir,
    String tlsKeyStore,
    String tlsTrustStore,
    String tlsPasswordFile) {
  /** JSON key of this section, and the path prefix of its messages. */
  static final String SECTION = "security";

  /** {@link #mode()}: authenticate when credentials are configured; fail safe without them. */
  public static final String AUTO = "auto";

  /** {@link #mode()}: never authenticate, even on a routable listener. */
  public static final String OPEN = "open";

  /** The accepted {@link #mode()} values. */
  public static final List<String> MODES = List.of(AUTO, OPEN);

  /** The environment variable that may hold the shared secret itself, in place of a file. */
  public static final String SECRET_ENV_VAR = "ORBITE_SECRET";

  /** The environment variable that may hold the TLS stores' password, in place of a file. */
  public static final String TLS_PASSWORD_ENV_VAR = "ORBITE_TLS_PASSWORD";

  /** Shortest accepted secret, in bytes. */
  public static final int MIN_SECRET_BYTES = 16;

  /** Longest accepted secret, in bytes. */
  public static final int MAX_SECRET_BYTES = 4096;

  /**
   * Validates every component.
   *
   * @throws ConfigException naming {@code security.mode} for another value, or for {@value #OPEN}
   *     beside a configured credential; {@code security.peerKeysDir} when it is set without {@code
   *     security.identityKeyFile}; {@code security.tlsKeyStore} or {@code security.tlsTrustStore}
   *     when one is set without the other; {@code security.<key>} for a null component
   */
  public SecurityConfig {
    Checks.requireNonNull(SECTION + ".mode", mode);
    Checks.requireNonNull(SECTION + ".secretFile", secretFile);
    Checks.requireNonNull(SECTION + ".identityKeyFile", identityKeyFile);
    Checks.requireNonNull(SECTION + ".peerKeysDir", peerKeysDir);
    Checks.requireNonNull(SECTION + ".tlsKeyStore", tlsKeyStore);
    Checks.requireNonNull(SECTION + ".tlsTrustStore", tlsTrustStore);
    Checks.requireNonNull(SECTION + ".tlsPasswordFile", tlsPasswordFile);
    if (!MODES.contains(mode)) {
      throw new ConfigException(
          SECTION + ".mode", "must be \"auto\" or \"open\", got " + Checks.quote(mode));
    }
    if (OPEN.equals(mode)) {
      String set =
          !secretFile.isEmpty()
              ? "secretFile"
              : !identityKeyFile.isEmpty()
                  ? "identityKeyFile"
                  : !peerKeysDir.isEmpty()
                      ? "peerKeysDir"
                      : !tlsKeyStore.isEmpty() ? "tlsKeyStore" : null;
      if (set != null) {
        throw new ConfigException(
            SECTION + ".mode",
            "\"open\" turns authentication off, but security."
                + set
                + " is set; remove one of them");
      }
    }
    if (!peerKeysDir.isEmpty() && identityKeyFile.isEmpty()) {
      throw new ConfigException(
          SECTION + ".peerKeysDir",
          "is set, so peers must prove their names, but security.identityKeyFile is empty: this"
              + " engine could not prove its own");
    }
    if (tlsKeyStore.isEmpty() != tlsTrustStore.isEmpty()) {
      String set = tlsKeyStore.isEmpty() ? "tlsTrustStore" : "tlsKeyStore";
      String missing = tlsKeyStore.isEmpty() ? "tlsKeyStore" : "tlsTrustStore";
      throw new ConfigException(
          SECTION + "." + set,
          "is set, but security."
              + missing
              + " is empty: mutual TLS needs this engine's certificate and the ones it trusts");
    }
  }

  /**
   * The section without TLS.
   *
   * @param mode {@value #AUTO} or {@value #OPEN}
   * @param secretFile the shared secret's file, or empty
   * @param identityKeyFile this engine's Ed25519 private key file, or empty
   * @param peerKeysDir the directory of peers' public keys, or empty
   */
  public SecurityConfig(
      String mode, String secretFile, String identityKeyFile, String peerKeysDir) {
    this(mode, secretFile, identityKeyFile, peerKeysDir, "", "", "");
  }

  /**
   * Whether connections run over mutual TLS.
   *
   * @return true when {@link #tlsKeyStore()} is set
   */
  public boolean tls() {
    return !tlsKeyStore.isEmpty();
  }

  /**
   * All components at their defaults.
   *
   * @return mode {@value #AUTO} and no credential files
   */
  public static SecurityConfig defaults() {
    return new SecurityConfig(AUTO, "", "", "", "", "", "");
  }

  /**
   * Whether {@link #mode()} is {@value #OPEN}.
   *
   * @return true when authentication is explicitly off
   */
  public boolean open() {
    return OPEN.equals(mode);
  }

  /**
   * A copy with {@link #mode()} replaced, checked as by the constructor.
   *
   * @param mode {@value #AUTO} or {@value #OPEN}
   * @return a new {@code SecurityConfig}
   */
  public SecurityConfig withMode(String mode) {
    return new SecurityConfig(
        mode,
        secretFile,
        identityKeyFile,
        peerKeysDir,
        tlsKeyStore,
        tlsTrustStore,
        tlsPasswordFile);
  }

  /**
   * A copy with {@link #secretFile()} replaced, checked as by the constructor.
   *
   * @param secretFile the shared secret's file, or empty for none
   * @return a new {@code SecurityConfig}
   */
  public SecurityConfig withSecretFile(String secretFile) {
    return new SecurityConfig(
        mode,
        secretFile,
        identityKeyFile,
        peerKeysDir,
        tlsKeyStore,
        tlsTrustStore,
        tlsPasswordFile);
  }

  /**
   * A copy with {@link #identityKeyFile()} and {@link #peerKeysDir()} replaced, checked as by the
   * constructor.
   *
   * @param identityKeyFile this engine's Ed25519 private key file, or empty for none
   * @param peerKeysDir the directory of peers' public keys, or empty for none
   * @return a new {@code SecurityConfig}
   */
  public SecurityConfig withKeys(String identityKeyFile, String peerKeysDir) {
    return new SecurityConfig(
        mode,
        secretFile,
        identityKeyFile,
        peerKeysDir,
        tlsKeyStore,
        tlsTrustStore,
        tlsPasswordFile);
  }

  /**
   * A copy with the TLS stores and their password file replaced, checked as by the constructor.
   *
   * @param keyStore this engine's PKCS#12 key store, or empty for no TLS
   * @param trustStore the PKCS#12 store of trusted certificates, or empty for no TLS
   * @param passwordFile the stores' password file, or empty (then {@value #TLS_PASSWORD_ENV_VAR})
   * @return a new {@code SecurityConfig}
   */
  public SecurityConfig withTls(String keyStore, String trustStore, String passwordFile) {
    return new SecurityConfig(
        mode, secretFile, identityKeyFile, peerKeysDir, keyStore, trustStore, passwordFile);
  }

  static SecurityConfig read(ConfigReader r) {
    return new SecurityConfig(
        r.stringValue("mode", AUTO),
        r.stringValue("secretFile", ""),
        r.stringValue("identityKeyFile", ""),
        r.stringValue("peerKeysDir", ""),
        r.stringValue("tlsKeyStore", ""),
        r.stringValue("tlsTrustStore", ""),
        r.stringValue("tlsPasswordFile", ""));
  }
}
