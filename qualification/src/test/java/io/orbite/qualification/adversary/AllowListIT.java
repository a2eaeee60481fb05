package io.orbite.qualification.adversary;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.orbite.config.EngineConfig;
import io.orbite.config.SecurityConfig;
import io.orbite.engine.Access;
import io.orbite.engine.Batch;
import io.orbite.engine.BatchStatus;
import io.orbite.engine.RegisteredMemory;
import io.orbite.engine.RemoteRegion;
import io.orbite.engine.RemoteSegment;
import io.orbite.engine.TransferEngine;
import io.orbite.engine.TransferException;
import io.orbite.engine.TransferRequest;
import io.orbite.engine.Transport;
import io.orbite.qualification.harness.EngineProcess;
import io.orbite.qualification.verify.Pattern;
import io.orbite.qualification.verify.RegionCheck;
import io.orbite.qualification.verify.Span;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.Socket;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.KeyFactory;
import java.security.PrivateKey;
import java.security.spec.PKCS8EncodedKeySpec;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.Map;
import java.util.Random;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.CleanupMode;
import org.junit.jupiter.api.io.TempDir;

/**
 * Per-region allow-lists (docs/security.md), against a source engine process whose peers prove
 * their names with Ed25519 keys: a region allocated for {@code alice} is listed in alice's Describe
 * and READ by her byte for byte; {@code mallory}, a member with a key of her own, does not see it
 * in her Describe, and her READ and WRITE frames for it, sent by hand after an honest signed
 * handshake, are refused PERMISSION_DENIED with the region whole. The source's region is checked
 * whole after every refusal.
 */
class AllowListIT {
  private static final long REGION = 1 << 20;
  private static final long SEED = 23;
  private static final long OPEN_SEED = 29;

  private static Path keys(Path dir) throws IOException {
    Path keys = dir.resolve("keys");
    for (String name : List.of("allow-src", "alice", "mallory")) {
      io.orbite.engine.security.KeyFiles.writePair(name, keys);
    }
    return keys;
  }

  private static SecurityConfig security(Path keys, String name) {
    return SecurityConfig.defaults()
        .withKeys(keys.resolve(name + ".key").toString(), keys.toString());
  }

  private static PrivateKey privateKey(Path keys, String name) throws Exception {
    String pem = Files.readString(keys.resolve(name + ".key"));
    String body =
        pem.replace("-----BEGIN PRIVATE KEY-----", "").replace("-----END PRIVATE KEY-----", "");
    return KeyFactory.getInstance("Ed25519")
        .generatePrivate(new PKCS8EncodedKeySpec(Base64.getMimeDecoder().decode(body)));
  }

  /** The region ids a Describe payload lists (docs/architecture.md's layout). */
  private static List<Long> describedIds(byte[] payload) {
    ByteBuffer b = ByteBuffer.wrap(payload);
    b.position(2 + (b.getShort() & 0xffff));
    b.getInt(); // port
    b.getLong(); // epoch
    int n = b.getInt();
    List<Long> ids = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      ids.add(b.getLong());
      b.getLong();
      b.get();
    }
    return ids;
  }

  /** Signs a handshake as {@code name}, then asks Describe on the same connection. */
  private static List<Long> describeAs(EngineProcess source, Path keys, String name, long epoch)
      throws Exception {
    try (Socket s = RawLane.connect(source)) {
      assertTrue(new AuthClient(name, epoch, null, privateKey(keys, name)).handshake(s).accepted());
      s.getOutputStream()
          .write(new Wire.Header(Wire.Type.DESCRIBE_REQUEST, 0, 0, 1, 0, 0, 0, 0).encode());
      Wire.Header h = Wire.Header.read(s.getInputStream());
      assertEquals(Wire.OK, h.status());
      return describedIds(s.getInputStream().readNBytes((int) h.payloadLength()));
    }
  }

  @Test
  void onlyTheListedPeerSeesAndReachesTheRegion(
      @TempDir(cleanup = CleanupMode.ON_SUCCESS) Path logs) throws Exception {
    Path keys = keys(logs);
    String conf =
        "{\"name\":\"allow-src\",\"security\":{\"identityKeyFile\":\""
            + keys.resolve("allow-src.key")
            + "\",\"peerKeysDir\":\""
            + keys
            + "\"}}";
    try (EngineProcess source =
            EngineProcess.start("allow-src", logs, Map.of("ORBITE_CONF", conf));
        TransferEngine alice =
            TransferEngine.start(
                EngineConfig.defaults().withName("alice").withSecurity(security(keys, "alice")));
        TransferEngine mallory =
            TransferEngine.start(
                EngineConfig.defaults()
                    .withName("mallory")
                    .withSecurity(security(keys, "mallory")))) {
      long kept = Long.parseLong(source.call("ALLOCFOR " + REGION + " READ_WRITE alice"));
      source.call("FILL " + kept + " " + SEED);
      long open = Long.parseLong(source.call("ALLOC " + REGION + " READ_WRITE"));
      source.call("FILL " + open + " " + OPEN_SEED);

      // alice: listed in her Describe, and READ byte for byte, guards included.
      RemoteSegment forAlice = alice.openSegment(source.endpoint(), Duration.ofSeconds(10));
      assertTrue(forAlice.region(kept).isPresent(), forAlice.regions().toString());
      RegisteredMemory local = alice.allocate(REGION, Access.READ_WRITE);
      Pattern.fill(local.segment(), 0, REGION, 5, 0);
      Batch batch = alice.allocateBatch(1);
      batch.submit(
          List.of(
              TransferRequest.read(local, 4097, forAlice, kept, 8191, 200_000)
                  .withTransport(Transport.TCP)));
      BatchStatus st = batch.await(Duration.ofSeconds(30));
      batch.free();
      assertTrue(st.allCompleted(), st.toString());
      assertEquals(
          -1, RegionCheck.check(local.segment(), List.of(new Span(4097, 200_000, SEED, 8191)), 5));

      // mallory: a member (her key is known), but not listed: the region is not in her Describe,
      // the open region is, and a request for the kept one is refused at submit.
      RemoteSegment forMallory = mallory.openSegment(source.endpoint(), Duration.ofSeconds(10));
      assertFalse(forMallory.region(kept).isPresent(), forMallory.regions().toString());
      assertTrue(forMallory.region(open).isPresent(), forMallory.regions().toString());
      assertEquals(
          List.of(open), forMallory.regions().stream().map(RemoteRegion::regionId).toList());
      RegisteredMemory hers = mallory.allocate(REGION, Access.READ_WRITE);
      Batch refused = mallory.allocateBatch(1);
      assertThrows(
          TransferException.class,
          () -> refused.submit(List.of(TransferRequest.read(hers, 0, forMallory, kept, 0, 4096))));
      refused.free();

      // By hand, after an honest signed handshake as mallory: the Describe leaves the region out,
      // and READ and WRITE frames naming it are refused PERMISSION_DENIED, no byte moved.
      assertEquals(List.of(open), describeAs(source, keys, "mallory", 71));
      assertEquals(
          List.of(kept, open), describeAs(source, keys, "alice", 72).stream().sorted().toList());
      try (Socket s = RawLane.connect(source)) {
        AuthClient as = new AuthClient("mallory", 73, null, privateKey(keys, "mallory"));
        assertTrue(as.handshake(s).accepted());
        OutputStream out = s.getOutputStream();
        InputStream in = s.getInputStream();
        out.write(RawLane.hello("mallory", 73, source.epoch()));
        assertEquals(Wire.OK, Wire.Header.read(in).status(), "mallory may open a lane");
        out.write(
            new Wire.Header(Wire.Type.READ_REQUEST, 0, 0, 2, source.epoch(), kept, 0, 4096)
                .encode());
        Wire.Header read = Wire.Header.read(in);
        assertEquals(Wire.Type.READ_RESPONSE, read.type());
        assertEquals(Wire.PERMISSION_DENIED, read.status());
        assertEquals(0, read.payloadLength(), "not one byte of the region");
        byte[] junk = new byte[4096];
        new Random(9).nextBytes(junk);
        out.write(
            Wire.concat(
                new Wire.Header(
                        Wire.Type.WRITE_REQUEST, 0, 4096, 3, source.epoch(), kept, 4096, 4096)
                    .encode(),
                junk));
        Wire.Header write = Wire.Header.read(in);
        assertEquals(Wire.Type.WRITE_ACK, write.type());
        assertEquals(Wire.PERMISSION_DENIED, write.status());
        // The open region stays hers to READ on the same lane.
        out.write(
            new Wire.Header(Wire.Type.READ_REQUEST, 0, 0, 4, source.epoch(), open, 100, 4096)
                .encode());
        Wire.Header ok = Wire.Header.read(in);
        assertEquals(Wire.OK, ok.status());
        byte[] got = in.readNBytes(4096);
        byte[] want = new byte[4096];
        for (int i = 0; i < want.length; i++) {
          want[i] = Pattern.at(OPEN_SEED, 100 + i);
        }
        assertArrayEquals(want, got);
      }
      // A member that proved one name cannot open a lane under another (and so fence its lanes).
      try (Socket s = RawLane.connect(source)) {
        assertTrue(
            new AuthClient("mallory", 74, null, privateKey(keys, "mallory"))
                .handshake(s)
                .accepted());
        s.getOutputStream().write(RawLane.hello("alice", 74, source.epoch()));
        Wire.Header ack = Wire.Header.read(s.getInputStream());
        assertEquals(Wire.Type.HELLO_ACK, ack.type());
        assertEquals(Wire.PERMISSION_DENIED, ack.status(), "a HELLO naming another engine");
      }
      try (Socket s = RawLane.connect(source)) {
        assertTrue(
            new AuthClient("mallory", 75, null, privateKey(keys, "mallory"))
                .handshake(s)
                .accepted());
        s.getOutputStream().write(RawLane.hello("mallory", 76, source.epoch()));
        assertEquals(
            Wire.PERMISSION_DENIED,
            Wire.Header.read(s.getInputStream()).status(),
            "a HELLO naming another epoch than the handshake proved");
      }
      assertEquals("OK", source.verify(kept, SEED, List.of()), "the kept region is whole");
      assertEquals("OK", source.verify(open, OPEN_SEED, List.of()), "the open region is whole");
    }
  }

  @Test
  void anAllowListWhereNamesAreNotProvenIsRefusedNamingPeerKeysDir(@TempDir Path dir)
      throws Exception {
    Path secret = dir.resolve("secret");
    Files.writeString(secret, "allow-list-shared-secret-0123456");
    try (TransferEngine member =
        TransferEngine.start(
            EngineConfig.defaults()
                .withName("member")
                .withSecurity(SecurityConfig.defaults().withSecretFile(secret.toString())))) {
      TransferException e =
          assertThrows(
              TransferException.class,
              () -> member.allocate(4096, Access.READ, null, java.util.Set.of("alice")));
      assertTrue(e.getMessage().contains("security.peerKeysDir"), e.getMessage());
      assertTrue(member.localRegions().isEmpty(), "nothing was allocated");
    }
  }
}
