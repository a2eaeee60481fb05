package io.orbite.engine.security;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.orbite.config.SecurityConfig;
import io.orbite.engine.ErrorKind;
import io.orbite.engine.TransferException;
import io.orbite.engine.spi.Conduit;
import io.orbite.engine.wire.FrameCodec;
import java.io.IOException;
import java.io.InputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.ByteBuffer;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The handshake itself, both sides over a real loopback connection, with real credentials. */
class PeerAuthTest {
  private static final String SECRET = "a-shared-secret-of-32-bytes-long";

  @TempDir Path dir;

  private Credentials secret(String value) throws IOException {
    Path f = dir.resolve("secret-" + value.hashCode());
    Files.writeString(f, value + "\n");
    return Credentials.load(SecurityConfig.defaults().withSecretFile(f.toString()), "x", k -> null);
  }

  private Credentials keys(String name, Path peers) {
    return Credentials.load(
        SecurityConfig.defaults()
            .withKeys(dir.resolve("keys").resolve(name + ".key").toString(), peers.toString()),
        name,
        k -> null);
  }

  /** What each side of one handshake ended with: its peer, or what it threw. */
  private record Outcome(Object requester, Object source) {}

  private Outcome run(PeerAuth requester, PeerAuth source) throws Exception {
    try (ServerSocketChannel server =
            ServerSocketChannel.open()
                .bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 1);
        SocketChannel client = SocketChannel.open()) {
      CompletableFuture<Object> served =
          CompletableFuture.supplyAsync(
              () -> {
                try (SocketChannel s = server.accept()) {
                  long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
                  Conduit c = Conduit.plain(s);
                  if (source.tls()) {
                    int first = s.socket().getInputStream().read();
                    c = source.secureAccepted(s, first, deadline);
                  }
                  InputStream in = c.in();
                  ByteBuffer h = ByteBuffer.wrap(in.readNBytes(FrameCodec.HEADER_BYTES));
                  FrameCodec.check(h, 0, FrameCodec.HEADER_BYTES, 0);
                  return source.accept(c, h, deadline);
                } catch (Exception e) {
                  return e;
                }
              });
      client.connect(server.getLocalAddress());
      Object connected;
      try {
        Conduit c = requester.secure(client, "the source", 5_000);
        connected = requester.connect(c, "the source", 5_000);
      } catch (TransferException | IOException e) {
        connected = e;
      }
      client.close();
      return new Outcome(connected, served.get(10, TimeUnit.SECONDS));
    }
  }

  /** Credentials with TLS only: {@code store} (issued by {@code ca}) and the shared trust store. */
  private static Credentials tls(TlsFiles ca, Path store, String name, boolean checkOwn) {
    SecurityConfig c =
        SecurityConfig.defaults()
            .withTls(store.toString(), ca.trustStore().toString(), ca.passwordFile().toString());
    return checkOwn
        ? Credentials.load(c, name, k -> null)
        : Credentials.withTls(TlsIdentity.loadUnchecked(c, k -> null));
  }

  @Test
  void tlsProvesBothNamesByTheirCertificates() throws Exception {
    TlsFiles ca = TlsFiles.authority(dir.resolve("tls"), 30);
    Credentials alice = tls(ca, ca.issue("alice", 0, 30), "alice", true);
    Credentials src = tls(ca, ca.issue("src", 0, 30), "src", true);
    Outcome o = run(new PeerAuth(alice, "alice", 7), new PeerAuth(src, "src", 9));
    AuthenticatedPeer r = assertInstanceOf(AuthenticatedPeer.class, o.requester(), "" + o);
    AuthenticatedPeer s = assertInstanceOf(AuthenticatedPeer.class, o.source(), "" + o);
    assertEquals("src", r.provenName());
    assertEquals(9, r.epoch());
    assertEquals("alice", s.provenName());
    assertEquals(7, s.epoch());
  }

  @Test
  void aCertificateForAnotherNameIsRefusedBothWays() throws Exception {
    TlsFiles ca = TlsFiles.authority(dir.resolve("tls"), 30);
    Credentials mallory = tls(ca, ca.issue("mallory", 0, 30), "mallory", true);
    Credentials src = tls(ca, ca.issue("src", 0, 30), "src", true);
    Credentials alice = tls(ca, ca.issue("alice", 0, 30), "alice", true);
    // A requester with mallory's certificate that says it is alice.
    Outcome o = run(new PeerAuth(mallory, "alice", 7), new PeerAuth(src, "src", 9));
    TransferException e = assertInstanceOf(TransferException.class, o.requester(), "" + o);
    assertEquals(ErrorKind.PERMISSION_DENIED, e.kind());
    PeerAuth.Refused refused = assertInstanceOf(PeerAuth.Refused.class, o.source(), "" + o);
    assertTrue(refused.getMessage().contains("[mallory]"), refused.getMessage());
    // A source with mallory's certificate that says it is src.
    Outcome back = run(new PeerAuth(alice, "alice", 7), new PeerAuth(mallory, "src", 9));
    TransferException r = assertInstanceOf(TransferException.class, back.requester(), "" + back);
    assertEquals(ErrorKind.PERMISSION_DENIED, r.kind());
    assertTrue(r.getMessage().contains("[mallory]"), r.getMessage());
  }

  @Test
  void anExpiredCertificateIsRefusedInTheTlsHandshakeBothWays() throws Exception {
    TlsFiles ca = TlsFiles.authority(dir.resolve("tls"), 30);
    Path expired = ca.issue("old", 10, 1);
    TransferException own =
        assertThrows(TransferException.class, () -> tls(ca, expired, "old", true));
    assertTrue(own.getMessage().contains("security.tlsKeyStore"), own.getMessage());
    assertTrue(own.getMessage().contains("not now"), own.getMessage());
    Credentials old = tls(ca, expired, "old", false);
    Credentials src = tls(ca, ca.issue("src", 0, 30), "src", true);
    Credentials alice = tls(ca, ca.issue("alice", 0, 30), "alice", true);
    Outcome o = run(new PeerAuth(old, "old", 7), new PeerAuth(src, "src", 9));
    TransferException e = assertInstanceOf(TransferException.class, o.requester(), "" + o);
    assertEquals(ErrorKind.PERMISSION_DENIED, e.kind());
    assertInstanceOf(javax.net.ssl.SSLException.class, o.source(), "" + o);
    Outcome back = run(new PeerAuth(alice, "alice", 7), new PeerAuth(old, "old", 9));
    TransferException r = assertInstanceOf(TransferException.class, back.requester(), "" + back);
    assertEquals(ErrorKind.PERMISSION_DENIED, r.kind());
    assertTrue(r.getMessage().contains("TLS"), r.getMessage());
  }

  @Test
  void aCertificateFromAnotherAuthorityIsRefused() throws Exception {
    TlsFiles ours = TlsFiles.authority(dir.resolve("ours"), 30);
    TlsFiles theirs = TlsFiles.authority(dir.resolve("theirs"), 30);
    Credentials stranger = tls(theirs, theirs.issue("alice", 0, 30), "alice", true);
    Credentials src = tls(ours, ours.issue("src", 0, 30), "src", true);
    Outcome o = run(new PeerAuth(stranger, "alice", 7), new PeerAuth(src, "src", 9));
    assertInstanceOf(TransferException.class, o.requester(), "" + o);
    assertInstanceOf(javax.net.ssl.SSLException.class, o.source(), "" + o);
  }

  @Test
  void theSameSecretAuthenticatesBothSidesWithTheirNamesAndEpochsButProvesNoName()
      throws Exception {
    Outcome o =
        run(new PeerAuth(secret(SECRET), "req", 11), new PeerAuth(secret(SECRET), "src", 22));
    assertEquals(new AuthenticatedPeer("src", 22, false), o.requester());
    assertEquals(new AuthenticatedPeer("req", 11, false), o.source());
  }

  @Test
  void aWrongSecretIsRefusedByTheRequesterBeforeItSendsAProof() throws Exception {
    Outcome o =
        run(
            new PeerAuth(secret("another-secret-of-enough-length"), "req", 1),
            new PeerAuth(secret(SECRET), "src", 2));
    TransferException e = assertInstanceOf(TransferException.class, o.requester());
    assertEquals(ErrorKind.PERMISSION_DENIED, e.kind());
    assertTrue(e.getMessage().contains("shared secret does not verify"), e.getMessage());
    // The source got no proof at all: the requester closed instead.
    assertInstanceOf(IOException.class, o.source());
  }

  @Test
  void aRequesterWithoutCredentialsIsToldTheSourceRequiresThem() throws Exception {
    Outcome o = run(new PeerAuth(secret(SECRET), "req", 1), PeerAuth.none("src", 2));
    TransferException e = assertInstanceOf(TransferException.class, o.requester());
    assertEquals(ErrorKind.PERMISSION_DENIED, e.kind());
    assertTrue(e.getMessage().contains("no security credentials"), e.getMessage());
    assertInstanceOf(PeerAuth.Refused.class, o.source());
  }

  @Test
  void keysProveBothNames() throws Exception {
    Path peers = dir.resolve("keys");
    KeyFiles.writePair("alice", peers);
    KeyFiles.writePair("src", peers);
    Outcome o =
        run(
            new PeerAuth(keys("alice", peers), "alice", 5),
            new PeerAuth(keys("src", peers), "src", 6));
    assertEquals(new AuthenticatedPeer("src", 6, true), o.requester());
    AuthenticatedPeer proven = assertInstanceOf(AuthenticatedPeer.class, o.source());
    assertEquals("alice", proven.provenName());
  }

  @Test
  void aNameWhoseKeyTheSourceDoesNotHoldIsRefused() throws Exception {
    Path mine = dir.resolve("keys");
    KeyFiles.writePair("src", mine);
    KeyFiles.writePair("mallory", mine);
    // The source's directory holds only its own key: mallory is not one of its peers.
    Path sourcePeers = dir.resolve("source-peers");
    Files.createDirectories(sourcePeers);
    Files.copy(mine.resolve("src.pem"), sourcePeers.resolve("src.pem"));
    Outcome o =
        run(
            new PeerAuth(keys("mallory", mine), "mallory", 1),
            new PeerAuth(keys("src", sourcePeers), "src", 2));
    TransferException e = assertInstanceOf(TransferException.class, o.requester());
    assertEquals(ErrorKind.PERMISSION_DENIED, e.kind());
    assertTrue(e.getMessage().contains("no key for the name 'mallory'"), e.getMessage());
    assertInstanceOf(PeerAuth.Refused.class, o.source());
  }

  @Test
  void aKeyThatDoesNotMatchTheClaimedNameIsRefused() throws Exception {
    Path keys = dir.resolve("keys");
    KeyFiles.writePair("alice", keys);
    KeyFiles.writePair("bob", keys);
    KeyFiles.writePair("src", keys);
    // bob's private key, but the handshake names alice.
    Credentials bob = keys("bob", keys);
    Outcome o = run(new PeerAuth(bob, "alice", 1), new PeerAuth(keys("src", keys), "src", 2));
    TransferException e = assertInstanceOf(TransferException.class, o.requester());
    assertTrue(e.getMessage().contains("does not verify as 'alice'"), e.getMessage());
    assertInstanceOf(PeerAuth.Refused.class, o.source());
  }

  @Test
  void credentialsRefuseWhatCannotBeUsedNamingTheKey() throws IOException {
    Path shortSecret = dir.resolve("short");
    Files.writeString(shortSecret, "too-short");
    TransferException tooShort =
        assertThrows(
            TransferException.class,
            () ->
                Credentials.load(
                    SecurityConfig.defaults().withSecretFile(shortSecret.toString()),
                    "x",
                    k -> null));
    assertTrue(tooShort.getMessage().contains("security.secretFile"), tooShort.getMessage());
    assertTrue(tooShort.getMessage().contains("9 bytes"), tooShort.getMessage());
    assertFalse(tooShort.getMessage().contains("too-short"), "never shows the secret");

    TransferException missing =
        assertThrows(
            TransferException.class,
            () ->
                Credentials.load(
                    SecurityConfig.defaults().withSecretFile(dir.resolve("none").toString()),
                    "x",
                    k -> null));
    assertTrue(missing.getMessage().contains("does not exist"), missing.getMessage());

    Path good = dir.resolve("good");
    Files.writeString(good, SECRET);
    TransferException both =
        assertThrows(
            TransferException.class,
            () ->
                Credentials.load(
                    SecurityConfig.defaults().withSecretFile(good.toString()),
                    "x",
                    Map.of(SecurityConfig.SECRET_ENV_VAR, SECRET)::get));
    assertTrue(both.getMessage().contains("ORBITE_SECRET"), both.getMessage());

    TransferException open =
        assertThrows(
            TransferException.class,
            () ->
                Credentials.load(
                    SecurityConfig.defaults().withMode("open"),
                    "x",
                    Map.of(SecurityConfig.SECRET_ENV_VAR, SECRET)::get));
    assertTrue(open.getMessage().contains("security.mode"), open.getMessage());

    Credentials fromEnv =
        Credentials.load(
            SecurityConfig.defaults(), "x", Map.of(SecurityConfig.SECRET_ENV_VAR, SECRET)::get);
    assertTrue(fromEnv.authenticates());
    assertEquals("secret from $ORBITE_SECRET (32 bytes)", fromEnv.toString());
    assertFalse(fromEnv.toString().contains(SECRET));
  }

  @Test
  void anIdentityKeyThatIsNotTheOwnNamesPublicKeyIsRefusedAtStart() throws IOException {
    Path keys = dir.resolve("keys");
    KeyFiles.writePair("alice", keys);
    KeyFiles.writePair("bob", keys);
    TransferException e =
        assertThrows(
            TransferException.class,
            () ->
                Credentials.load(
                    SecurityConfig.defaults()
                        .withKeys(keys.resolve("bob.key").toString(), keys.toString()),
                    "alice",
                    k -> null));
    assertTrue(e.getMessage().contains("security.identityKeyFile"), e.getMessage());
    assertTrue(e.getMessage().contains("alice.pem"), e.getMessage());
  }

  @Test
  void aSecretFileKeepsItsBytesButOneTrailingLineEnd() throws IOException {
    Path f = dir.resolve("crlf");
    Files.write(f, (SECRET + " \r\n").getBytes(StandardCharsets.US_ASCII));
    Credentials c =
        Credentials.load(SecurityConfig.defaults().withSecretFile(f.toString()), "x", k -> null);
    assertEquals(SECRET + " ", new String(c.secret(), StandardCharsets.US_ASCII));
  }

  @Test
  void aRefusalsDetailFromTheSourceCannotForgeLogLines() throws Exception {
    try (ServerSocket server = new ServerSocket(0, 1, InetAddress.getLoopbackAddress());
        SocketChannel client = SocketChannel.open()) {
      CompletableFuture<Void> fake =
          CompletableFuture.runAsync(
              () -> {
                try (Socket s = server.accept()) {
                  InputStream in = s.getInputStream();
                  ByteBuffer h = ByteBuffer.wrap(in.readNBytes(FrameCodec.HEADER_BYTES));
                  in.readNBytes((int) FrameCodec.payloadLength(h, 0));
                  byte[] detail = "no\n12:00:00 INFO forged line".getBytes(StandardCharsets.UTF_8);
                  ByteBuffer f = ByteBuffer.allocate(FrameCodec.HEADER_BYTES + detail.length);
                  FrameCodec.encode(
                      f,
                      0,
                      io.orbite.engine.wire.FrameType.AUTH_CHALLENGE,
                      ErrorKind.PERMISSION_DENIED.code(),
                      detail.length,
                      0,
                      9,
                      0,
                      0,
                      0);
                  f.put(FrameCodec.HEADER_BYTES, detail);
                  s.getOutputStream().write(f.array());
                } catch (IOException e) {
                  throw new java.io.UncheckedIOException(e);
                }
              });
      client.connect(
          new InetSocketAddress(InetAddress.getLoopbackAddress(), server.getLocalPort()));
      TransferException e =
          assertThrows(
              TransferException.class,
              () ->
                  new PeerAuth(secret(SECRET), "req", 1)
                      .connect(Conduit.plain(client), "the source", 5_000));
      assertEquals(ErrorKind.PERMISSION_DENIED, e.kind());
      assertTrue(e.getMessage().contains("no?12:00:00 INFO forged line"), e.getMessage());
      assertFalse(e.getMessage().contains("\n"), e.getMessage());
      fake.get(10, TimeUnit.SECONDS);
    }
  }

  @Test
  void aCertificateThatExpiresWithinTwoWeeksIsAWarningAtLoad() throws Exception {
    TlsFiles ca = TlsFiles.authority(dir.resolve("tls"), 30);
    Path soon = ca.issue("soon", 0, 1);
    Path later = ca.issue("later", 0, 30);
    ch.qos.logback.classic.Logger logger =
        (ch.qos.logback.classic.Logger) org.slf4j.LoggerFactory.getLogger(TlsIdentity.class);
    ch.qos.logback.core.read.ListAppender<ch.qos.logback.classic.spi.ILoggingEvent> seen =
        new ch.qos.logback.core.read.ListAppender<>();
    seen.start();
    logger.addAppender(seen);
    try {
      tls(ca, later, "later", true);
      assertEquals(
          0, seen.list.size(), () -> "nothing to say of a 30-day certificate: " + seen.list);
      tls(ca, soon, "soon", true);
      assertEquals(1, seen.list.size(), () -> "" + seen.list);
      ch.qos.logback.classic.spi.ILoggingEvent warning = seen.list.getFirst();
      assertEquals(ch.qos.logback.classic.Level.WARN, warning.getLevel());
      assertTrue(
          warning.getFormattedMessage().contains("security.tlsKeyStore")
              && warning.getFormattedMessage().contains("expires"),
          warning.getFormattedMessage());
    } finally {
      logger.detachAppender(seen);
    }
  }
}
