package io.orbite.engine.security;

import io.orbite.config.EngineConfig;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.GeneralSecurityException;
import java.security.KeyStore;
import java.security.SecureRandom;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.concurrent.TimeUnit;
import javax.net.ssl.KeyManagerFactory;
import javax.net.ssl.SSLContext;
import javax.net.ssl.TrustManagerFactory;

/**
 * Writes the stores the {@code security.tls*} keys read, with the JDK's {@code keytool}: a private
 * certificate authority ({@code ca.p12}), the trust store every engine shares ({@code trust.p12},
 * holding the authority's certificate), one key store per engine ({@code <name>.p12}, its EC P-256
 * key and a certificate the authority signed, naming the engine as a DNS subject alternative name
 * and as its common name), and the password of them all ({@code password}, mode 600). Behind {@code
 * ./orbite tlsgen DIR NAME...}; for a fabric of one's own. An organisation with its own authority
 * issues the certificates instead, naming each engine the same way.
 */
public final class TlsFiles {
  private static final String CA = "ca";
  private static final long KEYTOOL_SECONDS = 60;

  private final Path dir;
  private final Path passwordFile;

  private TlsFiles(Path dir, Path passwordFile) {
    this.dir = dir;
    this.passwordFile = passwordFile;
  }

  /**
   * Opens {@code dir}'s authority, creating it (with a fresh random password and the trust store)
   * when {@code dir} has none.
   *
   * @param dir where the stores are (created when missing)
   * @param validDays how long a new authority's certificate is valid
   * @return the files, ready to issue engines' stores
   * @throws IOException when keytool fails or a file cannot be written
   */
  public static TlsFiles authority(Path dir, int validDays) throws IOException {
    Files.createDirectories(dir);
    Path password = dir.resolve("password");
    TlsFiles files = new TlsFiles(dir, password);
    if (Files.exists(dir.resolve("ca.p12"))) {
      if (!Files.exists(password)) {
        throw new IOException(dir.resolve("ca.p12") + " exists without its password file");
      }
      return files;
    }
    byte[] random = new byte[18];
    new SecureRandom().nextBytes(random);
    Files.createFile(
        password,
        PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rw-------")));
    Files.writeString(password, HexFormat.of().formatHex(random) + "\n", StandardCharsets.US_ASCII);
    files.keytool(
        "-genkeypair",
        "-alias",
        CA,
        "-keyalg",
        "EC",
        "-groupname",
        "secp256r1",
        "-dname",
        "CN=orbite-ca",
        "-ext",
        "bc:c",
        "-validity",
        Integer.toString(validDays),
        "-keystore",
        "ca.p12");
    Files.setPosixFilePermissions(
        dir.resolve("ca.p12"), PosixFilePermissions.fromString("rw-------"));
    files.keytool("-exportcert", "-rfc", "-alias", CA, "-keystore", "ca.p12", "-file", "ca.pem");
    files.keytool(
        "-importcert", "-noprompt", "-alias", CA, "-file", "ca.pem", "-keystore", "trust.p12");
    return files;
  }

  /**
   * Issues {@code <name>.p12}: a new key, and a certificate the authority signs naming {@code
   * name}, valid from {@code notBeforeDaysAgo} days ago for {@code validDays} days.
   *
   * @param name the engine's name, as its {@code name} key gives it
   * @param notBeforeDaysAgo when the certificate becomes valid, in days before now (0: now)
   * @param validDays how many days it is valid from then
   * @return the key store
   * @throws IllegalArgumentException when {@code name} is not an engine name
   * @throws IOException when the store exists already, or keytool fails
   */
  public Path issue(String name, int notBeforeDaysAgo, int validDays) throws IOException {
    if (name == null || !name.matches(EngineConfig.NAME_REGEX)) {
      throw new IllegalArgumentException(
          "engine name '" + name + "' does not match " + EngineConfig.NAME_REGEX);
    }
    Path store = dir.resolve(name + ".p12");
    if (Files.exists(store)) {
      throw new FileAlreadyExistsException(store + " exists; remove it first to issue a new one");
    }
    String p12 = name + ".p12";
    keytool(
        "-genkeypair",
        "-alias",
        name,
        "-keyalg",
        "EC",
        "-groupname",
        "secp256r1",
        "-dname",
        "CN=" + name,
        "-keystore",
        p12);
    keytool("-certreq", "-alias", name, "-keystore", p12, "-file", name + ".csr");
    List<String> sign =
        new ArrayList<>(
            List.of(
                "-gencert",
                "-rfc",
                "-alias",
                CA,
                "-keystore",
                "ca.p12",
                "-infile",
                name + ".csr",
                "-outfile",
                name + ".crt",
                "-ext",
                "EKU=serverAuth,clientAuth",
                "-validity",
                Integer.toString(validDays)));
    if (name.matches("[A-Za-z0-9]([A-Za-z0-9.-]*[A-Za-z0-9])?")) {
      sign.addAll(List.of("-ext", "SAN=dns:" + name));
    }
    if (notBeforeDaysAgo > 0) {
      sign.addAll(List.of("-startdate", "-" + notBeforeDaysAgo + "d"));
    }
    keytool(sign.toArray(String[]::new));
    keytool("-importcert", "-noprompt", "-alias", CA, "-file", "ca.pem", "-keystore", p12);
    keytool("-importcert", "-alias", name, "-file", name + ".crt", "-keystore", p12);
    Files.delete(dir.resolve(name + ".csr"));
    Files.delete(dir.resolve(name + ".crt"));
    Files.setPosixFilePermissions(store, PosixFilePermissions.fromString("rw-------"));
    return store;
  }

  /**
   * The trust store every engine of this authority shares.
   *
   * @return {@code trust.p12}
   */
  public Path trustStore() {
    return dir.resolve("trust.p12");
  }

  /**
   * The file holding the stores' password ({@code security.tlsPasswordFile}).
   *
   * @return {@code password}
   */
  public Path passwordFile() {
    return passwordFile;
  }

  /**
   * A TLS 1.3 context holding {@code keyStore}'s key and trusting this authority, for tools and
   * tests that speak TLS to engines without being one (an engine builds its own, with its checks,
   * from its {@code security} section).
   *
   * @param keyStore one of this authority's engine stores
   * @return the context
   * @throws IOException when a store cannot be read
   * @throws GeneralSecurityException when a store cannot be used
   */
  public SSLContext context(Path keyStore) throws IOException, GeneralSecurityException {
    char[] password = Files.readString(passwordFile).strip().toCharArray();
    KeyStore keys = KeyStore.getInstance("PKCS12");
    try (var in = Files.newInputStream(keyStore)) {
      keys.load(in, password);
    }
    KeyStore trust = KeyStore.getInstance("PKCS12");
    try (var in = Files.newInputStream(trustStore())) {
      trust.load(in, password);
    }
    KeyManagerFactory kmf = KeyManagerFactory.getInstance(KeyManagerFactory.getDefaultAlgorithm());
    kmf.init(keys, password);
    TrustManagerFactory tmf = TrustManagerFactory.getInstance("PKIX");
    tmf.init(trust);
    SSLContext context = SSLContext.getInstance("TLSv1.3");
    context.init(kmf.getKeyManagers(), tmf.getTrustManagers(), null);
    return context;
  }

  private void keytool(String... args) throws IOException {
    List<String> command = new ArrayList<>();
    command.add(Path.of(System.getProperty("java.home"), "bin", "keytool").toString());
    command.addAll(List.of(args));
    command.addAll(List.of("-storepass:file", passwordFile.toString(), "-storetype", "PKCS12"));
    Process p =
        new ProcessBuilder(command).directory(dir.toFile()).redirectErrorStream(true).start();
    byte[] out;
    try (var in = p.getInputStream()) {
      out = in.readAllBytes();
    }
    try {
      if (!p.waitFor(KEYTOOL_SECONDS, TimeUnit.SECONDS)) {
        p.destroyForcibly();
        throw new IOException(
            "keytool " + args[0] + " did not finish in " + KEYTOOL_SECONDS + " s");
      }
    } catch (InterruptedException e) {
      p.destroyForcibly();
      Thread.currentThread().interrupt();
      throw new IOException("interrupted waiting for keytool", e);
    }
    if (p.exitValue() != 0) {
      throw new IOException(
          "keytool "
              + String.join(" ", args)
              + " failed: "
              + new String(out, StandardCharsets.UTF_8).strip());
    }
  }
}
