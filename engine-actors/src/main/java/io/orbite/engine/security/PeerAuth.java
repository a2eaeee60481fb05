package io.orbite.engine.security;

import io.orbite.config.EngineConfig;
import io.orbite.engine.ErrorKind;
import io.orbite.engine.TransferException;
import io.orbite.engine.spi.Conduit;
import io.orbite.engine.wire.FrameCodec;
import io.orbite.engine.wire.FrameRejectedException;
import io.orbite.engine.wire.FrameType;
import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.nio.BufferUnderflowException;
import java.nio.ByteBuffer;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.security.PublicKey;
import java.security.SecureRandom;
import java.util.concurrent.TimeUnit;
import java.util.regex.Pattern;
import javax.net.ssl.SSLException;

/**
 * The mutual challenge-response that opens every connection between engines that authenticate:
 * Describe, the data lanes of every transport (the RDMA control connection among them) and
 * notifications. Blocking; runs on the connecting thread (a blocking-I/O executor or a link's own
 * thread) and on the accepting connection's thread, never in a mailbox.
 *
 * <pre>
 *   requester                                   source
 *   AUTH_HELLO     nonce_r, name_r, epoch_r, flags_r  ─►
 *               ◄─ AUTH_CHALLENGE nonce_s, name_s, epoch_s, flags_s,
 *                                 mac_s = HMAC(secret, "S" | T), sig_s = Ed25519(key_s, "S" | T)
 *   (checks mac_s and sig_s)
 *   AUTH_PROOF     mac_r = HMAC(secret, "R" | T), sig_r = Ed25519(key_r, "R" | T)  ─►
 *               ◄─ AUTH_RESULT 0, or PERMISSION_DENIED and close
 *
 *   T = "ORBITE-AUTH-1" | nonce_r | nonce_s | name_r | epoch_r | flags_r | name_s | epoch_s | flags_s
 * </pre>
 *
 * <p>Both nonces are fresh (32 bytes from {@link SecureRandom}), so a recorded exchange proves
 * nothing on a new connection, to the same engine or a restarted one (a new epoch too). The roles'
 * labels differ, so one side's proof is never the other's. A MAC is sent only with a shared secret,
 * a signature only with an identity key; a side with peer keys requires the other's signature by
 * the key it holds for the name the other gave, which is then a proven name.
 *
 * <p>The whole exchange, from the first byte the source reads, must end within the source's
 * first-frame timeout; the requester gives it its connect timeout.
 *
 * <p>With TLS ({@code security.tlsKeyStore}), the connection runs over mutual TLS 1.3 first ({@link
 * #secure}, {@link #secureAccepted}), and this exchange runs inside it: each side then requires the
 * name the other gives to be one its certificate carries, which makes it a proven name, and the
 * epochs it binds come over a channel no one else can write into.
 *
 * <p>Both sides, and the TLS entry points, are one class (over 500 lines) on purpose: they share
 * the transcript, the flags and the frame reading, and one place holds the whole protocol, which
 * docs/security.md describes and the adversary's {@code AuthClient} re-implements independently.
 */
public final class PeerAuth {
  static final int NONCE_BYTES = 32;
  private static final int FLAG_SECRET = 1;
  private static final int FLAG_SIGNS = 2;
  private static final int FLAG_WANTS_NAME = 4;
  private static final int FLAG_TLS = 8;

  /** The first byte of a TLS record carrying a handshake (a ClientHello's). */
  public static final int TLS_HANDSHAKE_BYTE = 0x16;

  private static final byte[] LABEL = "ORBITE-AUTH-1".getBytes(StandardCharsets.US_ASCII);
  private static final Pattern NAME = Pattern.compile(EngineConfig.NAME_REGEX);

  private final Credentials credentials;
  private final String localName;
  private final long localEpoch;
  private final SecureRandom random = new SecureRandom();

  /**
   * The handshake of one engine incarnation.
   *
   * @param credentials what this engine proves itself with and checks peers against
   * @param localName this engine's name, given in every handshake
   * @param localEpoch this incarnation's epoch, bound into every proof
   */
  public PeerAuth(Credentials credentials, String localName, long localEpoch) {
    this.credentials = credentials;
    this.localName = localName;
    this.localEpoch = localEpoch;
  }

  /**
   * An engine that does not authenticate (no credentials).
   *
   * @param localName this engine's name
   * @param localEpoch this incarnation's epoch
   * @return a handshake that is never required and proves no name
   */
  public static PeerAuth none(String localName, long localEpoch) {
    return new PeerAuth(Credentials.NONE, localName, localEpoch);
  }

  /**
   * Whether every connection to and from this engine must open with the handshake.
   *
   * @return true with a secret, peer keys or TLS
   */
  public boolean required() {
    return credentials.authenticates();
  }

  /**
   * Whether peers must prove their names, so that allow-lists can name them.
   *
   * @return true with {@code security.peerKeysDir} or TLS
   */
  public boolean provesNames() {
    return credentials.provesNames();
  }

  /**
   * The credentials, for logs and the dashboard (their {@code toString} never shows a secret).
   *
   * @return this engine's credentials
   */
  public Credentials credentials() {
    return credentials;
  }

  /** A refusal already answered to the peer; the caller counts it and closes the connection. */
  public static final class Refused extends Exception {
    private static final long serialVersionUID = 1L;

    Refused(String why) {
      super(why, null, false, false);
    }
  }

  private int flags() {
    return (credentials.secret() != null ? FLAG_SECRET : 0)
        | (credentials.identityKey() != null ? FLAG_SIGNS : 0)
        | (credentials.keysProveNames() ? FLAG_WANTS_NAME : 0)
        | (credentials.tls() != null ? FLAG_TLS : 0);
  }

  /**
   * Whether connections run over mutual TLS.
   *
   * @return true with {@code security.tlsKeyStore}
   */
  public boolean tls() {
    return credentials.tls() != null;
  }

  /**
   * Puts a requester's connected, blocking socket under TLS when this engine uses it.
   *
   * @param channel the socket, connected, nothing yet sent
   * @param peer the peer as the caller names it in errors
   * @param timeoutMillis how long the TLS handshake may take
   * @return a TLS conduit, or the plain socket without TLS
   * @throws TransferException PERMISSION_DENIED when the TLS handshake is refused (by either side:
   *     an untrusted or expired certificate, no certificate)
   * @throws IOException when the connection fails or the time runs out
   */
  public Conduit secure(SocketChannel channel, String peer, int timeoutMillis) throws IOException {
    TlsIdentity tls = credentials.tls();
    if (tls == null) {
      return Conduit.plain(channel);
    }
    try {
      return tls.connect(channel, System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(timeoutMillis));
    } catch (SSLException e) {
      throw new TransferException(
          ErrorKind.PERMISSION_DENIED, "TLS with " + peer + " refused: " + e.getMessage(), e);
    }
  }

  /**
   * Runs the source's side of the TLS handshake on an accepted, blocking socket.
   *
   * @param channel the socket
   * @param first the connection's first byte, already read ({@link #TLS_HANDSHAKE_BYTE})
   * @param deadline {@link System#nanoTime()} by which the handshake must end
   * @return the TLS conduit
   * @throws SSLException when the requester's certificate (or its handshake) is refused
   * @throws IOException when the connection fails or the deadline passes
   */
  public Conduit secureAccepted(SocketChannel channel, int first, long deadline)
      throws IOException {
    ByteBuffer consumed = ByteBuffer.allocate(1).put((byte) first).flip();
    return credentials.tls().accept(channel, consumed, deadline);
  }

  /** Whether the name a peer gives is one its TLS certificate carries (always, without TLS). */
  private boolean certified(Conduit conduit, String name) {
    return credentials.tls() == null || conduit.peerNames().contains(name);
  }

  // ---- requester side ------------------------------------------------------------------------

  /**
   * Runs the requester's side on a connected socket, before the connection's first frame.
   *
   * @param conduit the connection, connected (under TLS when {@link #tls()}) and not yet used
   * @param peer the peer as the caller names it in errors
   * @param timeoutMillis how long the whole exchange may take
   * @return who the source proved to be
   * @throws TransferException PERMISSION_DENIED when the source refuses this engine or fails to
   *     prove itself, PROTOCOL when it answers outside the protocol
   * @throws IOException when the connection fails or the time runs out ({@link
   *     SocketTimeoutException})
   */
  public AuthenticatedPeer connect(Conduit conduit, String peer, int timeoutMillis)
      throws IOException {
    long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(timeoutMillis);
    Socket socket = conduit.socket().socket();
    InputStream in = conduit.in();
    OutputStream out = conduit.out();
    byte[] nonce = nonce();
    int flags = flags();
    byte[] name = localName.getBytes(StandardCharsets.UTF_8);
    ByteBuffer hello = ByteBuffer.allocate(NONCE_BYTES + 2 + name.length);
    hello.put(nonce).putShort((short) name.length).put(name);
    try {
      write(out, FrameType.AUTH_HELLO, 0, localEpoch, flags, hello.array());
      Frame challenge = read(socket, in, deadline, FrameType.AUTH_CHALLENGE);
      if (challenge.status != 0) {
        throw denied(peer, "refused this engine: " + challenge.detail());
      }
      ByteBuffer p = ByteBuffer.wrap(challenge.payload);
      byte[] theirNonce = new byte[NONCE_BYTES];
      p.get(theirNonce);
      String theirName = name(p);
      byte[] theirMac = bytes(p);
      byte[] theirSig = bytes(p);
      int theirFlags = (int) challenge.flags;
      long theirEpoch = challenge.epoch;
      String mismatch = mismatch(flags, theirFlags);
      if (mismatch != null) {
        throw denied(peer, mismatch);
      }
      byte[] t =
          transcript(
              nonce, theirNonce, localName, localEpoch, flags, theirName, theirEpoch, theirFlags);
      boolean proven = false;
      if (credentials.secret() != null
          && !Signatures.macMatches(credentials.secret(), labelled('S', t), theirMac)) {
        throw denied(peer, "its proof of the shared secret does not verify (another secret?)");
      }
      if (!certified(conduit, theirName)) {
        throw denied(
            peer,
            "it says it is '"
                + theirName
                + "', and its TLS certificate names "
                + conduit.peerNames());
      }
      proven = credentials.tls() != null;
      if (credentials.keysProveNames()) {
        PublicKey key = credentials.peerKey(theirName);
        if (key == null) {
          throw denied(peer, "it says it is '" + theirName + "', whose key is not in peerKeysDir");
        }
        if (!Signatures.verify(key, labelled('S', t), theirSig)) {
          throw denied(peer, "its signature does not verify as '" + theirName + "'");
        }
        proven = true;
      }
      ByteBuffer proof = ByteBuffer.allocate(4 + Signatures.MAC_BYTES + Signatures.SIGNATURE_BYTES);
      putBytes(
          proof,
          credentials.secret() == null
              ? null
              : Signatures.mac(credentials.secret(), labelled('R', t)));
      putBytes(
          proof,
          credentials.identityKey() == null
              ? null
              : Signatures.sign(credentials.identityKey(), labelled('R', t)));
      byte[] proofBytes = new byte[proof.position()];
      proof.get(0, proofBytes);
      write(out, FrameType.AUTH_PROOF, 0, localEpoch, flags, proofBytes);
      Frame result = read(socket, in, deadline, FrameType.AUTH_RESULT);
      if (result.status != 0) {
        throw denied(peer, "refused this engine's proof: " + result.detail());
      }
      return new AuthenticatedPeer(theirName, theirEpoch, proven);
    } catch (SSLException e) {
      // Under TLS 1.3 the source checks this engine's certificate after the requester's side of
      // the TLS handshake has ended: its refusal arrives here, as an alert.
      throw new TransferException(
          ErrorKind.PERMISSION_DENIED,
          "authenticating to " + peer + ": TLS refused: " + e.getMessage(),
          e);
    } catch (FrameRejectedException e) {
      throw new TransferException(
          ErrorKind.PROTOCOL, "authenticating to " + peer + ": " + e.describe(), e);
    } catch (BufferUnderflowException | IllegalArgumentException e) {
      throw new TransferException(
          ErrorKind.PROTOCOL, "authenticating to " + peer + ": a malformed AUTH_CHALLENGE", e);
    }
  }

  private static TransferException denied(String peer, String why) {
    return new TransferException(
        ErrorKind.PERMISSION_DENIED, "authenticating to " + peer + ": " + why);
  }

  // ---- source side ---------------------------------------------------------------------------

  /**
   * Runs the source's side, after the connection's first header turned out to be an AUTH_HELLO.
   *
   * @param conduit the accepted connection (under TLS when {@link #tls()})
   * @param hello that header, already checked
   * @param deadline {@link System#nanoTime()} by which the exchange must end
   * @return who the requester proved to be
   * @throws Refused after answering the refusal: the caller counts it and closes
   * @throws FrameRejectedException when the requester breaks the protocol
   * @throws IOException when the connection fails or the deadline passes
   */
  public AuthenticatedPeer accept(Conduit conduit, ByteBuffer hello, long deadline)
      throws IOException, FrameRejectedException, Refused {
    Socket socket = conduit.socket().socket();
    InputStream in = conduit.in();
    OutputStream out = conduit.out();
    Frame first = payloadOf(socket, in, deadline, hello);
    if (!required()) {
      throw refuse(
          out,
          FrameType.AUTH_CHALLENGE,
          credentials.open()
              ? "this engine runs with security.mode \"open\" and authenticates no one"
              : "this engine has no security credentials configured");
    }
    ByteBuffer p = ByteBuffer.wrap(first.payload);
    byte[] theirNonce = new byte[NONCE_BYTES];
    String theirName;
    try {
      p.get(theirNonce);
      theirName = name(p);
      if (p.hasRemaining()) {
        throw new IllegalArgumentException("bytes after the name");
      }
    } catch (BufferUnderflowException | IllegalArgumentException e) {
      throw refuse(out, FrameType.AUTH_CHALLENGE, "malformed AUTH_HELLO");
    }
    int flags = flags();
    int theirFlags = (int) first.flags;
    long theirEpoch = first.epoch;
    String mismatch = mismatch(flags, theirFlags);
    if (mismatch != null) {
      throw refuse(out, FrameType.AUTH_CHALLENGE, mismatch);
    }
    if (!certified(conduit, theirName)) {
      throw refuse(
          out,
          FrameType.AUTH_CHALLENGE,
          "the name '"
              + theirName
              + "' is not one the TLS certificate names "
              + conduit.peerNames());
    }
    byte[] nonce = nonce();
    byte[] t =
        transcript(
            theirNonce, nonce, theirName, theirEpoch, theirFlags, localName, localEpoch, flags);
    byte[] name = localName.getBytes(StandardCharsets.UTF_8);
    ByteBuffer c =
        ByteBuffer.allocate(
            NONCE_BYTES + 2 + name.length + 4 + Signatures.MAC_BYTES + Signatures.SIGNATURE_BYTES);
    c.put(nonce).putShort((short) name.length).put(name);
    putBytes(
        c,
        credentials.secret() == null
            ? null
            : Signatures.mac(credentials.secret(), labelled('S', t)));
    putBytes(
        c,
        credentials.identityKey() == null
            ? null
            : Signatures.sign(credentials.identityKey(), labelled('S', t)));
    byte[] challenge = new byte[c.position()];
    c.get(0, challenge);
    write(out, FrameType.AUTH_CHALLENGE, 0, localEpoch, flags, challenge);
    Frame proof = read(socket, in, deadline, FrameType.AUTH_PROOF);
    byte[] theirMac;
    byte[] theirSig;
    try {
      ByteBuffer q = ByteBuffer.wrap(proof.payload);
      theirMac = bytes(q);
      theirSig = bytes(q);
    } catch (BufferUnderflowException | IllegalArgumentException e) {
      throw refuse(out, FrameType.AUTH_RESULT, "malformed AUTH_PROOF");
    }
    if (credentials.secret() != null
        && !Signatures.macMatches(credentials.secret(), labelled('R', t), theirMac)) {
      throw refuse(out, FrameType.AUTH_RESULT, "the proof of the shared secret does not verify");
    }
    boolean proven = credentials.tls() != null;
    if (credentials.keysProveNames()) {
      PublicKey key = credentials.peerKey(theirName);
      if (key == null || !Signatures.verify(key, labelled('R', t), theirSig)) {
        throw refuse(
            out,
            FrameType.AUTH_RESULT,
            key == null
                ? "no key for the name '" + theirName + "'"
                : "the signature does not verify as '" + theirName + "'");
      }
      proven = true;
    }
    write(out, FrameType.AUTH_RESULT, 0, localEpoch, flags, new byte[0]);
    return new AuthenticatedPeer(theirName, theirEpoch, proven);
  }

  /** Answers {@code type} PERMISSION_DENIED with {@code why}, and returns the refusal to throw. */
  private Refused refuse(OutputStream out, FrameType type, String why) throws IOException {
    byte[] detail = why.getBytes(StandardCharsets.UTF_8);
    write(out, type, ErrorKind.PERMISSION_DENIED.code(), localEpoch, 0, detail);
    return new Refused(why);
  }

  /** What keeps these two sides from proving themselves to each other, or null. */
  private static String mismatch(int mine, int theirs) {
    if ((mine & FLAG_TLS) != (theirs & FLAG_TLS)) {
      return (mine & FLAG_TLS) != 0
          ? "TLS is required here, and the peer does not use it"
          : "the peer uses TLS, and none is configured here";
    }
    if ((mine & FLAG_SECRET) != (theirs & FLAG_SECRET)) {
      return (mine & FLAG_SECRET) != 0
          ? "a shared secret is required here, and the peer has none"
          : "the peer proves a shared secret, and none is configured here";
    }
    if ((mine & FLAG_WANTS_NAME) != 0 && (theirs & FLAG_SIGNS) == 0) {
      return "a proven name is required here (security.peerKeysDir), and the peer has no identity"
          + " key";
    }
    if ((theirs & FLAG_WANTS_NAME) != 0 && (mine & FLAG_SIGNS) == 0) {
      return "the peer requires a proven name, and no identity key is configured here";
    }
    return null;
  }

  // ---- wire ----------------------------------------------------------------------------------

  private record Frame(int status, long epoch, long flags, byte[] payload) {
    /** The peer's UTF-8 detail, its control characters replaced, so it cannot forge log lines. */
    String detail() {
      return payload.length == 0
          ? "(no detail)"
          : new String(payload, StandardCharsets.UTF_8).replaceAll("\\p{Cntrl}", "?");
    }
  }

  private byte[] nonce() {
    byte[] n = new byte[NONCE_BYTES];
    random.nextBytes(n);
    return n;
  }

  private static byte[] labelled(char role, byte[] transcript) {
    byte[] m = new byte[transcript.length + 1];
    m[0] = (byte) role;
    System.arraycopy(transcript, 0, m, 1, transcript.length);
    return m;
  }

  private static byte[] transcript(
      byte[] requesterNonce,
      byte[] sourceNonce,
      String requester,
      long requesterEpoch,
      int requesterFlags,
      String source,
      long sourceEpoch,
      int sourceFlags) {
    byte[] r = requester.getBytes(StandardCharsets.UTF_8);
    byte[] s = source.getBytes(StandardCharsets.UTF_8);
    ByteBuffer t =
        ByteBuffer.allocate(LABEL.length + 2 * NONCE_BYTES + 2 * (2 + 8 + 4) + r.length + s.length);
    t.put(LABEL).put(requesterNonce).put(sourceNonce);
    t.putShort((short) r.length).put(r).putLong(requesterEpoch).putInt(requesterFlags);
    t.putShort((short) s.length).put(s).putLong(sourceEpoch).putInt(sourceFlags);
    return t.array();
  }

  private static String name(ByteBuffer p) {
    int length = p.getShort() & 0xffff;
    if (length > EngineConfig.MAX_NAME_LENGTH) {
      throw new IllegalArgumentException("name of " + length + " bytes");
    }
    byte[] b = new byte[length];
    p.get(b);
    String name = new String(b, StandardCharsets.US_ASCII);
    if (!NAME.matcher(name).matches()) {
      throw new IllegalArgumentException("not an engine name");
    }
    return name;
  }

  private static byte[] bytes(ByteBuffer p) {
    int length = p.getShort() & 0xffff;
    if (length > Signatures.SIGNATURE_BYTES) {
      throw new IllegalArgumentException("a proof of " + length + " bytes");
    }
    if (length == 0) {
      return null;
    }
    byte[] b = new byte[length];
    p.get(b);
    return b;
  }

  private static void putBytes(ByteBuffer b, byte[] bytes) {
    if (bytes == null) {
      b.putShort((short) 0);
    } else {
      b.putShort((short) bytes.length).put(bytes);
    }
  }

  private static void write(
      OutputStream out, FrameType type, int status, long epoch, long flags, byte[] payload)
      throws IOException {
    byte[] frame = new byte[FrameCodec.HEADER_BYTES + payload.length];
    ByteBuffer f = ByteBuffer.wrap(frame);
    FrameCodec.encode(f, 0, type, status, payload.length, 0, epoch, flags, 0, 0);
    System.arraycopy(payload, 0, frame, FrameCodec.HEADER_BYTES, payload.length);
    out.write(frame);
    out.flush();
  }

  private static Frame read(Socket socket, InputStream in, long deadline, FrameType expected)
      throws IOException, FrameRejectedException {
    byte[] header = new byte[FrameCodec.HEADER_BYTES];
    readFully(socket, in, header, deadline);
    ByteBuffer h = ByteBuffer.wrap(header);
    FrameCodec.check(h, 0, header.length, 0);
    if (FrameCodec.type(h, 0) != expected) {
      throw new FrameRejectedException(
          FrameRejectedException.Reason.UNEXPECTED_TYPE,
          "expected "
              + expected
              + " in the authentication handshake, got "
              + FrameCodec.type(h, 0));
    }
    return payloadOf(socket, in, deadline, h);
  }

  private static Frame payloadOf(Socket socket, InputStream in, long deadline, ByteBuffer h)
      throws IOException {
    byte[] payload = new byte[(int) FrameCodec.payloadLength(h, 0)];
    readFully(socket, in, payload, deadline);
    return new Frame(
        FrameCodec.status(h, 0), FrameCodec.epoch(h, 0), FrameCodec.regionId(h, 0), payload);
  }

  /** Reads exactly {@code b.length} bytes, each read bounded by what is left of the deadline. */
  private static void readFully(Socket socket, InputStream in, byte[] b, long deadline)
      throws IOException {
    int got = 0;
    while (got < b.length) {
      long left = deadline - System.nanoTime();
      if (left <= 0) {
        throw new SocketTimeoutException("the authentication handshake ran out of time");
      }
      socket.setSoTimeout((int) Math.max(1, Math.min(Integer.MAX_VALUE, left / 1_000_000)));
      int n = in.read(b, got, b.length - got);
      if (n < 0) {
        throw new EOFException("the connection closed during the authentication handshake");
      }
      got += n;
    }
  }
}
