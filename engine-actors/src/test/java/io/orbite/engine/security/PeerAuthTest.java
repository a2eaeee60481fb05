package io.orbite.engine.security;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.orbite.config.SecurityConfig;
import io.orbite.engine.ErrorKind;
import io.orbite.engine.TransferException;
import io.orbite.engine.wire.FrameCodec;
import java.io.IOException;
import java.io.InputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.ByteBuffer;
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
    try (ServerSocket server = new ServerSocket(0, 1, InetAddress.getLoopbackAddress());
        Socket client = new Socket()) {
      CompletableFuture<Object> served =
          CompletableFuture.supplyAsync(
              () -> {
                try (Socket s = server.accept()) {
                  InputStream in = s.getInputStream();
                  ByteBuffer h = ByteBuffer.wrap(in.readNBytes(FrameCodec.HEADER_BYTES));
                  FrameCodec.check(h, 0, FrameCodec.HEADER_BYTES, 0);
                  return source.accept(s, h, System.nanoTime() + TimeUnit.SECONDS.toNanos(5));
                } catch (Exception e) {
                  return e;
                }
              });
      client.connect(
          new InetSocketAddress(InetAddress.getLoopbackAddress(), server.getLocalPort()));
      Object connected;
      try {
        connected = requester.connect(client, "the source", 5_000);
      } catch (TransferException | IOException e) {
        connected = e;
      }
      client.close();
      return new Outcome(connected, served.get(10, TimeUnit.SECONDS));
    }
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
        Socket client = new Socket()) {
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
              () -> new PeerAuth(secret(SECRET), "req", 1).connect(client, "the source", 5_000));
      assertEquals(ErrorKind.PERMISSION_DENIED, e.kind());
      assertTrue(e.getMessage().contains("no?12:00:00 INFO forged line"), e.getMessage());
      assertFalse(e.getMessage().contains("\n"), e.getMessage());
      fake.get(10, TimeUnit.SECONDS);
    }
  }
}
