package io.orbite.transport.rdma;

import io.orbite.engine.ErrorKind;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.util.ArrayList;
import java.util.List;

/**
 * The RDMA transport's control protocol, carried on one TCP connection per endpoint after the HELLO
 * that names the peer incarnation (so a stale epoch is refused before any QP exists). Every message
 * is a type byte then its fields, big-endian:
 *
 * <pre>
 *   RAILS      source → requester,  u16 n, n × (gid hi u64, gid lo u64, lid u16, mtu u8, port u8,
 *              then requester → source   link rate u32 (Mb/s), NUMA node i16, device),
 *                                   largest task u64, parents u32 (the sender's limits as a source)
 *   CONNECT    requester → source   u16 n, n × (local rail u16, remote rail u16, qpn u32)
 *   CONNECTED  source → requester   u16 status, n × qpn u32 | detail
 *   RESERVE    requester → source   parent u64, op u8, region u64, offset u64, length u64,
 *                                   slices u16
 *   GRANT_REQ  requester → source   id u64, parent u64, qp u16, op u8, region u64, offset u64,
 *                                   length u64
 *   GRANT      source → requester   id u64, status u16, addr u64, rkey u32, detail
 *   ACK        source → requester   id u64, status u16, detail
 *   DONE       requester → source   parent u64
 *   QP_GONE    source → requester   qp u16, qpn u32, detail
 *   REPAIR     requester → source   qp u16, new qpn u32, gid hi u64, gid lo u64, lid u16
 *   REPAIRED   source → requester   qp u16, status u16, qpn u32, gid hi u64, gid lo u64, lid u16
 *                                   | detail
 * </pre>
 *
 * <p>REPAIR replaces one QP of the array after it failed and was destroyed on the requester: the
 * source retires its own QP of that index (to ERR, flushed, destroyed, its windows released), makes
 * a fresh one connected to the requester's new QP, and answers with its number. A rail pair's
 * half-open trial (C13) runs on a repaired QP. Each side names its rail's address as it is now (the
 * GID and LID of its published route), and the other connects to that and keeps it for that rail:
 * so a rail whose monitor re-chose its GID (a paused port that recovered on another GID) is reached
 * at its new address by every QP repaired after it, without a new RAILS exchange. A source whose
 * rail is paused refuses a REPAIR on it (UNAVAILABLE).
 *
 * <p>A grant is the source's answer to one slice: a fresh type-2 memory window bound to exactly the
 * requested range and direction on the source QP connected to the requester's QP {@code qp}. After
 * the payload WRs a lane pass posted on a QP, the requester posts one fenced completion SEND on
 * that QP carrying the ids of those slices (1..{@link #MAX_COMPLETION_IDS}, u64 each, not inline:
 * from the lane's registered slab); the source releases each named window (deallocates it, returns
 * its loan) when the SEND lands in one of the receives it keeps posted on that QP (each {@link
 * #COMPLETION_RECEIVE_BYTES} long), posts that receive again, and then answers an ACK per slice:
 * the slice succeeds on the requester only once its payload and completion SEND completed and its
 * ACK came (the source's receipt). Strings are modified UTF-8 of at most {@link #MAX_DETAIL} bytes.
 *
 * <p>A task's slices are reserved as a whole before any of them asks its grant: RESERVE names the
 * parent task's whole range, direction and slice count, and the source checks it (epoch, live
 * registration, range, direction: C2, C3) and charges it against {@code rdma.maxGrants} (one per
 * parent) and {@code rdma.maxDirectBytes} (its length) all at once, with one loan on the
 * registration; a refused reservation refuses every GRANT_REQ naming it, with its reason, so no
 * slice of that parent moves a byte. Each GRANT_REQ names its parent and must lie inside its range
 * and direction. Each released window gives its length back; once every declared slice's window was
 * released the parent's slot and the rest of its bytes go back. DONE says the requester has ended
 * every slice of the parent: the source ends the reservation (returns its loan, and what it still
 * holds) once no window of it is open, and keeps it for good when one could not be released. The
 * requester holds at most its own {@code rdma.maxGrants} parents reserved at once (RESERVE to
 * DONE), and at most the source's published number at that source ({@link Limits}); a task beyond
 * either waits for an earlier parent's DONE before its RESERVE is written.
 */
final class RdmaWire {
  static final byte RAILS = 1;
  static final byte CONNECT = 2;
  static final byte CONNECTED = 3;
  static final byte GRANT_REQ = 4;
  static final byte GRANT = 5;
  static final byte REPAIR = 7;
  static final byte REPAIRED = 8;
  static final byte RESERVE = 9;
  static final byte ACK = 10;
  static final byte DONE = 11;
  static final byte QP_GONE = 12;

  /** Most slices one RESERVE may declare (C15 plans at most 64). */
  static final int MAX_SLICES = 1024;

  /** Rails a peer may publish, and QPs an endpoint may ask for. */
  static final int MAX_ENTRIES = 1024;

  static final int MAX_DETAIL = 1024;

  /** Most slice ids one completion SEND carries (the slices of one lane pass on one QP). */
  static final int MAX_COMPLETION_IDS = 32;

  /** The length of each receive a source QP keeps posted: room for the most ids a SEND carries. */
  static final int COMPLETION_RECEIVE_BYTES = MAX_COMPLETION_IDS * 8;

  /** Longest device name a RAILS entry may carry, in bytes of modified UTF-8. */
  static final int MAX_DEVICE_NAME_BYTES = 64;

  /** Largest NUMA node a RAILS entry may name ({@code -1}: unknown). */
  static final int MAX_NUMA_NODE = 1023;

  private RdmaWire() {}

  /** A control message broke the protocol: the connection must be closed. */
  static final class Violation extends IOException {
    Violation(String message) {
      super(message);
    }
  }

  /**
   * A rail as its owner publishes it (Describe's rails): its address (GID, LID), active MTU ({@code
   * IBV_MTU_*} 1..5), port (1..255), link rate in Mb/s (from the port's active width and speed; 400
   * Gb/s when the port reports none), NUMA node (-1 unknown) and device name.
   */
  record Rail(
      long gidHi,
      long gidLo,
      int lid,
      int mtu,
      int port,
      long linkMbps,
      int numaNode,
      String device) {}

  /** Most parents a peer may say it holds reserved at once (a sanity bound on {@link Limits}). */
  static final int MAX_PARENTS = 1 << 20;

  /**
   * What a peer admits as a source, published after its rails (the reference's per-peer transfer
   * limit in Describe): the largest task it reserves ({@code rdma.maxDirectBytes}: a longer one is
   * refused whole at RESERVE) and the parents it holds reserved at once over all its requesters
   * ({@code rdma.maxGrants}). A requester refuses a longer task itself, never sending it, and keeps
   * at most that many parents reserved at that peer, so a smaller source is not asked for what it
   * must refuse.
   */
  record Limits(long maxTaskBytes, int maxParents) {}

  /** A peer's rails and its limits, as one RAILS message carries them. */
  record Describe(List<Rail> rails, Limits limits) {}

  /** One QP of an endpoint: on which local rail, towards which remote rail, and its number. */
  record QpEnd(int localRail, int remoteRail, int qpn) {}

  record GrantRequest(
      long id, long parent, int qp, int op, long regionId, long offset, long length) {}

  record Reserve(long parent, int op, long regionId, long offset, long length, int slices) {}

  record Ack(long id, int status, String detail) {}

  /**
   * The source retired its QP {@code qpn} at index {@code qp} for a reason of its own (its route
   * fenced, an error on it), not at a REPAIR: the requester's QP connected to it can carry nothing
   * more and is repaired.
   */
  record QpGone(int qp, int qpn, String detail) {}

  record Grant(long id, int status, long addr, int rkey, String detail) {}

  static void writeRails(DataOutputStream out, List<Rail> rails, Limits limits) throws IOException {
    out.writeByte(RAILS);
    out.writeShort(rails.size());
    for (Rail r : rails) {
      out.writeLong(r.gidHi());
      out.writeLong(r.gidLo());
      out.writeShort(r.lid());
      out.writeByte(r.mtu());
      out.writeByte(r.port());
      out.writeInt((int) r.linkMbps());
      out.writeShort(r.numaNode());
      out.writeUTF(r.device());
    }
    out.writeLong(limits.maxTaskBytes());
    out.writeInt(limits.maxParents());
    out.flush();
  }

  /**
   * The peer's rails and limits.
   *
   * @throws Violation for a count outside 1..{@value #MAX_ENTRIES}, or an entry whose MTU is not
   *     1..5, port 0, link rate 0, NUMA node outside -1..{@value #MAX_NUMA_NODE}, or device name
   *     not 1..{@value #MAX_DEVICE_NAME_BYTES} bytes, naming the entry and the field; or a largest
   *     task below 1 B or a parent count outside 1..{@value #MAX_PARENTS}, naming the limit
   */
  static Describe readRails(DataInputStream in) throws IOException {
    expect(in, RAILS);
    int n = count(in);
    List<Rail> rails = new ArrayList<>(n);
    for (int i = 0; i < n; i++) {
      long gidHi = in.readLong();
      long gidLo = in.readLong();
      int lid = in.readUnsignedShort();
      int mtu = in.readUnsignedByte();
      int port = in.readUnsignedByte();
      long linkMbps = Integer.toUnsignedLong(in.readInt());
      int numa = in.readShort();
      int nameBytes = in.readUnsignedShort();
      String entry = "RAILS entry " + i + " of " + n;
      if (mtu < 1 || mtu > 5) {
        throw new Violation(entry + ": MTU code " + mtu + " is not 1..5 (256..4096 bytes)");
      }
      if (port < 1) {
        throw new Violation(entry + ": port 0 (ports are numbered from 1)");
      }
      if (linkMbps == 0) {
        throw new Violation(entry + ": a link rate of 0 Mb/s");
      }
      if (numa < -1 || numa > MAX_NUMA_NODE) {
        throw new Violation(
            entry + ": NUMA node " + numa + " is not -1 (unknown) .." + MAX_NUMA_NODE);
      }
      if (nameBytes < 1 || nameBytes > MAX_DEVICE_NAME_BYTES) {
        throw new Violation(
            entry
                + ": a device name of "
                + nameBytes
                + " bytes (1.."
                + MAX_DEVICE_NAME_BYTES
                + ")");
      }
      byte[] name = new byte[2 + nameBytes];
      name[0] = (byte) (nameBytes >>> 8);
      name[1] = (byte) nameBytes;
      in.readFully(name, 2, nameBytes);
      String device;
      try {
        device = new DataInputStream(new java.io.ByteArrayInputStream(name)).readUTF();
      } catch (java.io.UTFDataFormatException e) {
        throw new Violation(entry + ": the device name is not modified UTF-8");
      }
      rails.add(new Rail(gidHi, gidLo, lid, mtu, port, linkMbps, numa, device));
    }
    long maxTaskBytes = in.readLong();
    long maxParents = Integer.toUnsignedLong(in.readInt());
    if (maxTaskBytes < 1) {
      throw new Violation("RAILS limits: a largest task of " + maxTaskBytes + " B (at least 1)");
    }
    if (maxParents < 1 || maxParents > MAX_PARENTS) {
      throw new Violation(
          "RAILS limits: " + maxParents + " parents reserved at once (1.." + MAX_PARENTS + ")");
    }
    return new Describe(rails, new Limits(maxTaskBytes, (int) maxParents));
  }

  static void writeConnect(DataOutputStream out, List<QpEnd> qps) throws IOException {
    out.writeByte(CONNECT);
    out.writeShort(qps.size());
    for (QpEnd q : qps) {
      out.writeShort(q.localRail());
      out.writeShort(q.remoteRail());
      out.writeInt(q.qpn());
    }
    out.flush();
  }

  static List<QpEnd> readConnect(DataInputStream in) throws IOException {
    expect(in, CONNECT);
    int n = count(in);
    List<QpEnd> qps = new ArrayList<>(n);
    for (int i = 0; i < n; i++) {
      qps.add(new QpEnd(in.readUnsignedShort(), in.readUnsignedShort(), in.readInt()));
    }
    return qps;
  }

  /** The source's QP numbers, one per requested QP in order; or a refusal. */
  static void writeConnected(DataOutputStream out, int[] qpns, ErrorKind refusal, String detail)
      throws IOException {
    out.writeByte(CONNECTED);
    out.writeShort(refusal == null ? 0 : refusal.code());
    if (refusal == null) {
      out.writeShort(qpns.length);
      for (int q : qpns) {
        out.writeInt(q);
      }
    } else {
      out.writeUTF(clip(detail));
    }
    out.flush();
  }

  /**
   * The source's QP numbers.
   *
   * @throws io.orbite.engine.TransferException the source's refusal, as it named it
   */
  static int[] readConnected(DataInputStream in, int expected) throws IOException {
    expect(in, CONNECTED);
    int status = in.readUnsignedShort();
    if (status != 0) {
      ErrorKind kind = ErrorKind.fromCode(status);
      throw new io.orbite.engine.TransferException(
          kind == null ? ErrorKind.PROTOCOL : kind, "the source refused the QPs: " + utf(in));
    }
    int n = count(in);
    if (n != expected) {
      throw new Violation("CONNECTED names " + n + " QPs, " + expected + " were asked for");
    }
    int[] qpns = new int[n];
    for (int i = 0; i < n; i++) {
      qpns[i] = in.readInt();
    }
    return qpns;
  }

  static void writeGrantRequest(DataOutputStream out, GrantRequest g) throws IOException {
    out.writeByte(GRANT_REQ);
    out.writeLong(g.id());
    out.writeLong(g.parent());
    out.writeShort(g.qp());
    out.writeByte(g.op());
    out.writeLong(g.regionId());
    out.writeLong(g.offset());
    out.writeLong(g.length());
  }

  static void writeReserve(DataOutputStream out, Reserve r) throws IOException {
    out.writeByte(RESERVE);
    out.writeLong(r.parent());
    out.writeByte(r.op());
    out.writeLong(r.regionId());
    out.writeLong(r.offset());
    out.writeLong(r.length());
    out.writeShort(r.slices());
  }

  static Reserve readReserveBody(DataInputStream in) throws IOException {
    return new Reserve(
        in.readLong(),
        in.readUnsignedByte(),
        in.readLong(),
        in.readLong(),
        in.readLong(),
        in.readUnsignedShort());
  }

  static void writeAck(DataOutputStream out, Ack a) throws IOException {
    out.writeByte(ACK);
    out.writeLong(a.id());
    out.writeShort(a.status());
    out.writeUTF(clip(a.detail()));
  }

  static Ack readAckBody(DataInputStream in) throws IOException {
    return new Ack(in.readLong(), in.readUnsignedShort(), utf(in));
  }

  static void writeQpGone(DataOutputStream out, QpGone g) throws IOException {
    out.writeByte(QP_GONE);
    out.writeShort(g.qp());
    out.writeInt(g.qpn());
    out.writeUTF(clip(g.detail()));
  }

  static QpGone readQpGoneBody(DataInputStream in) throws IOException {
    return new QpGone(in.readUnsignedShort(), in.readInt(), utf(in));
  }

  static void writeDone(DataOutputStream out, long parent) throws IOException {
    out.writeByte(DONE);
    out.writeLong(parent);
  }

  static long readDoneBody(DataInputStream in) throws IOException {
    return in.readLong();
  }

  static void writeGrant(DataOutputStream out, Grant g) throws IOException {
    out.writeByte(GRANT);
    out.writeLong(g.id());
    out.writeShort(g.status());
    out.writeLong(g.addr());
    out.writeInt(g.rkey());
    out.writeUTF(clip(g.detail()));
  }

  /** Where a rail is reached now: its route's GID, and its LID (InfiniBand). */
  record Address(long gidHi, long gidLo, int lid) {
    static Address of(Rail r) {
      return new Address(r.gidHi(), r.gidLo(), r.lid());
    }

    /** {@code r} reached at this address (its MTU, port, link rate, NUMA node and name kept). */
    Rail applyTo(Rail r) {
      return new Rail(gidHi, gidLo, lid, r.mtu(), r.port(), r.linkMbps(), r.numaNode(), r.device());
    }
  }

  private static void writeAddress(DataOutputStream out, Address a) throws IOException {
    out.writeLong(a.gidHi());
    out.writeLong(a.gidLo());
    out.writeShort(a.lid());
  }

  private static Address readAddress(DataInputStream in) throws IOException {
    return new Address(in.readLong(), in.readLong(), in.readUnsignedShort());
  }

  static void writeRepair(DataOutputStream out, int qp, int qpn, Address at) throws IOException {
    out.writeByte(REPAIR);
    out.writeShort(qp);
    out.writeInt(qpn);
    writeAddress(out, at);
  }

  record Repair(int qp, int qpn, Address at) {}

  static Repair readRepairBody(DataInputStream in) throws IOException {
    return new Repair(in.readUnsignedShort(), in.readInt(), readAddress(in));
  }

  static void writeRepaired(
      DataOutputStream out, int qp, int status, int qpn, Address at, String detail)
      throws IOException {
    out.writeByte(REPAIRED);
    out.writeShort(qp);
    out.writeShort(status);
    if (status == 0) {
      out.writeInt(qpn);
      writeAddress(out, at);
    } else {
      out.writeUTF(clip(detail));
    }
  }

  record Repaired(int qp, int status, int qpn, Address at, String detail) {}

  static Repaired readRepairedBody(DataInputStream in) throws IOException {
    int qp = in.readUnsignedShort();
    int status = in.readUnsignedShort();
    if (status == 0) {
      int qpn = in.readInt();
      return new Repaired(qp, 0, qpn, readAddress(in), "");
    }
    return new Repaired(qp, status, 0, null, utf(in));
  }

  /** The type of the next message, or -1 at the end of the stream. */
  static int nextType(DataInputStream in) throws IOException {
    return in.read();
  }

  static GrantRequest readGrantRequestBody(DataInputStream in) throws IOException {
    return new GrantRequest(
        in.readLong(),
        in.readLong(),
        in.readUnsignedShort(),
        in.readUnsignedByte(),
        in.readLong(),
        in.readLong(),
        in.readLong());
  }

  static Grant readGrantBody(DataInputStream in) throws IOException {
    return new Grant(in.readLong(), in.readUnsignedShort(), in.readLong(), in.readInt(), utf(in));
  }

  private static void expect(DataInputStream in, byte type) throws IOException {
    int t = in.read();
    if (t < 0) {
      throw new java.io.EOFException("the connection ended before message type " + type);
    }
    if (t != type) {
      throw new Violation("expected RDMA control message " + type + ", got " + t);
    }
  }

  private static int count(DataInputStream in) throws IOException {
    int n = in.readUnsignedShort();
    if (n < 1 || n > MAX_ENTRIES) {
      throw new Violation(
          "an RDMA control message lists " + n + " entries (1.." + MAX_ENTRIES + ")");
    }
    return n;
  }

  private static String utf(DataInputStream in) throws IOException {
    return in.readUTF();
  }

  private static String clip(String s) {
    String t = s == null ? "" : s;
    return t.length() > MAX_DETAIL / 3 ? t.substring(0, MAX_DETAIL / 3) : t;
  }
}
