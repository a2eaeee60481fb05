package io.orbite.engine.security;

import io.orbite.config.SecurityConfig;
import io.orbite.engine.ErrorKind;
import io.orbite.engine.TransferException;
import java.io.IOException;
import java.io.InputStream;
import java.nio.ByteBuffer;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.security.GeneralSecurityException;
import java.security.KeyStore;
import java.security.SecureRandom;
import java.security.cert.Certificate;
import java.security.cert.CertificateParsingException;
import java.security.cert.X509Certificate;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Collections;
import java.util.Date;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import java.util.function.Function;
import javax.net.ssl.KeyManagerFactory;
import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLEngine;
import javax.net.ssl.SSLParameters;
import javax.net.ssl.TrustManagerFactory;

/**
 * This engine's TLS identity, read once at start from {@code security.tlsKeyStore}, {@code
 * security.tlsTrustStore} and their password: an {@link SSLContext} for TLS 1.3 with client
 * authentication required both ways. A peer's certificate must chain to the trust store and be
 * within its validity (the JDK's PKIX trust manager checks both); the names it carries are what the
 * handshake then proves ({@link PeerAuth} requires the peer's engine name among them).
 *
 * <p>A certificate names an engine by a DNS subject alternative name equal to the engine's name,
 * or, when it has no DNS name, by its subject's common name.
 */
public final class TlsIdentity {
  private static final org.slf4j.Logger LOG = org.slf4j.LoggerFactory.getLogger(TlsIdentity.class);
  private static final int MAX_PASSWORD_BYTES = 1024;

  /** A certificate that expires sooner than this after start is logged as a warning. */
  static final java.time.Duration EXPIRY_WARNING = java.time.Duration.ofDays(14);

  private static final String PROTOCOL = "TLSv1.3";

  /**
   * TLS 1.3's suites, AES-128-GCM first: with the JDK's AES and GHASH intrinsics it seals and opens
   * records faster than AES-256-GCM (about 3.0 against 2.8 GB/s for both on one thread of this
   * machine kind) and ChaCha20-Poly1305 (1 GB/s), and it is the suite every TLS 1.3 peer has.
   */
  private static final String[] SUITES = {
    "TLS_AES_128_GCM_SHA256", "TLS_AES_256_GCM_SHA384", "TLS_CHACHA20_POLY1305_SHA256"
  };

  private final SSLContext context;
  private final String description;

  private TlsIdentity(SSLContext context, String description) {
    this.context = context;
    this.description = description;
  }

  /**
   * Reads the stores {@code config} names, for the engine called {@code engineName}.
   *
   * @param config the engine's {@code security} section, with {@link SecurityConfig#tls()}
   * @param engineName this engine's name, which its own certificate must carry
   * @param env the environment, for {@value SecurityConfig#TLS_PASSWORD_ENV_VAR}
   * @return the identity
   * @throws TransferException INVALID_ARGUMENT naming the key whose file cannot be used ({@code
   *     security.tlsKeyStore}, {@code security.tlsTrustStore}, {@code security.tlsPasswordFile})
   *     and why: missing, not PKCS#12, a wrong password, no key, a certificate that does not name
   *     this engine or is not valid now
   */
  static TlsIdentity load(SecurityConfig config, String engineName, Function<String, String> env) {
    return load(config, engineName, env, true);
  }

  /**
   * Reads the stores without checking this engine's own certificate (its name, its dates): for
   * tests that need an engine holding a certificate its peers must refuse.
   */
  static TlsIdentity loadUnchecked(SecurityConfig config, Function<String, String> env) {
    return load(config, null, env, false);
  }

  private static TlsIdentity load(
      SecurityConfig config, String engineName, Function<String, String> env, boolean check) {
    char[] password = password(config, env);
    KeyStore keys = store("security.tlsKeyStore", config.tlsKeyStore(), password);
    KeyStore trusted = store("security.tlsTrustStore", config.tlsTrustStore(), password);
    try {
      X509Certificate own = ownCertificate(keys, config.tlsKeyStore());
      Set<String> names = names(new Certificate[] {own});
      if (check && !names.contains(engineName)) {
        throw invalid(
            "security.tlsKeyStore",
            config.tlsKeyStore()
                + ": its certificate names "
                + names
                + ", not this engine's name '"
                + engineName
                + "'; peers would refuse it");
      }
      Date now = new Date();
      if (check && (now.after(own.getNotAfter()) || now.before(own.getNotBefore()))) {
        throw invalid(
            "security.tlsKeyStore",
            config.tlsKeyStore()
                + ": its certificate is valid from "
                + own.getNotBefore().toInstant()
                + " to "
                + own.getNotAfter().toInstant()
                + ", not now; peers would refuse it");
      }
      java.time.Duration left =
          java.time.Duration.between(now.toInstant(), own.getNotAfter().toInstant());
      if (check && left.compareTo(EXPIRY_WARNING) < 0) {
        // Peers refuse it the moment it expires, and this engine notices only then; say so now.
        LOG.warn(
            "security.tlsKeyStore {}: its certificate expires at {}, in {} hours; issue a new one"
                + " and restart before then",
            config.tlsKeyStore(),
            own.getNotAfter().toInstant(),
            left.toHours());
      }
      if (trusted.size() == 0) {
        throw invalid(
            "security.tlsTrustStore", config.tlsTrustStore() + " holds no trusted certificate");
      }
      KeyManagerFactory kmf =
          KeyManagerFactory.getInstance(KeyManagerFactory.getDefaultAlgorithm());
      kmf.init(keys, password);
      TrustManagerFactory tmf = TrustManagerFactory.getInstance("PKIX");
      tmf.init(trusted);
      SSLContext context = SSLContext.getInstance(PROTOCOL);
      context.init(kmf.getKeyManagers(), tmf.getTrustManagers(), new SecureRandom());
      return new TlsIdentity(
          context,
          "mutual TLS as "
              + names
              + " (certificate valid to "
              + own.getNotAfter().toInstant()
              + ", "
              + trusted.size()
              + " trusted)");
    } catch (GeneralSecurityException e) {
      throw invalid("security.tlsKeyStore", config.tlsKeyStore() + ": " + e.getMessage());
    } finally {
      java.util.Arrays.fill(password, '\0');
    }
  }

  private static char[] password(SecurityConfig config, Function<String, String> env) {
    String fromEnv = env.apply(SecurityConfig.TLS_PASSWORD_ENV_VAR);
    if (fromEnv != null && fromEnv.isEmpty()) {
      fromEnv = null;
    }
    if (!config.tlsPasswordFile().isEmpty()) {
      if (fromEnv != null) {
        throw invalid(
            "security.tlsPasswordFile",
            "is set, and so is $"
                + SecurityConfig.TLS_PASSWORD_ENV_VAR
                + "; the password must come from one of them");
      }
      Path file = Path.of(config.tlsPasswordFile());
      byte[] bytes;
      try (InputStream in = Files.newInputStream(file)) {
        bytes = in.readNBytes(MAX_PASSWORD_BYTES + 1);
      } catch (NoSuchFileException e) {
        throw invalid("security.tlsPasswordFile", file + " does not exist");
      } catch (IOException e) {
        throw invalid("security.tlsPasswordFile", file + " cannot be read: " + e);
      }
      if (bytes.length > MAX_PASSWORD_BYTES) {
        throw invalid(
            "security.tlsPasswordFile", file + " is over " + MAX_PASSWORD_BYTES + " bytes");
      }
      String text = new String(bytes, StandardCharsets.UTF_8);
      if (text.endsWith("\n")) {
        text = text.substring(0, text.length() - 1);
      }
      if (text.endsWith("\r")) {
        text = text.substring(0, text.length() - 1);
      }
      java.util.Arrays.fill(bytes, (byte) 0);
      return text.toCharArray();
    }
    return fromEnv == null ? new char[0] : fromEnv.toCharArray();
  }

  private static KeyStore store(String key, String file, char[] password) {
    Path path = Path.of(file);
    try (InputStream in = Files.newInputStream(path)) {
      KeyStore s = KeyStore.getInstance("PKCS12");
      s.load(in, password);
      return s;
    } catch (NoSuchFileException e) {
      throw invalid(key, file + " does not exist");
    } catch (IOException e) {
      throw invalid(
          key,
          file
              + " cannot be read as PKCS#12 with the configured password (security.tlsPasswordFile"
              + " or $"
              + SecurityConfig.TLS_PASSWORD_ENV_VAR
              + "): "
              + e.getMessage());
    } catch (GeneralSecurityException e) {
      throw invalid(key, file + " is not a usable PKCS#12 store: " + e.getMessage());
    }
  }

  private static X509Certificate ownCertificate(KeyStore keys, String file)
      throws GeneralSecurityException {
    List<String> withKeys = new ArrayList<>();
    for (String alias : Collections.list(keys.aliases())) {
      if (keys.isKeyEntry(alias)) {
        withKeys.add(alias);
      }
    }
    if (withKeys.size() != 1) {
      throw invalid(
          "security.tlsKeyStore",
          file
              + " holds "
              + withKeys.size()
              + " private keys "
              + withKeys
              + "; it must hold exactly this engine's one");
    }
    Certificate c = keys.getCertificate(withKeys.get(0));
    if (!(c instanceof X509Certificate x)) {
      throw invalid("security.tlsKeyStore", file + ": its key has no X.509 certificate");
    }
    return x;
  }

  /**
   * The engine names a certificate chain's first certificate carries: its DNS subject alternative
   * names, or, without any, its subject's common name.
   *
   * @param chain a peer's chain, as the TLS session gives it
   * @return the names, in the certificate's order; empty when it carries none
   */
  static Set<String> names(Certificate[] chain) {
    if (chain == null || chain.length == 0 || !(chain[0] instanceof X509Certificate c)) {
      return Set.of();
    }
    Set<String> names = new LinkedHashSet<>();
    try {
      Collection<List<?>> alternatives = c.getSubjectAlternativeNames();
      if (alternatives != null) {
        for (List<?> a : alternatives) {
          if (a.size() >= 2
              && Integer.valueOf(2).equals(a.get(0))
              && a.get(1) instanceof String s) {
            names.add(s);
          }
        }
      }
    } catch (CertificateParsingException e) {
      return Set.of();
    }
    if (names.isEmpty()) {
      for (String part : c.getSubjectX500Principal().getName().split(",")) {
        if (part.startsWith("CN=")) {
          names.add(part.substring(3));
        }
      }
    }
    return Collections.unmodifiableSet(names);
  }

  /**
   * Runs the client's side of the handshake on a connected, blocking socket.
   *
   * @param channel the socket
   * @param deadline {@link System#nanoTime()} by which the handshake must end
   * @return the conduit
   * @throws IOException when the handshake is refused ({@link javax.net.ssl.SSLException}), the
   *     socket fails or the deadline passes
   */
  TlsConduit connect(SocketChannel channel, long deadline) throws IOException {
    return TlsConduit.handshake(channel, engine(true), ByteBuffer.allocate(0), deadline);
  }

  /**
   * Runs the server's side of the handshake on an accepted, blocking socket.
   *
   * @param channel the socket
   * @param consumed bytes of the client's first flight already read
   * @param deadline {@link System#nanoTime()} by which the handshake must end
   * @return the conduit
   * @throws IOException as {@link #connect}
   */
  TlsConduit accept(SocketChannel channel, ByteBuffer consumed, long deadline) throws IOException {
    return TlsConduit.handshake(channel, engine(false), consumed, deadline);
  }

  private SSLEngine engine(boolean client) {
    SSLEngine e = context.createSSLEngine();
    e.setUseClientMode(client);
    SSLParameters p = e.getSSLParameters();
    p.setProtocols(new String[] {PROTOCOL});
    p.setCipherSuites(SUITES);
    p.setUseCipherSuitesOrder(true);
    p.setNeedClientAuth(true);
    e.setSSLParameters(p);
    return e;
  }

  private static TransferException invalid(String key, String why) {
    return new TransferException(ErrorKind.INVALID_ARGUMENT, key + ": " + why);
  }

  @Override
  public String toString() {
    return description;
  }
}
