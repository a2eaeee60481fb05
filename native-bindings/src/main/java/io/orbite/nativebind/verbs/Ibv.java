package io.orbite.nativebind.verbs;

/**
 * The constants of {@code <infiniband/verbs.h>} that the {@link Verbs} table uses, under the
 * header's own names (without the {@code IBV_} prefix). Checked against the installed header with
 * gcc by the layout test.
 */
public final class Ibv {
  private Ibv() {}

  // enum ibv_access_flags
  public static final int ACCESS_LOCAL_WRITE = 1;
  public static final int ACCESS_REMOTE_WRITE = 1 << 1;
  public static final int ACCESS_REMOTE_READ = 1 << 2;
  public static final int ACCESS_REMOTE_ATOMIC = 1 << 3;
  public static final int ACCESS_MW_BIND = 1 << 4;

  // enum ibv_mw_type
  public static final int MW_TYPE_1 = 1;
  public static final int MW_TYPE_2 = 2;

  // enum ibv_qp_type
  public static final int QPT_RC = 2;

  // enum ibv_qp_state
  public static final int QPS_RESET = 0;
  public static final int QPS_INIT = 1;
  public static final int QPS_RTR = 2;
  public static final int QPS_RTS = 3;
  public static final int QPS_SQD = 4;
  public static final int QPS_SQE = 5;
  public static final int QPS_ERR = 6;

  // enum ibv_qp_attr_mask
  public static final int QP_STATE = 1;
  public static final int QP_ACCESS_FLAGS = 1 << 3;
  public static final int QP_PKEY_INDEX = 1 << 4;
  public static final int QP_PORT = 1 << 5;
  public static final int QP_AV = 1 << 7;
  public static final int QP_PATH_MTU = 1 << 8;
  public static final int QP_TIMEOUT = 1 << 9;
  public static final int QP_RETRY_CNT = 1 << 10;
  public static final int QP_RNR_RETRY = 1 << 11;
  public static final int QP_RQ_PSN = 1 << 12;
  public static final int QP_MAX_QP_RD_ATOMIC = 1 << 13;
  public static final int QP_MIN_RNR_TIMER = 1 << 15;
  public static final int QP_SQ_PSN = 1 << 16;
  public static final int QP_MAX_DEST_RD_ATOMIC = 1 << 17;
  public static final int QP_CAP = 1 << 19;
  public static final int QP_DEST_QPN = 1 << 20;

  /** The attributes an RC QP's move from INIT to RTR sets (the ones the verbs require for it). */
  public static final int RC_RTR_MASK =
      QP_STATE
          | QP_AV
          | QP_PATH_MTU
          | QP_DEST_QPN
          | QP_RQ_PSN
          | QP_MAX_DEST_RD_ATOMIC
          | QP_MIN_RNR_TIMER;

  /** The attributes an RC QP's move from RTR to RTS sets (the ones the verbs require for it). */
  public static final int RC_RTS_MASK =
      QP_STATE | QP_TIMEOUT | QP_RETRY_CNT | QP_RNR_RETRY | QP_SQ_PSN | QP_MAX_QP_RD_ATOMIC;

  // enum ibv_wr_opcode
  public static final int WR_RDMA_WRITE = 0;
  public static final int WR_RDMA_WRITE_WITH_IMM = 1;
  public static final int WR_SEND = 2;
  public static final int WR_SEND_WITH_IMM = 3;
  public static final int WR_RDMA_READ = 4;
  public static final int WR_LOCAL_INV = 7;
  public static final int WR_BIND_MW = 8;
  public static final int WR_SEND_WITH_INV = 9;

  // enum ibv_send_flags
  public static final int SEND_FENCE = 1;
  public static final int SEND_SIGNALED = 1 << 1;
  public static final int SEND_SOLICITED = 1 << 2;
  public static final int SEND_INLINE = 1 << 3;

  // enum ibv_wc_status
  public static final int WC_SUCCESS = 0;
  public static final int WC_LOC_LEN_ERR = 1;
  public static final int WC_LOC_QP_OP_ERR = 2;
  public static final int WC_LOC_PROT_ERR = 4;
  public static final int WC_WR_FLUSH_ERR = 5;
  public static final int WC_MW_BIND_ERR = 6;
  public static final int WC_BAD_RESP_ERR = 7;
  public static final int WC_LOC_ACCESS_ERR = 8;
  public static final int WC_REM_INV_REQ_ERR = 9;
  public static final int WC_REM_ACCESS_ERR = 10;
  public static final int WC_REM_OP_ERR = 11;
  public static final int WC_RETRY_EXC_ERR = 12;
  public static final int WC_RNR_RETRY_EXC_ERR = 13;
  public static final int WC_FATAL_ERR = 19;
  public static final int WC_GENERAL_ERR = 21;

  // enum ibv_wc_opcode
  public static final int WC_SEND = 0;
  public static final int WC_RDMA_WRITE = 1;
  public static final int WC_RDMA_READ = 2;
  public static final int WC_BIND_MW = 5;
  public static final int WC_LOCAL_INV = 6;
  public static final int WC_RECV = 1 << 7;
  public static final int WC_RECV_RDMA_WITH_IMM = (1 << 7) + 1;

  // enum ibv_wc_flags
  public static final int WC_WITH_IMM = 1 << 1;
  public static final int WC_WITH_INV = 1 << 3;

  // enum ibv_port_state
  public static final int PORT_DOWN = 1;
  public static final int PORT_INIT = 2;
  public static final int PORT_ACTIVE = 4;

  // enum ibv_mtu
  public static final int MTU_1024 = 3;
  public static final int MTU_4096 = 5;

  // IBV_LINK_LAYER_*
  public static final int LINK_LAYER_INFINIBAND = 1;
  public static final int LINK_LAYER_ETHERNET = 2;

  // enum ibv_event_type
  public static final int EVENT_CQ_ERR = 0;
  public static final int EVENT_QP_FATAL = 1;
  public static final int EVENT_QP_REQ_ERR = 2;
  public static final int EVENT_QP_ACCESS_ERR = 3;
  public static final int EVENT_PORT_ACTIVE = 9;
  public static final int EVENT_PORT_ERR = 10;
  public static final int EVENT_DEVICE_FATAL = 8;
  public static final int EVENT_GID_CHANGE = 18;

  /** The rkey a type-2 window gets at its next bind: the key byte (low 8 bits) advanced. */
  public static int incRkey(int rkey) {
    return (rkey & 0xffffff00) | ((rkey + 1) & 0xff);
  }
}
