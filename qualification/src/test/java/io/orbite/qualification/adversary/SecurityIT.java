package io.orbite.qualification.adversary;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.orbite.config.EngineConfig;
import io.orbite.config.ListenConfig;
import io.orbite.config.SecurityConfig;
import io.orbite.engine.Access;
import io.orbite.engine.Batch;
import io.orbite.engine.BatchStatus;
import io.orbite.engine.ErrorKind;
import io.orbite.engine.RegisteredMemory;
import io.orbite.engine.RemoteSegment;
import io.orbite.engine.TaskResult;
import io.orbite.engine.TaskState;
import io.orbite.engine.TransferEngine;
import io.orbite.engine.TransferException;
import io.orbite.engine.TransferRequest;
import io.orbite.qualification.Await;
import io.orbite.qualification.harness.EngineProcess;
import io.orbite.qualification.verify.Pattern;
import io.orbite.qualification.verify.RegionCheck;
import io.orbite.qualification.verify.Span;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.CleanupMode;
import org.junit.jupiter.api.io.TempDir;

/**
 * Peer authentication (docs/security.md), against a source engine in a process of its own that
 * holds a shared secret: raw clients speaking the documented wire format without the secret, with a
 * wrong one, and replaying a recorded handshake get no Describe data and no byte, and are counted;
 * the fail-safe bind; and an authenticated READ loop that keeps verifying through a flood of
 * unauthenticated connections. Every byte read is checked, and the source's region is checked whole
 * after every refusal.
 */
class SecurityIT {
  private static final String SECRET = "qualification-secret-0123456789";
  private static final long REGION = 1 << 20;
  private static final long SEED = 7;

  private static Map<String, String> secretEnv(String secret) {
    Map<String, String> env = new HashMap<>();
    env.put(SecurityConfig.SECRET_ENV_VAR, secret);
    return env;
  }

  /** The source: ALLOC and FILL a READ_WRITE region; returns its id. */
  private static long fill(EngineProcess source) throws IOException {
    long id = Long.parseLong(source.call("ALLOC " + REGION + " READ_WRITE"));
    source.call("FILL " + id + " " + SEED);
    return id;
  }

  /** The whole region still holds the pattern it was filled with. */
  private static void assertUntouched(EngineProcess source, long id) throws IOException {
    assertEquals("OK", source.verify(id, SEED, List.of()), "the source's region is untouched");
  }

  /**
   * Nothing more comes: the source closed the connection (a reset when it closed with the refused
   * frame's unread bytes still queued, which it never reads).
   */
  private static void assertClosed(InputStream in) throws IOException {
    int next;
    try {
      next = in.read();
    } catch (java.net.SocketException reset) {
      assertTrue(reset.getMessage().contains("reset"), reset.toString());
      return;
    }
    assertEquals(-1, next, "the source closed the connection without another byte");
  }

  @Test
  void withoutTheSecretARawClientGetsNoDescribeAndNoByteAndIsCounted(
      @TempDir(cleanup = CleanupMode.ON_SUCCESS) Path logs) throws Exception {
    try (EngineProcess source = EngineProcess.start("sec-src", logs, secretEnv(SECRET))) {
      long id = fill(source);
      // Describe.
      try (Socket s = RawLane.connect(source)) {
        s.getOutputStream()
            .write(new Wire.Header(Wire.Type.DESCRIBE_REQUEST, 0, 0, 1, 0, 0, 0, 0).encode());
        Wire.Header h = Wire.Header.read(s.getInputStream());
        assertEquals(Wire.Type.DESCRIBE_RESPONSE, h.type());
        assertEquals(Wire.PERMISSION_DENIED, h.status());
        assertEquals(0, h.payloadLength(), "no region list, no lengths");
        assertClosed(s.getInputStream());
      }
      // A lane and a READ of the region behind it.
      try (Socket s = RawLane.connect(source)) {
        OutputStream out = s.getOutputStream();
        out.write(
            Wire.concat(
                RawLane.hello("intruder", 5, source.epoch()),
                RawLane.readRequest(source.epoch(), id, 0, 4096)));
        Wire.Header h = Wire.Header.read(s.getInputStream());
        assertEquals(Wire.Type.HELLO_ACK, h.type());
        assertEquals(Wire.PERMISSION_DENIED, h.status());
        assertClosed(s.getInputStream());
      }
      // A WRITE over the region behind a HELLO.
      try (Socket s = RawLane.connect(source)) {
        byte[] junk = new byte[4096];
        new Random(1).nextBytes(junk);
        s.getOutputStream()
            .write(
                Wire.concat(
                    RawLane.hello("intruder", 5, source.epoch()),
                    Wire.concat(
                        new Wire.Header(
                                Wire.Type.WRITE_REQUEST, 0, 4096, 2, source.epoch(), id, 0, 4096)
                            .encode(),
                        junk)));
        Wire.Header h = Wire.Header.read(s.getInputStream());
        assertEquals(Wire.PERMISSION_DENIED, h.status());
        assertClosed(s.getInputStream());
      }
      // A notification.
      try (Socket s = RawLane.connect(source)) {
        byte[] payload = Wire.concat(RawLane.identity("intruder"), new byte[] {0, 1, 't'});
        s.getOutputStream()
            .write(
                Wire.concat(
                    new Wire.Header(Wire.Type.NOTIFY, 0, payload.length, 1, source.epoch(), 5, 0, 0)
                        .encode(),
                    payload));
        Wire.Header h = Wire.Header.read(s.getInputStream());
        assertEquals(Wire.Type.NOTIFY_ACK, h.type());
        assertEquals(Wire.PERMISSION_DENIED, h.status());
      }
      assertEquals(4, RawLane.counter(source, "peersRefused"));
      assertEquals(0, RawLane.counter(source, "notificationsReceived"));
      assertUntouched(source, id);

      // An engine without the secret is refused the same way, and says what is missing.
      try (TransferEngine open =
          TransferEngine.start(EngineConfig.defaults().withName("no-secret"))) {
        TransferException e =
            assertThrows(
                TransferException.class,
                () -> open.openSegment(source.endpoint(), Duration.ofSeconds(5)));
        assertEquals(ErrorKind.PERMISSION_DENIED, e.kind(), e.getMessage());
        assertTrue(e.getMessage().contains("security.secretFile"), e.getMessage());
      }
      assertEquals(5, RawLane.counter(source, "peersRefused"));
      assertUntouched(source, id);
    }
  }

  @Test
  void aWrongSecretGetsNothingEither(@TempDir(cleanup = CleanupMode.ON_SUCCESS) Path logs)
      throws Exception {
    try (EngineProcess source = EngineProcess.start("sec-src", logs, secretEnv(SECRET))) {
      long id = fill(source);
      byte[] wrong = "a-wrong-secret-of-enough-bytes!".getBytes(StandardCharsets.UTF_8);
      // An honest client with the wrong secret finds the source's proof does not verify.
      try (Socket s = RawLane.connect(source)) {
        IOException e =
            assertThrows(
                IOException.class, () -> new AuthClient("wrong", 9, wrong, null).handshake(s));
        assertTrue(e.getMessage().contains("does not verify"), e.getMessage());
      }
      // One that sends its proof anyway is refused, and its HELLO and READ after get nothing.
      try (Socket s = RawLane.connect(source)) {
        AuthClient blind = new AuthClient("wrong", 9, wrong, null);
        blind.handshake(s, false);
        assertNotNull(blind.lastResult);
        assertEquals(Wire.Type.AUTH_RESULT, blind.lastResult.type());
        assertEquals(Wire.PERMISSION_DENIED, blind.lastResult.status());
        assertClosed(s.getInputStream());
      }
      // Both: the first ended its handshake unfinished, the second was refused.
      assertEquals(2, RawLane.counter(source, "peersRefused"));
      // An engine with the wrong secret.
      Path secretFile = logs.resolve("wrong-secret");
      Files.write(secretFile, wrong);
      try (TransferEngine requester =
          TransferEngine.start(
              EngineConfig.defaults()
                  .withName("wrong-secret")
                  .withSecurity(SecurityConfig.defaults().withSecretFile(secretFile.toString())))) {
        TransferException e =
            assertThrows(
                TransferException.class,
                () -> requester.openSegment(source.endpoint(), Duration.ofSeconds(5)));
        assertEquals(ErrorKind.PERMISSION_DENIED, e.kind(), e.getMessage());
      }
      assertUntouched(source, id);
    }
  }

  @Test
  void aRecordedHandshakeIsRefusedWhenReplayedToTheSameOrARestartedEngine(
      @TempDir(cleanup = CleanupMode.ON_SUCCESS) Path logs) throws Exception {
    int port;
    try (ServerSocket free = new ServerSocket(0)) {
      port = free.getLocalPort();
    }
    byte[] secret = SECRET.getBytes(StandardCharsets.UTF_8);
    EngineProcess source = EngineProcess.startAt("sec-src", logs, port, secretEnv(SECRET));
    try {
      long id = fill(source);
      AuthClient honest = new AuthClient("recorder", 42, secret, null);
      try (Socket s = RawLane.connect(source)) {
        AuthClient.Answer a = honest.handshake(s);
        assertTrue(a.accepted(), a.toString());
        assertEquals("sec-src", a.sourceName());
        assertEquals(source.epoch(), a.sourceEpoch());
        // The positive control: authenticated, a lane READs the exact bytes.
        OutputStream out = s.getOutputStream();
        InputStream in = s.getInputStream();
        out.write(
            Wire.concat(
                RawLane.hello("recorder", 42, source.epoch()),
                RawLane.readRequest(source.epoch(), id, 4093, 8192)));
        Wire.Header ack = Wire.Header.read(in);
        assertEquals(Wire.OK, ack.status(), ack.toString());
        Wire.Header response = Wire.Header.read(in);
        assertEquals(Wire.Type.READ_RESPONSE, response.type());
        assertEquals(Wire.OK, response.status());
        byte[] got = in.readNBytes(8192);
        byte[] want = new byte[8192];
        for (int i = 0; i < want.length; i++) {
          want[i] = Pattern.at(SEED, 4093 + i);
        }
        assertArrayEquals(want, got);
      }
      byte[] recordedHello = honest.sentHello;
      byte[] recordedProof = honest.sentProof;
      try (Socket s = RawLane.connect(source)) {
        Wire.Header result = AuthClient.replay(s, recordedHello, recordedProof);
        assertEquals(Wire.Type.AUTH_RESULT, result.type());
        assertEquals(Wire.PERMISSION_DENIED, result.status(), "a replay to the same engine");
        assertClosed(s.getInputStream());
      }
      assertEquals(1, RawLane.counter(source, "peersRefused"));
      assertUntouched(source, id);

      source.kill();
      source = source.restart();
      long again = fill(source);
      try (Socket s = RawLane.connect(source)) {
        Wire.Header result = AuthClient.replay(s, recordedHello, recordedProof);
        assertEquals(Wire.PERMISSION_DENIED, result.status(), "a replay to the restarted engine");
        assertClosed(s.getInputStream());
      }
      assertEquals(1, RawLane.counter(source, "peersRefused"));
      try (Socket s = RawLane.connect(source)) {
        assertTrue(new AuthClient("recorder", 43, secret, null).handshake(s).accepted());
      }
      assertUntouched(source, again);
    } finally {
      source.close();
    }
  }

  @Test
  void aListenerThatIsNotLoopbackOnlyStartsOnlyWithCredentialsOrOpenSaidOutLoud(@TempDir Path dir)
      throws Exception {
    EngineConfig wildcard =
        EngineConfig.defaults().withName("wildcard").withListen(new ListenConfig("0.0.0.0", 0));
    TransferException refused =
        assertThrows(TransferException.class, () -> TransferEngine.start(wildcard));
    assertEquals(ErrorKind.INVALID_ARGUMENT, refused.kind());
    assertTrue(refused.getMessage().contains("security.mode"), refused.getMessage());
    assertTrue(refused.getMessage().contains("0.0.0.0"), refused.getMessage());
    try (TransferEngine open =
        TransferEngine.start(wildcard.withSecurity(SecurityConfig.defaults().withMode("open")))) {
      assertTrue(open.localSegment().port() > 0);
    }
    Path secret = dir.resolve("secret");
    Files.writeString(secret, SECRET);
    try (TransferEngine guarded =
        TransferEngine.start(
            wildcard.withSecurity(SecurityConfig.defaults().withSecretFile(secret.toString())))) {
      assertTrue(guarded.localSegment().port() > 0);
    }
  }

  @Test
  void anAuthenticatedReadLoopKeepsVerifyingThroughAFloodOfUnauthenticatedConnections(
      @TempDir(cleanup = CleanupMode.ON_SUCCESS) Path logs) throws Exception {
    Path secretFile = logs.resolve("secret");
    Files.writeString(secretFile, SECRET);
    try (EngineProcess source = EngineProcess.start("sec-src", logs, secretEnv(SECRET));
        TransferEngine requester =
            TransferEngine.start(
                EngineConfig.defaults()
                    .withName("sec-req")
                    .withSecurity(
                        SecurityConfig.defaults().withSecretFile(secretFile.toString())))) {
      long id = fill(source);
      RemoteSegment peer = requester.openSegment(source.endpoint(), Duration.ofSeconds(10));
      RegisteredMemory local = requester.allocate(REGION, Access.READ_WRITE);
      AtomicLong verified = new AtomicLong();
      AtomicReference<Throwable> failure = new AtomicReference<>();
      java.util.concurrent.atomic.AtomicBoolean stop =
          new java.util.concurrent.atomic.AtomicBoolean();
      Thread loop =
          Thread.ofPlatform()
              .name("read-loop")
              .start(
                  () -> {
                    Batch batch = requester.allocateBatch(4);
                    try {
                      long round = 0;
                      while (!stop.get()) {
                        long guard = 1000 + round;
                        Pattern.fill(local.segment(), 0, REGION, guard, 0);
                        long off = (round * 4099) % (REGION - 65536);
                        batch.reset();
                        batch.submit(
                            List.of(TransferRequest.read(local, 4096, peer, id, off, 65536)));
                        BatchStatus st = batch.await(Duration.ofSeconds(30));
                        TaskResult r = st.tasks().getFirst();
                        if (r.state() != TaskState.COMPLETED) {
                          throw new AssertionError("round " + round + ": " + r);
                        }
                        long bad =
                            RegionCheck.check(
                                local.segment(), List.of(new Span(4096, 65536, SEED, off)), guard);
                        if (bad >= 0) {
                          throw new AssertionError("round " + round + ": wrong byte at " + bad);
                        }
                        verified.incrementAndGet();
                        round++;
                      }
                    } catch (Throwable t) {
                      failure.set(t);
                    } finally {
                      batch.free();
                    }
                  });
      Await.until(Duration.ofSeconds(30), () -> verified.get() >= 10 || failure.get() != null);
      // The flood: garbage, stalled handshakes (half a header, a whole AUTH_HELLO header whose
      // payload never comes) and connections that say nothing, 250 in all, held open.
      List<Socket> flood = new ArrayList<>();
      Random random = new Random(3);
      long before = verified.get();
      long acceptedBefore = RawLane.counter(source, "connectionsAccepted");
      try {
        for (int i = 0; i < 250; i++) {
          Socket s = new Socket();
          s.connect(
              new InetSocketAddress("127.0.0.1", Integer.parseInt(source.endpoint().split(":")[1])),
              5_000);
          flood.add(s);
          try {
            switch (i % 4) {
              case 0 -> {
                byte[] junk = new byte[512];
                random.nextBytes(junk);
                s.getOutputStream().write(junk);
              }
              case 1 ->
                  s.getOutputStream()
                      .write(AuthClient.frame(Wire.Type.AUTH_HELLO, 1, 1, new byte[40]), 0, 20);
              case 2 -> {
                byte[] header =
                    new Wire.Header(Wire.Type.AUTH_HELLO, 0, 200, 0, 1, 1, 0, 0).encode();
                s.getOutputStream().write(header);
              }
              default -> {
                // Connected, silent.
              }
            }
          } catch (IOException closedAtOnce) {
            // Beyond the bound the source closed it before its bytes went.
          }
        }
        // Every flood connection reached the source's acceptor while the flood is held open, so
        // those beyond the bound met it.
        assertTrue(
            Await.until(
                Duration.ofSeconds(30),
                () -> {
                  try {
                    return RawLane.counter(source, "connectionsAccepted") >= acceptedBefore + 250;
                  } catch (IOException e) {
                    throw new java.io.UncheckedIOException(e);
                  }
                }),
            "the source accepted all 250");
        // Bounded: never more than budgets.maxEndpoints (64) connections wait unclaimed.
        long unclaimed = Long.parseLong(source.call("CHARGE ControlService unclaimedConnections"));
        assertTrue(unclaimed <= 64, "unclaimed connections: " + unclaimed);
        long during = verified.get();
        Await.until(
            Duration.ofSeconds(60), () -> verified.get() >= during + 20 || failure.get() != null);
        assertNull(failure.get(), () -> "the READ loop failed: " + failure.get());
        assertTrue(verified.get() >= before + 20, "the loop kept verifying through the flood");
      } finally {
        for (Socket s : flood) {
          s.close();
        }
      }
      stop.set(true);
      loop.join(30_000);
      assertNull(failure.get(), () -> "the READ loop failed: " + failure.get());
      // Bounded: beyond budgets.maxEndpoints (64) waiting connections, the rest were closed at
      // once; every one that spoke was refused.
      long closedAtOnce = RawLane.counter(source, "connectionsRefused");
      assertTrue(closedAtOnce > 0, "closed at once beyond the bound: " + closedAtOnce);
      // The stalled ones end at the source's deadline (timeouts.describeTimeoutMillis, 5 s).
      assertTrue(
          Await.until(
              Duration.ofSeconds(30),
              () -> {
                try {
                  return source.call("CHARGE ControlService unclaimedConnections").equals("0");
                } catch (IOException e) {
                  throw new java.io.UncheckedIOException(e);
                }
              }),
          "every flood connection ended");
      // Each AUTH_HELLO whose payload never came counts as a refused peer once its time ran out.
      long denied = RawLane.counter(source, "peersRefused");
      assertTrue(denied > 0, "handshakes refused: " + denied);
      // A notification on a connection of its own, with the handshake, is delivered.
      assertEquals(
          io.orbite.engine.NotificationResult.DELIVERED,
          requester.notify(peer, "after-flood", new byte[] {1, 2, 3}));
      assertEquals(1, RawLane.counter(source, "notificationsReceived"));
      // Still serving authenticated peers afterwards: a fresh handshake is accepted.
      try (Socket s = RawLane.connect(source)) {
        assertTrue(
            new AuthClient("late", 77, SECRET.getBytes(StandardCharsets.UTF_8), null)
                .handshake(s)
                .accepted());
      }
      assertUntouched(source, id);
    }
  }
}
