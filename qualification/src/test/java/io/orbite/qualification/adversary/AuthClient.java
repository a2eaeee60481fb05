package io.orbite.qualification.adversary;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.Socket;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.security.GeneralSecurityException;
import java.security.PrivateKey;
import java.security.SecureRandom;
import java.security.Signature;
import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;

/**
 * The requester's side of the authentication handshake, written from docs/security.md ("The
 * handshake on the wire") and not from the engine's code: AUTH_HELLO, the source's AUTH_CHALLENGE,
 * AUTH_PROOF, AUTH_RESULT. It keeps the bytes it sent, so a test can replay them on another
 * connection as a recording would.
 */
final class AuthClient {
  static final int FLAG_SECRET = 1;
  static final int FLAG_SIGNS = 2;
  static final int FLAG_TLS = 8;

  private final String name;
  private final long epoch;
  private final byte[] secret;
  private final PrivateKey key;

  /** Whether the connection runs under TLS (docs/security.md: the flag the handshake then sets). */
  private boolean tls;

  /** The AUTH_HELLO and AUTH_PROOF frames of the last handshake, as sent. */
  byte[] sentHello;

  byte[] sentProof;

  /**
   * @param secret the shared secret, or null
   * @param key the Ed25519 private key that signs, or null
   */
  AuthClient(String name, long epoch, byte[] secret, PrivateKey key) {
    this.name = name;
    this.epoch = epoch;
    this.secret = secret;
    this.key = key;
  }

  /** This client speaks over a TLS socket, and says so in its flags. */
  AuthClient overTls() {
    this.tls = true;
    return this;
  }

  /** What the source answered: its challenge's header and, after a proof, the result's. */
  record Answer(
      Wire.Header challenge,
      String sourceName,
      long sourceEpoch,
      Wire.Header result,
      String refusal) {
    boolean accepted() {
      return challenge.status() == Wire.OK && result != null && result.status() == Wire.OK;
    }
  }

  /** The last AUTH_RESULT read, or null. */
  Wire.Header lastResult;

  /** Runs the whole handshake honestly; throws when the source fails to prove the secret. */
  Answer handshake(Socket s) throws IOException {
    return handshake(s, true);
  }

  /**
   * Runs the handshake; with {@code checkSource} off it sends its proof even when the source's does
   * not verify under this client's secret (a client that guesses).
   */
  Answer handshake(Socket s, boolean checkSource) throws IOException {
    InputStream in = s.getInputStream();
    OutputStream out = s.getOutputStream();
    byte[] nonce = new byte[32];
    new SecureRandom().nextBytes(nonce);
    int flags =
        (secret != null ? FLAG_SECRET : 0) | (key != null ? FLAG_SIGNS : 0) | (tls ? FLAG_TLS : 0);
    byte[] n = name.getBytes(StandardCharsets.UTF_8);
    byte[] hello =
        ByteBuffer.allocate(32 + 2 + n.length).put(nonce).putShort((short) n.length).put(n).array();
    sentHello = frame(Wire.Type.AUTH_HELLO, epoch, flags, hello);
    out.write(sentHello);
    out.flush();
    Wire.Header ch = Wire.Header.read(in);
    if (ch == null || ch.type() != Wire.Type.AUTH_CHALLENGE) {
      throw new IOException("expected AUTH_CHALLENGE, got " + ch);
    }
    byte[] payload = in.readNBytes((int) ch.payloadLength());
    if (ch.status() != Wire.OK) {
      return new Answer(ch, null, 0, null, new String(payload, StandardCharsets.UTF_8));
    }
    ByteBuffer p = ByteBuffer.wrap(payload);
    byte[] sourceNonce = new byte[32];
    p.get(sourceNonce);
    byte[] sn = new byte[p.getShort() & 0xffff];
    p.get(sn);
    String sourceName = new String(sn, StandardCharsets.UTF_8);
    byte[] sourceMac = new byte[p.getShort() & 0xffff];
    p.get(sourceMac);
    ByteBuffer t =
        ByteBuffer.allocate(13 + 64 + 2 * 14 + n.length + sn.length)
            .put("ORBITE-AUTH-1".getBytes(StandardCharsets.US_ASCII))
            .put(nonce)
            .put(sourceNonce);
    t.putShort((short) n.length).put(n).putLong(epoch).putInt(flags);
    t.putShort((short) sn.length).put(sn).putLong(ch.epoch()).putInt((int) ch.regionId());
    byte[] transcript = t.array();
    if (checkSource
        && secret != null
        && !java.security.MessageDigest.isEqual(sourceMac, mac(labelled('S', transcript)))) {
      throw new IOException("the source's MAC does not verify under this secret");
    }
    ByteBuffer proof = ByteBuffer.allocate(4 + 32 + 64);
    byte[] m = secret == null ? new byte[0] : mac(labelled('R', transcript));
    proof.putShort((short) m.length).put(m);
    byte[] sig = key == null ? new byte[0] : sign(labelled('R', transcript));
    proof.putShort((short) sig.length).put(sig);
    byte[] proofBytes = new byte[proof.position()];
    proof.get(0, proofBytes);
    sentProof = frame(Wire.Type.AUTH_PROOF, epoch, flags, proofBytes);
    out.write(sentProof);
    out.flush();
    Wire.Header result = Wire.Header.read(in);
    if (result != null) {
      in.readNBytes((int) result.payloadLength());
    }
    lastResult = result;
    return new Answer(ch, sourceName, ch.epoch(), result, null);
  }

  /**
   * Sends a recorded AUTH_HELLO, reads the challenge, sends the recorded AUTH_PROOF: a replay.
   *
   * @return the source's AUTH_RESULT, or null when it closed instead
   */
  static Wire.Header replay(Socket s, byte[] hello, byte[] proof) throws IOException {
    InputStream in = s.getInputStream();
    OutputStream out = s.getOutputStream();
    out.write(hello);
    out.flush();
    Wire.Header ch = Wire.Header.read(in);
    if (ch == null) {
      return null;
    }
    in.readNBytes((int) ch.payloadLength());
    out.write(proof);
    out.flush();
    Wire.Header result = Wire.Header.read(in);
    if (result != null) {
      in.readNBytes((int) result.payloadLength());
    }
    return result;
  }

  static byte[] frame(Wire.Type type, long epoch, long flags, byte[] payload) {
    return Wire.concat(
        new Wire.Header(type, 0, payload.length, 0, epoch, flags, 0, 0).encode(), payload);
  }

  private static byte[] labelled(char role, byte[] transcript) {
    byte[] m = new byte[transcript.length + 1];
    m[0] = (byte) role;
    System.arraycopy(transcript, 0, m, 1, transcript.length);
    return m;
  }

  private byte[] mac(byte[] message) {
    try {
      Mac mac = Mac.getInstance("HmacSHA256");
      mac.init(new SecretKeySpec(secret, "HmacSHA256"));
      return mac.doFinal(message);
    } catch (GeneralSecurityException e) {
      throw new IllegalStateException(e);
    }
  }

  private byte[] sign(byte[] message) {
    try {
      Signature s = Signature.getInstance("Ed25519");
      s.initSign(key);
      s.update(message);
      return s.sign();
    } catch (GeneralSecurityException e) {
      throw new IllegalStateException(e);
    }
  }
}
