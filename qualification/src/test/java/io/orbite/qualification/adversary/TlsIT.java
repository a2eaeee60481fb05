package io.orbite.qualification.adversary;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.orbite.config.EngineConfig;
import io.orbite.config.SecurityConfig;
import io.orbite.engine.Access;
import io.orbite.engine.Batch;
import io.orbite.engine.BatchStatus;
import io.orbite.engine.ErrorKind;
import io.orbite.engine.RegisteredMemory;
import io.orbite.engine.RemoteSegment;
import io.orbite.engine.TaskState;
import io.orbite.engine.TransferEngine;
import io.orbite.engine.TransferException;
import io.orbite.engine.TransferRequest;
import io.orbite.engine.security.TlsFiles;
import io.orbite.qualification.harness.EngineProcess;
import io.orbite.qualification.verify.Pattern;
import io.orbite.qualification.verify.RegionCheck;
import io.orbite.qualification.verify.Span;
import java.io.IOException;
import java.net.Socket;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLException;
import javax.net.ssl.SSLSocket;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.CleanupMode;
import org.junit.jupiter.api.io.TempDir;

/**
 * Mutual TLS (docs/security.md), against a source engine in a process of its own whose every
 * connection runs over TLS: an engine with a certificate from the same authority READs and WRITEs
 * verified bytes; a plain client, a certificate for another name and an expired one get no Describe
 * data and no byte, and are counted. The TLS clients that misbehave are the JDK's own {@link
 * SSLSocket}, speaking the documented handshake ({@link AuthClient}) inside.
 */
class TlsIT {
  private static final long REGION = 4 << 20;
  private static final long SEED = 11;

  @TempDir static Path tlsDir;

  private static TlsFiles ca;

  @BeforeAll
  static void issue() throws IOException {
    ca = TlsFiles.authority(tlsDir, 30);
    ca.issue("tls-src", 0, 30);
    ca.issue("tls-req", 0, 30);
    ca.issue("mallory", 0, 30);
    ca.issue("tls-old", 10, 1); // expired nine days ago
  }

  private static SecurityConfig tls(String name) {
    return SecurityConfig.defaults()
        .withTls(
            tlsDir.resolve(name + ".p12").toString(),
            ca.trustStore().toString(),
            ca.passwordFile().toString());
  }

  private static Map<String, String> sourceEnv() {
    return Map.of(
        "ORBITE_CONF",
        "{\"security\":{\"tlsKeyStore\":\""
            + tlsDir.resolve("tls-src.p12")
            + "\",\"tlsTrustStore\":\""
            + ca.trustStore()
            + "\",\"tlsPasswordFile\":\""
            + ca.passwordFile()
            + "\"}}");
  }

  /**
   * Waits until the source has counted {@code value} refusals: a refusal in the TLS handshake is
   * counted after its alert has gone, so the client can see it first.
   */
  private static void awaitRefused(EngineProcess source, long value) {
    io.orbite.qualification.Await.until(
        Duration.ofSeconds(10),
        () -> {
          try {
            return RawLane.counter(source, "peersRefused") >= value;
          } catch (IOException e) {
            throw new java.io.UncheckedIOException(e);
          }
        });
    try {
      assertEquals(value, RawLane.counter(source, "peersRefused"));
    } catch (IOException e) {
      throw new java.io.UncheckedIOException(e);
    }
  }

  /** A raw TLS client holding {@code name}'s certificate, trusting the authority. */
  private static SSLSocket rawTls(EngineProcess source, String name) throws Exception {
    SSLContext context = ca.context(tlsDir.resolve(name + ".p12"));
    Socket plain = RawLane.connect(source);
    String[] hp = source.endpoint().split(":");
    SSLSocket s =
        (SSLSocket)
            context.getSocketFactory().createSocket(plain, hp[0], Integer.parseInt(hp[1]), true);
    s.setUseClientMode(true);
    s.setSoTimeout(10_000);
    return s;
  }

  @Test
  void overTlsReadsAndWritesVerifyAndAPlainPeerGetsNothing(
      @TempDir(cleanup = CleanupMode.ON_SUCCESS) Path logs) throws Exception {
    try (EngineProcess source = EngineProcess.start("tls-src", logs, sourceEnv());
        TransferEngine requester =
            TransferEngine.start(
                EngineConfig.defaults().withName("tls-req").withSecurity(tls("tls-req")))) {
      long id = Long.parseLong(source.call("ALLOC " + REGION + " READ_WRITE"));
      source.call("FILL " + id + " " + SEED);
      RemoteSegment peer = requester.openSegment(source.endpoint(), Duration.ofSeconds(10));
      RegisteredMemory local = requester.allocate(REGION, Access.READ_WRITE);
      Batch batch = requester.allocateBatch(4);
      try {
        // A READ of 3 MiB at an odd offset, into the middle of guard bytes.
        long length = 3L << 20;
        long off = 4093;
        Pattern.fill(local.segment(), 0, REGION, 99, 0);
        batch.submit(List.of(TransferRequest.read(local, 512, peer, id, off, length)));
        BatchStatus st = batch.await(Duration.ofSeconds(30));
        assertEquals(TaskState.COMPLETED, st.tasks().getFirst().state(), st.toString());
        assertEquals(
            -1,
            RegionCheck.check(local.segment(), List.of(new Span(512, length, SEED, off)), 99),
            "every byte read over TLS, and the guards around it");
        // A WRITE of 1 MiB back, checked whole at the source.
        Pattern.fill(local.segment(), 0, REGION, 23, 0);
        batch.reset();
        batch.submit(List.of(TransferRequest.write(local, 0, peer, id, 8191, 1 << 20)));
        st = batch.await(Duration.ofSeconds(30));
        assertEquals(TaskState.COMPLETED, st.tasks().getFirst().state(), st.toString());
        assertEquals("OK", source.verify(id, SEED, List.of(new Span(8191, 1 << 20, 23, 0))));
      } finally {
        batch.free();
      }
      assertEquals(0, RawLane.counter(source, "peersRefused"));

      // A raw client that speaks frames in the clear: PERMISSION_DENIED, no region list.
      try (Socket s = RawLane.connect(source)) {
        s.getOutputStream()
            .write(new Wire.Header(Wire.Type.DESCRIBE_REQUEST, 0, 0, 1, 0, 0, 0, 0).encode());
        Wire.Header h = Wire.Header.read(s.getInputStream());
        assertEquals(Wire.Type.DESCRIBE_RESPONSE, h.type());
        assertEquals(Wire.PERMISSION_DENIED, h.status());
        assertEquals(0, h.payloadLength(), "no region list, no lengths");
      }
      awaitRefused(source, 1);
      // An engine without TLS is refused the same way.
      try (TransferEngine plain =
          TransferEngine.start(EngineConfig.defaults().withName("plain-req"))) {
        TransferException e =
            assertThrows(
                TransferException.class,
                () -> plain.openSegment(source.endpoint(), Duration.ofSeconds(5)));
        assertEquals(ErrorKind.PERMISSION_DENIED, e.kind(), e.getMessage());
      }
      awaitRefused(source, 2);
      assertEquals("OK", source.verify(id, SEED, List.of(new Span(8191, 1 << 20, 23, 0))));
    }
  }

  @Test
  void aCertificateForAnotherNameAndAnExpiredOneAreRefused(
      @TempDir(cleanup = CleanupMode.ON_SUCCESS) Path logs) throws Exception {
    try (EngineProcess source = EngineProcess.start("tls-src", logs, sourceEnv())) {
      long id = Long.parseLong(source.call("ALLOC " + REGION + " READ_WRITE"));
      source.call("FILL " + id + " " + SEED);
      // The positive control: tls-req's own certificate, saying it is tls-req.
      try (SSLSocket s = rawTls(source, "tls-req")) {
        AuthClient.Answer a = new AuthClient("tls-req", 5, null, null).overTls().handshake(s);
        assertTrue(a.accepted(), a.toString());
        assertEquals("tls-src", a.sourceName());
      }
      // mallory's certificate (valid, from the same authority), saying it is tls-req.
      try (SSLSocket s = rawTls(source, "mallory")) {
        AuthClient.Answer a = new AuthClient("tls-req", 5, null, null).overTls().handshake(s);
        assertEquals(Wire.PERMISSION_DENIED, a.challenge().status(), a.toString());
        assertTrue(a.refusal().contains("[mallory]"), a.refusal());
        s.getOutputStream()
            .write(
                Wire.concat(
                    RawLane.hello("tls-req", 5, source.epoch()),
                    RawLane.readRequest(source.epoch(), id, 0, 4096)));
        assertEquals(-1, s.getInputStream().read(), "nothing after the refusal");
      } catch (SSLException | java.net.SocketException closed) {
        // The source closed the connection under the HELLO: nothing came back either way.
      }
      awaitRefused(source, 1);
      // An expired certificate: the source refuses the TLS handshake itself.
      try (SSLSocket s = rawTls(source, "tls-old")) {
        assertThrows(
            IOException.class,
            () -> new AuthClient("tls-old", 5, null, null).overTls().handshake(s),
            "an expired certificate gets no AUTH_CHALLENGE");
      }
      awaitRefused(source, 2);
      assertEquals("OK", source.verify(id, SEED, List.of()), "the source's region is untouched");
    }
    // And an engine does not start with an expired certificate of its own.
    TransferException own =
        assertThrows(
            TransferException.class,
            () ->
                TransferEngine.start(
                    EngineConfig.defaults().withName("tls-old").withSecurity(tls("tls-old"))));
    assertEquals(ErrorKind.INVALID_ARGUMENT, own.kind());
    assertTrue(own.getMessage().contains("security.tlsKeyStore"), own.getMessage());
  }

  @Test
  void anAllowListNamesPeersByTheNamesTheirCertificatesProve(
      @TempDir(cleanup = CleanupMode.ON_SUCCESS) Path logs) throws Exception {
    try (EngineProcess source = EngineProcess.start("tls-src", logs, sourceEnv());
        TransferEngine listed =
            TransferEngine.start(
                EngineConfig.defaults().withName("tls-req").withSecurity(tls("tls-req")));
        TransferEngine other =
            TransferEngine.start(
                EngineConfig.defaults().withName("mallory").withSecurity(tls("mallory")))) {
      long kept = Long.parseLong(source.call("ALLOCFOR " + REGION + " READ_WRITE tls-req"));
      source.call("FILL " + kept + " " + SEED);
      long open = Long.parseLong(source.call("ALLOC " + REGION + " READ_WRITE"));
      // The listed engine sees the kept region and READs it byte for byte, guards included.
      RemoteSegment forListed = listed.openSegment(source.endpoint(), Duration.ofSeconds(10));
      assertTrue(forListed.region(kept).isPresent(), forListed.regions().toString());
      RegisteredMemory local = listed.allocate(REGION, Access.READ_WRITE);
      Pattern.fill(local.segment(), 0, REGION, 5, 0);
      Batch batch = listed.allocateBatch(1);
      batch.submit(List.of(TransferRequest.read(local, 4097, forListed, kept, 8191, 200_000)));
      BatchStatus st = batch.await(Duration.ofSeconds(30));
      batch.free();
      assertTrue(st.allCompleted(), st.toString());
      assertEquals(
          -1, RegionCheck.check(local.segment(), List.of(new Span(4097, 200_000, SEED, 8191)), 5));
      // mallory, a member by her certificate but not listed: the kept region is not in her
      // Describe, and a request for it is refused at submit.
      RemoteSegment forOther = other.openSegment(source.endpoint(), Duration.ofSeconds(10));
      assertEquals(
          List.of(open),
          forOther.regions().stream().map(io.orbite.engine.RemoteRegion::regionId).toList());
      RegisteredMemory hers = other.allocate(REGION, Access.READ_WRITE);
      Batch refused = other.allocateBatch(1);
      assertThrows(
          TransferException.class,
          () -> refused.submit(List.of(TransferRequest.read(hers, 0, forOther, kept, 0, 4096))));
      refused.free();
      // By hand, over TLS as mallory (accepted): a READ frame naming the kept region is refused
      // PERMISSION_DENIED, no byte moved.
      try (SSLSocket s = rawTls(source, "mallory")) {
        assertTrue(new AuthClient("mallory", 73, null, null).overTls().handshake(s).accepted());
        s.getOutputStream()
            .write(
                Wire.concat(
                    RawLane.hello("mallory", 73, source.epoch()),
                    RawLane.readRequest(source.epoch(), kept, 0, 4096)));
        assertEquals(Wire.OK, Wire.Header.read(s.getInputStream()).status(), "her lane opens");
        Wire.Header r = Wire.Header.read(s.getInputStream());
        assertEquals(Wire.Type.READ_RESPONSE, r.type());
        assertEquals(Wire.PERMISSION_DENIED, r.status());
        assertEquals(0, r.payloadLength(), "no byte of the kept region");
      }
      assertEquals("OK", source.verify(kept, SEED, List.of()), "the kept region is untouched");
    }
  }
}
