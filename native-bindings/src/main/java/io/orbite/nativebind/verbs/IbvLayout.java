package io.orbite.nativebind.verbs;

/**
 * Sizes and field offsets of the {@code <infiniband/verbs.h>} structs {@link NativeVerbs} reads and
 * writes (Linux x86_64, rdma-core), including the offsets in {@code struct ibv_context_ops} of the
 * entries the header's static inline functions call. Each is checked against the installed header
 * with gcc by {@code IbvLayoutTest}.
 */
final class IbvLayout {
  private IbvLayout() {}

  // struct ibv_sge
  static final long SGE_SIZE = 16;
  static final long SGE_ADDR = 0;
  static final long SGE_LENGTH = 8;
  static final long SGE_LKEY = 12;

  // struct ibv_send_wr (its rdma and bind_mw unions)
  static final long SEND_WR_SIZE = 128;
  static final long SEND_WR_WR_ID = 0;
  static final long SEND_WR_NEXT = 8;
  static final long SEND_WR_SG_LIST = 16;
  static final long SEND_WR_NUM_SGE = 24;
  static final long SEND_WR_OPCODE = 28;
  static final long SEND_WR_SEND_FLAGS = 32;
  static final long SEND_WR_IMM_DATA = 36; // union with invalidate_rkey
  static final long SEND_WR_RDMA_REMOTE_ADDR = 40;
  static final long SEND_WR_RDMA_RKEY = 48;
  static final long SEND_WR_BIND_MW_MW = 80;
  static final long SEND_WR_BIND_MW_RKEY = 88;
  static final long SEND_WR_BIND_MW_BIND_INFO = 96;

  // struct ibv_mw_bind_info
  static final long MW_BIND_INFO_SIZE = 32;
  static final long MW_BIND_INFO_MR = 0;
  static final long MW_BIND_INFO_ADDR = 8;
  static final long MW_BIND_INFO_LENGTH = 16;
  static final long MW_BIND_INFO_ACCESS = 24;

  // struct ibv_recv_wr
  static final long RECV_WR_SIZE = 32;
  static final long RECV_WR_WR_ID = 0;
  static final long RECV_WR_NEXT = 8;
  static final long RECV_WR_SG_LIST = 16;
  static final long RECV_WR_NUM_SGE = 24;

  // struct ibv_wc
  static final long WC_SIZE = 48;
  static final long WC_WR_ID = 0;
  static final long WC_STATUS = 8;
  static final long WC_OPCODE = 12;
  static final long WC_VENDOR_ERR = 16;
  static final long WC_BYTE_LEN = 20;
  static final long WC_IMM_DATA = 24; // union with invalidated_rkey
  static final long WC_QP_NUM = 28;
  static final long WC_SRC_QP = 32;
  static final long WC_WC_FLAGS = 36;

  // struct ibv_qp_init_attr (struct ibv_qp_cap inside)
  static final long QP_INIT_ATTR_SIZE = 64;
  static final long QP_INIT_ATTR_SEND_CQ = 8;
  static final long QP_INIT_ATTR_RECV_CQ = 16;
  static final long QP_INIT_ATTR_CAP = 32;
  static final long QP_INIT_ATTR_QP_TYPE = 52;
  static final long QP_INIT_ATTR_SQ_SIG_ALL = 56;
  static final long QP_CAP_SIZE =
      20; // max_send_wr, max_recv_wr, max_send_sge, max_recv_sge, inline

  // struct ibv_qp_attr (struct ibv_ah_attr and its struct ibv_global_route inside)
  static final long QP_ATTR_SIZE = 144;
  static final long QP_ATTR_QP_STATE = 0;
  static final long QP_ATTR_PATH_MTU = 8;
  static final long QP_ATTR_RQ_PSN = 20;
  static final long QP_ATTR_SQ_PSN = 24;
  static final long QP_ATTR_DEST_QP_NUM = 28;
  static final long QP_ATTR_QP_ACCESS_FLAGS = 32;
  static final long QP_ATTR_CAP = 36;
  static final long QP_ATTR_AH_ATTR = 56;
  static final long QP_ATTR_PKEY_INDEX = 120;
  static final long QP_ATTR_MAX_RD_ATOMIC = 126;
  static final long QP_ATTR_MAX_DEST_RD_ATOMIC = 127;
  static final long QP_ATTR_MIN_RNR_TIMER = 128;
  static final long QP_ATTR_PORT_NUM = 129;
  static final long QP_ATTR_TIMEOUT = 130;
  static final long QP_ATTR_RETRY_CNT = 131;
  static final long QP_ATTR_RNR_RETRY = 132;
  static final long AH_ATTR_SIZE = 32;
  static final long AH_ATTR_GRH = 0;
  static final long AH_ATTR_DLID = 24;
  static final long AH_ATTR_SL = 26;
  static final long AH_ATTR_IS_GLOBAL = 29;
  static final long AH_ATTR_PORT_NUM = 30;
  static final long GRH_DGID = 0;
  static final long GRH_FLOW_LABEL = 16;
  static final long GRH_SGID_INDEX = 20;
  static final long GRH_HOP_LIMIT = 21;

  // struct ibv_port_attr
  static final long PORT_ATTR_SIZE = 52;
  static final long PORT_ATTR_STATE = 0;
  static final long PORT_ATTR_MAX_MTU = 4;
  static final long PORT_ATTR_ACTIVE_MTU = 8;
  static final long PORT_ATTR_GID_TBL_LEN = 12;
  static final long PORT_ATTR_LID = 34;
  static final long PORT_ATTR_ACTIVE_WIDTH = 43;
  static final long PORT_ATTR_ACTIVE_SPEED = 44;
  static final long PORT_ATTR_LINK_LAYER = 46;

  // struct ibv_device_attr
  static final long DEVICE_ATTR_SIZE = 232;
  static final long DEVICE_ATTR_FW_VER = 0;
  static final long DEVICE_ATTR_FW_VER_LENGTH = 64;
  static final long DEVICE_ATTR_NODE_GUID = 64;
  static final long DEVICE_ATTR_MAX_MR_SIZE = 80;
  static final long DEVICE_ATTR_VENDOR_ID = 96;
  static final long DEVICE_ATTR_VENDOR_PART_ID = 100;
  static final long DEVICE_ATTR_MAX_QP = 108;
  static final long DEVICE_ATTR_MAX_QP_WR = 112;
  static final long DEVICE_ATTR_MAX_SGE = 120;
  static final long DEVICE_ATTR_MAX_CQ = 128;
  static final long DEVICE_ATTR_MAX_CQE = 132;
  static final long DEVICE_ATTR_MAX_MR = 136;
  static final long DEVICE_ATTR_MAX_PD = 140;
  static final long DEVICE_ATTR_MAX_QP_RD_ATOM = 144;
  static final long DEVICE_ATTR_MAX_MW = 176;
  static final long DEVICE_ATTR_PHYS_PORT_CNT = 227;

  // union ibv_gid
  static final long GID_SIZE = 16;

  // struct ibv_async_event
  static final long ASYNC_EVENT_SIZE = 16;
  static final long ASYNC_EVENT_ELEMENT = 0;
  static final long ASYNC_EVENT_TYPE = 8;

  // struct ibv_context and the entries of its struct ibv_context_ops
  static final long CONTEXT_OPS = 8;
  static final long CONTEXT_ASYNC_FD = 268;
  static final long OPS_ALLOC_MW = 56;
  static final long OPS_DEALLOC_MW = 72;
  static final long OPS_POLL_CQ = 88;
  static final long OPS_REQ_NOTIFY_CQ = 96;
  static final long OPS_POST_SEND = 200;
  static final long OPS_POST_RECV = 208;

  // The objects' first fields and the ones read back after a create
  static final long OBJECT_CONTEXT = 0; // ibv_pd, ibv_mr, ibv_mw, ibv_cq, ibv_qp, ibv_comp_channel
  static final long MR_ADDR = 16;
  static final long MR_LENGTH = 24;
  static final long MR_LKEY = 36;
  static final long MR_RKEY = 40;
  static final long MW_RKEY = 16;
  static final long MW_TYPE = 24;
  static final long COMP_CHANNEL_FD = 8;
  static final long CQ_CQE = 28;
  static final long QP_QP_NUM = 52;
  static final long QP_STATE = 56;
}
