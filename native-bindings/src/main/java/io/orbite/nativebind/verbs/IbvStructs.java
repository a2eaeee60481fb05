package io.orbite.nativebind.verbs;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;
import static java.lang.foreign.ValueLayout.JAVA_SHORT;

import io.orbite.nativebind.verbs.Verbs.AddressVector;
import io.orbite.nativebind.verbs.Verbs.AsyncEvent;
import io.orbite.nativebind.verbs.Verbs.DeviceAttr;
import io.orbite.nativebind.verbs.Verbs.Gid;
import io.orbite.nativebind.verbs.Verbs.Mr;
import io.orbite.nativebind.verbs.Verbs.Mw;
import io.orbite.nativebind.verbs.Verbs.MwBind;
import io.orbite.nativebind.verbs.Verbs.Pd;
import io.orbite.nativebind.verbs.Verbs.PortAttr;
import io.orbite.nativebind.verbs.Verbs.PostResult;
import io.orbite.nativebind.verbs.Verbs.QpAttr;
import io.orbite.nativebind.verbs.Verbs.QpInitAttr;
import io.orbite.nativebind.verbs.Verbs.RecvWr;
import io.orbite.nativebind.verbs.Verbs.SendWr;
import io.orbite.nativebind.verbs.Verbs.Sge;
import io.orbite.nativebind.verbs.Verbs.Wc;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.charset.StandardCharsets;
import java.util.List;

/**
 * The libibverbs structs {@link NativeVerbs} passes and gets back, to and from the {@link Verbs}
 * records, at the offsets of {@link IbvLayout}: attributes read after a query, attributes and work
 * request lists written before a call, completions and async events read after one. Pure: no native
 * call is made here.
 */
final class IbvStructs {
  private IbvStructs() {}

  /** The native object at {@code address}, as the address argument of a downcall. */
  static MemorySegment at(long address) {
    return MemorySegment.ofAddress(address);
  }

  /** The first {@code size} bytes of the native struct at {@code address}. */
  static MemorySegment struct(long address, long size) {
    return MemorySegment.ofAddress(address).reinterpret(size);
  }

  /** A {@code struct ibv_device_attr} that {@code ibv_query_device} filled. */
  static DeviceAttr readDeviceAttr(MemorySegment a) {
    return new DeviceAttr(
        a.asSlice(IbvLayout.DEVICE_ATTR_FW_VER, IbvLayout.DEVICE_ATTR_FW_VER_LENGTH)
            .getString(0, StandardCharsets.US_ASCII),
        Long.reverseBytes(a.get(JAVA_LONG, IbvLayout.DEVICE_ATTR_NODE_GUID)),
        a.get(JAVA_LONG, IbvLayout.DEVICE_ATTR_MAX_MR_SIZE),
        a.get(JAVA_INT, IbvLayout.DEVICE_ATTR_VENDOR_ID),
        a.get(JAVA_INT, IbvLayout.DEVICE_ATTR_VENDOR_PART_ID),
        a.get(JAVA_INT, IbvLayout.DEVICE_ATTR_MAX_QP),
        a.get(JAVA_INT, IbvLayout.DEVICE_ATTR_MAX_QP_WR),
        a.get(JAVA_INT, IbvLayout.DEVICE_ATTR_MAX_SGE),
        a.get(JAVA_INT, IbvLayout.DEVICE_ATTR_MAX_CQ),
        a.get(JAVA_INT, IbvLayout.DEVICE_ATTR_MAX_CQE),
        a.get(JAVA_INT, IbvLayout.DEVICE_ATTR_MAX_MR),
        a.get(JAVA_INT, IbvLayout.DEVICE_ATTR_MAX_PD),
        a.get(JAVA_INT, IbvLayout.DEVICE_ATTR_MAX_MW),
        a.get(JAVA_INT, IbvLayout.DEVICE_ATTR_MAX_QP_RD_ATOM),
        Byte.toUnsignedInt(a.get(JAVA_BYTE, IbvLayout.DEVICE_ATTR_PHYS_PORT_CNT)));
  }

  /** A {@code struct ibv_port_attr} that {@code ibv_query_port} filled. */
  static PortAttr readPortAttr(MemorySegment a) {
    return new PortAttr(
        a.get(JAVA_INT, IbvLayout.PORT_ATTR_STATE),
        a.get(JAVA_INT, IbvLayout.PORT_ATTR_MAX_MTU),
        a.get(JAVA_INT, IbvLayout.PORT_ATTR_ACTIVE_MTU),
        a.get(JAVA_INT, IbvLayout.PORT_ATTR_GID_TBL_LEN),
        Short.toUnsignedInt(a.get(JAVA_SHORT, IbvLayout.PORT_ATTR_LID)),
        Byte.toUnsignedInt(a.get(JAVA_BYTE, IbvLayout.PORT_ATTR_ACTIVE_WIDTH)),
        Byte.toUnsignedInt(a.get(JAVA_BYTE, IbvLayout.PORT_ATTR_ACTIVE_SPEED)),
        Byte.toUnsignedInt(a.get(JAVA_BYTE, IbvLayout.PORT_ATTR_LINK_LAYER)));
  }

  /** The {@code struct ibv_mr} at {@code address}, registered on {@code pd} with {@code access}. */
  static Mr readMr(long address, Pd pd, int access) {
    MemorySegment m = struct(address, IbvLayout.MR_RKEY + 4);
    return new Mr(
        address,
        pd,
        m.get(JAVA_LONG, IbvLayout.MR_ADDR),
        m.get(JAVA_LONG, IbvLayout.MR_LENGTH),
        m.get(JAVA_INT, IbvLayout.MR_LKEY),
        m.get(JAVA_INT, IbvLayout.MR_RKEY),
        access);
  }

  /** The {@code struct ibv_mw} at {@code address}, allocated on {@code pd}. */
  static Mw readMw(long address, Pd pd) {
    MemorySegment m = struct(address, IbvLayout.MW_TYPE + 4);
    return new Mw(
        address, pd, m.get(JAVA_INT, IbvLayout.MW_TYPE), m.get(JAVA_INT, IbvLayout.MW_RKEY));
  }

  /** Writes a zeroed {@code struct ibv_qp_init_attr} for an RC QP. */
  static void writeQpInitAttr(MemorySegment a, QpInitAttr attr) {
    a.set(ADDRESS, IbvLayout.QP_INIT_ATTR_SEND_CQ, at(attr.sendCq().handle()));
    a.set(ADDRESS, IbvLayout.QP_INIT_ATTR_RECV_CQ, at(attr.recvCq().handle()));
    long cap = IbvLayout.QP_INIT_ATTR_CAP;
    a.set(JAVA_INT, cap, attr.maxSendWr());
    a.set(JAVA_INT, cap + 4, attr.maxRecvWr());
    a.set(JAVA_INT, cap + 8, attr.maxSendSge());
    a.set(JAVA_INT, cap + 12, attr.maxRecvSge());
    a.set(JAVA_INT, cap + 16, attr.maxInlineData());
    a.set(JAVA_INT, IbvLayout.QP_INIT_ATTR_QP_TYPE, Ibv.QPT_RC);
    a.set(JAVA_INT, IbvLayout.QP_INIT_ATTR_SQ_SIG_ALL, attr.sqSigAll() ? 1 : 0);
  }

  /**
   * Writes a zeroed {@code struct ibv_qp_attr} for {@code ibv_modify_qp}; the address vector's GRH
   * only when its destination GID is set.
   */
  static void writeQpAttr(MemorySegment a, QpAttr attr) {
    a.set(JAVA_INT, IbvLayout.QP_ATTR_QP_STATE, attr.qpState());
    a.set(JAVA_INT, IbvLayout.QP_ATTR_PATH_MTU, attr.pathMtu());
    a.set(JAVA_INT, IbvLayout.QP_ATTR_RQ_PSN, attr.rqPsn());
    a.set(JAVA_INT, IbvLayout.QP_ATTR_SQ_PSN, attr.sqPsn());
    a.set(JAVA_INT, IbvLayout.QP_ATTR_DEST_QP_NUM, attr.destQpNum());
    a.set(JAVA_INT, IbvLayout.QP_ATTR_QP_ACCESS_FLAGS, attr.qpAccessFlags());
    a.set(JAVA_SHORT, IbvLayout.QP_ATTR_PKEY_INDEX, (short) attr.pkeyIndex());
    a.set(JAVA_BYTE, IbvLayout.QP_ATTR_MAX_RD_ATOMIC, (byte) attr.maxRdAtomic());
    a.set(JAVA_BYTE, IbvLayout.QP_ATTR_MAX_DEST_RD_ATOMIC, (byte) attr.maxDestRdAtomic());
    a.set(JAVA_BYTE, IbvLayout.QP_ATTR_MIN_RNR_TIMER, (byte) attr.minRnrTimer());
    a.set(JAVA_BYTE, IbvLayout.QP_ATTR_PORT_NUM, (byte) attr.portNum());
    a.set(JAVA_BYTE, IbvLayout.QP_ATTR_TIMEOUT, (byte) attr.timeout());
    a.set(JAVA_BYTE, IbvLayout.QP_ATTR_RETRY_CNT, (byte) attr.retryCnt());
    a.set(JAVA_BYTE, IbvLayout.QP_ATTR_RNR_RETRY, (byte) attr.rnrRetry());
    AddressVector av = attr.av();
    if (av != null) {
      long ah = IbvLayout.QP_ATTR_AH_ATTR;
      boolean global = !av.dgid().equals(Gid.ZERO);
      if (global) {
        MemorySegment.copy(
            MemorySegment.ofArray(av.dgid().bytes()), 0, a, ah + IbvLayout.GRH_DGID, 16);
        a.set(JAVA_BYTE, ah + IbvLayout.GRH_SGID_INDEX, (byte) av.sgidIndex());
        a.set(JAVA_BYTE, ah + IbvLayout.GRH_HOP_LIMIT, (byte) av.hopLimit());
      }
      a.set(JAVA_SHORT, ah + IbvLayout.AH_ATTR_DLID, (short) av.dlid());
      a.set(JAVA_BYTE, ah + IbvLayout.AH_ATTR_SL, (byte) av.sl());
      a.set(JAVA_BYTE, ah + IbvLayout.AH_ATTR_IS_GLOBAL, (byte) (global ? 1 : 0));
      a.set(JAVA_BYTE, ah + IbvLayout.AH_ATTR_PORT_NUM, (byte) av.portNum());
    }
  }

  /** A {@code struct ibv_qp_attr} that {@code ibv_query_qp} filled. */
  static QpAttr readQpAttr(MemorySegment a) {
    long ah = IbvLayout.QP_ATTR_AH_ATTR;
    AddressVector av =
        new AddressVector(
            Short.toUnsignedInt(a.get(JAVA_SHORT, ah + IbvLayout.AH_ATTR_DLID)),
            Byte.toUnsignedInt(a.get(JAVA_BYTE, ah + IbvLayout.AH_ATTR_SL)),
            Byte.toUnsignedInt(a.get(JAVA_BYTE, ah + IbvLayout.AH_ATTR_PORT_NUM)),
            Gid.of(a.asSlice(ah + IbvLayout.GRH_DGID, 16).toArray(JAVA_BYTE)),
            Byte.toUnsignedInt(a.get(JAVA_BYTE, ah + IbvLayout.GRH_SGID_INDEX)),
            Byte.toUnsignedInt(a.get(JAVA_BYTE, ah + IbvLayout.GRH_HOP_LIMIT)));
    return new QpAttr(
        a.get(JAVA_INT, IbvLayout.QP_ATTR_QP_STATE),
        a.get(JAVA_INT, IbvLayout.QP_ATTR_PATH_MTU),
        a.get(JAVA_INT, IbvLayout.QP_ATTR_QP_ACCESS_FLAGS),
        Short.toUnsignedInt(a.get(JAVA_SHORT, IbvLayout.QP_ATTR_PKEY_INDEX)),
        Byte.toUnsignedInt(a.get(JAVA_BYTE, IbvLayout.QP_ATTR_PORT_NUM)),
        a.get(JAVA_INT, IbvLayout.QP_ATTR_DEST_QP_NUM),
        a.get(JAVA_INT, IbvLayout.QP_ATTR_RQ_PSN),
        a.get(JAVA_INT, IbvLayout.QP_ATTR_SQ_PSN),
        Byte.toUnsignedInt(a.get(JAVA_BYTE, IbvLayout.QP_ATTR_MAX_RD_ATOMIC)),
        Byte.toUnsignedInt(a.get(JAVA_BYTE, IbvLayout.QP_ATTR_MAX_DEST_RD_ATOMIC)),
        Byte.toUnsignedInt(a.get(JAVA_BYTE, IbvLayout.QP_ATTR_MIN_RNR_TIMER)),
        Byte.toUnsignedInt(a.get(JAVA_BYTE, IbvLayout.QP_ATTR_TIMEOUT)),
        Byte.toUnsignedInt(a.get(JAVA_BYTE, IbvLayout.QP_ATTR_RETRY_CNT)),
        Byte.toUnsignedInt(a.get(JAVA_BYTE, IbvLayout.QP_ATTR_RNR_RETRY)),
        av);
  }

  /**
   * The {@code struct ibv_send_wr} list of {@code wrs} (non-empty), each linked to the next, with
   * its SGE arrays, in {@code arena}.
   */
  static MemorySegment sendWrs(Arena arena, List<SendWr> wrs) {
    int n = wrs.size();
    MemorySegment list = arena.allocate(IbvLayout.SEND_WR_SIZE * n, 8);
    for (int i = 0; i < n; i++) {
      SendWr wr = wrs.get(i);
      long base = IbvLayout.SEND_WR_SIZE * i;
      MemorySegment w = list.asSlice(base, IbvLayout.SEND_WR_SIZE);
      w.set(JAVA_LONG, IbvLayout.SEND_WR_WR_ID, wr.wrId());
      w.set(
          ADDRESS,
          IbvLayout.SEND_WR_NEXT,
          i + 1 < n ? list.asSlice(base + IbvLayout.SEND_WR_SIZE) : MemorySegment.NULL);
      w.set(ADDRESS, IbvLayout.SEND_WR_SG_LIST, sges(arena, wr.sgl()));
      w.set(JAVA_INT, IbvLayout.SEND_WR_NUM_SGE, wr.sgl().size());
      w.set(JAVA_INT, IbvLayout.SEND_WR_OPCODE, wr.opcode());
      w.set(JAVA_INT, IbvLayout.SEND_WR_SEND_FLAGS, wr.sendFlags());
      w.set(JAVA_INT, IbvLayout.SEND_WR_IMM_DATA, wr.immOrInvalidate());
      if (wr.bind() != null) {
        MwBind b = wr.bind();
        w.set(ADDRESS, IbvLayout.SEND_WR_BIND_MW_MW, at(b.mw().handle()));
        w.set(JAVA_INT, IbvLayout.SEND_WR_BIND_MW_RKEY, b.newRkey());
        long info = IbvLayout.SEND_WR_BIND_MW_BIND_INFO;
        w.set(ADDRESS, info + IbvLayout.MW_BIND_INFO_MR, at(b.mr().handle()));
        w.set(JAVA_LONG, info + IbvLayout.MW_BIND_INFO_ADDR, b.addr());
        w.set(JAVA_LONG, info + IbvLayout.MW_BIND_INFO_LENGTH, b.length());
        w.set(JAVA_INT, info + IbvLayout.MW_BIND_INFO_ACCESS, b.access());
      } else {
        w.set(JAVA_LONG, IbvLayout.SEND_WR_RDMA_REMOTE_ADDR, wr.remoteAddr());
        w.set(JAVA_INT, IbvLayout.SEND_WR_RDMA_RKEY, wr.rkey());
      }
    }
    return list;
  }

  /**
   * The {@code struct ibv_recv_wr} list of {@code wrs} (non-empty), each linked to the next, with
   * its SGE arrays, in {@code arena}.
   */
  static MemorySegment recvWrs(Arena arena, List<RecvWr> wrs) {
    int n = wrs.size();
    MemorySegment list = arena.allocate(IbvLayout.RECV_WR_SIZE * n, 8);
    for (int i = 0; i < n; i++) {
      RecvWr wr = wrs.get(i);
      long base = IbvLayout.RECV_WR_SIZE * i;
      list.set(JAVA_LONG, base + IbvLayout.RECV_WR_WR_ID, wr.wrId());
      list.set(
          ADDRESS,
          base + IbvLayout.RECV_WR_NEXT,
          i + 1 < n ? list.asSlice(base + IbvLayout.RECV_WR_SIZE) : MemorySegment.NULL);
      list.set(ADDRESS, base + IbvLayout.RECV_WR_SG_LIST, sges(arena, wr.sgl()));
      list.set(JAVA_INT, base + IbvLayout.RECV_WR_NUM_SGE, wr.sgl().size());
    }
    return list;
  }

  private static MemorySegment sges(Arena arena, List<Sge> sgl) {
    if (sgl.isEmpty()) {
      return MemorySegment.NULL;
    }
    MemorySegment s = arena.allocate(IbvLayout.SGE_SIZE * sgl.size(), 8);
    for (int i = 0; i < sgl.size(); i++) {
      Sge e = sgl.get(i);
      long base = IbvLayout.SGE_SIZE * i;
      s.set(JAVA_LONG, base + IbvLayout.SGE_ADDR, e.addr());
      s.set(JAVA_INT, base + IbvLayout.SGE_LENGTH, e.length());
      s.set(JAVA_INT, base + IbvLayout.SGE_LKEY, e.lkey());
    }
    return s;
  }

  /** The bad_wr pointer back to an index into the list we built. */
  static PostResult posted(int r, MemorySegment bad, MemorySegment list, long size, int n) {
    if (r == 0) {
      return PostResult.ALL;
    }
    long badAddress = bad.get(ADDRESS, 0).address();
    long index = (badAddress - list.address()) / size;
    return new PostResult(
        r < 0 ? -r : r, badAddress == 0 || index < 0 || index >= n ? 0 : (int) index);
  }

  /** One {@code struct ibv_wc} that {@code poll_cq} filled. */
  static Wc readWc(MemorySegment w) {
    return new Wc(
        w.get(JAVA_LONG, IbvLayout.WC_WR_ID),
        w.get(JAVA_INT, IbvLayout.WC_STATUS),
        w.get(JAVA_INT, IbvLayout.WC_OPCODE),
        w.get(JAVA_INT, IbvLayout.WC_VENDOR_ERR),
        w.get(JAVA_INT, IbvLayout.WC_BYTE_LEN),
        w.get(JAVA_INT, IbvLayout.WC_IMM_DATA),
        w.get(JAVA_INT, IbvLayout.WC_QP_NUM),
        w.get(JAVA_INT, IbvLayout.WC_SRC_QP),
        w.get(JAVA_INT, IbvLayout.WC_WC_FLAGS));
  }

  /**
   * A {@code struct ibv_async_event} that {@code ibv_get_async_event} filled: its element is the
   * port number (an int) for a port or GID event, else the object's pointer.
   */
  static AsyncEvent readAsyncEvent(MemorySegment e) {
    int type = e.get(JAVA_INT, IbvLayout.ASYNC_EVENT_TYPE);
    long element =
        type == Ibv.EVENT_PORT_ACTIVE || type == Ibv.EVENT_PORT_ERR || type == Ibv.EVENT_GID_CHANGE
            ? e.get(JAVA_INT, IbvLayout.ASYNC_EVENT_ELEMENT)
            : e.get(JAVA_LONG, IbvLayout.ASYNC_EVENT_ELEMENT);
    return new AsyncEvent(type, element);
  }

  /** Writes the {@code struct ibv_async_event} that {@code ibv_ack_async_event} acknowledges. */
  static void writeAsyncEvent(MemorySegment e, AsyncEvent event) {
    e.set(JAVA_LONG, IbvLayout.ASYNC_EVENT_ELEMENT, event.element());
    e.set(JAVA_INT, IbvLayout.ASYNC_EVENT_TYPE, event.eventType());
  }
}
