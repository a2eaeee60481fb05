package io.orbite.nativebind.verbs;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.orbite.nativebind.CHeaderProbe;
import io.orbite.nativebind.testkit.Prerequisite;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Every struct size, field offset (the send WR's rdma and bind_mw unions, the context's ops entries
 * the inline-ops bridge calls) and constant {@link NativeVerbs} uses, against the installed {@code
 * <infiniband/verbs.h>} (package libibverbs-dev), compiled with gcc.
 */
class IbvLayoutTest {
  private static final Path HEADER = Path.of("/usr/include/infiniband/verbs.h");

  @Test
  void layoutsAndConstantsMatchTheRdmaCoreHeader(@TempDir Path dir) throws Exception {
    Optional<Path> gcc = CHeaderProbe.gcc();
    Prerequisite.require(gcc.isPresent(), CHeaderProbe.gccAbsentMessage("the verbs structs"));
    Prerequisite.require(
        Files.exists(HEADER),
        HEADER
            + " is missing, so the verbs structs cannot be checked"
            + " (apt-get install libibverbs-dev; .ci/run installs it as root)");
    Map<String, Long> ours = new LinkedHashMap<>();
    Map<String, String> c = new LinkedHashMap<>();
    row(ours, c, "IbvLayout.SGE_SIZE", IbvLayout.SGE_SIZE, "sizeof(struct ibv_sge)");
    row(ours, c, "IbvLayout.SGE_ADDR", IbvLayout.SGE_ADDR, "offsetof(struct ibv_sge, addr)");
    row(ours, c, "IbvLayout.SGE_LENGTH", IbvLayout.SGE_LENGTH, "offsetof(struct ibv_sge, length)");
    row(ours, c, "IbvLayout.SGE_LKEY", IbvLayout.SGE_LKEY, "offsetof(struct ibv_sge, lkey)");
    row(ours, c, "IbvLayout.SEND_WR_SIZE", IbvLayout.SEND_WR_SIZE, "sizeof(struct ibv_send_wr)");
    row(
        ours,
        c,
        "IbvLayout.SEND_WR_WR_ID",
        IbvLayout.SEND_WR_WR_ID,
        "offsetof(struct ibv_send_wr, wr_id)");
    row(
        ours,
        c,
        "IbvLayout.SEND_WR_NEXT",
        IbvLayout.SEND_WR_NEXT,
        "offsetof(struct ibv_send_wr, next)");
    row(
        ours,
        c,
        "IbvLayout.SEND_WR_SG_LIST",
        IbvLayout.SEND_WR_SG_LIST,
        "offsetof(struct ibv_send_wr, sg_list)");
    row(
        ours,
        c,
        "IbvLayout.SEND_WR_NUM_SGE",
        IbvLayout.SEND_WR_NUM_SGE,
        "offsetof(struct ibv_send_wr, num_sge)");
    row(
        ours,
        c,
        "IbvLayout.SEND_WR_OPCODE",
        IbvLayout.SEND_WR_OPCODE,
        "offsetof(struct ibv_send_wr, opcode)");
    row(
        ours,
        c,
        "IbvLayout.SEND_WR_SEND_FLAGS",
        IbvLayout.SEND_WR_SEND_FLAGS,
        "offsetof(struct ibv_send_wr, send_flags)");
    row(
        ours,
        c,
        "IbvLayout.SEND_WR_IMM_DATA",
        IbvLayout.SEND_WR_IMM_DATA,
        "offsetof(struct ibv_send_wr, imm_data)");
    row(
        ours,
        c,
        "IbvLayout.SEND_WR_RDMA_REMOTE_ADDR",
        IbvLayout.SEND_WR_RDMA_REMOTE_ADDR,
        "offsetof(struct ibv_send_wr, wr.rdma.remote_addr)");
    row(
        ours,
        c,
        "IbvLayout.SEND_WR_RDMA_RKEY",
        IbvLayout.SEND_WR_RDMA_RKEY,
        "offsetof(struct ibv_send_wr, wr.rdma.rkey)");
    row(
        ours,
        c,
        "IbvLayout.SEND_WR_BIND_MW_MW",
        IbvLayout.SEND_WR_BIND_MW_MW,
        "offsetof(struct ibv_send_wr, bind_mw.mw)");
    row(
        ours,
        c,
        "IbvLayout.SEND_WR_BIND_MW_RKEY",
        IbvLayout.SEND_WR_BIND_MW_RKEY,
        "offsetof(struct ibv_send_wr, bind_mw.rkey)");
    row(
        ours,
        c,
        "IbvLayout.SEND_WR_BIND_MW_BIND_INFO",
        IbvLayout.SEND_WR_BIND_MW_BIND_INFO,
        "offsetof(struct ibv_send_wr, bind_mw.bind_info)");
    row(
        ours,
        c,
        "IbvLayout.SEND_WR_IMM_DATA",
        IbvLayout.SEND_WR_IMM_DATA,
        "offsetof(struct ibv_send_wr, invalidate_rkey)");
    row(
        ours,
        c,
        "IbvLayout.MW_BIND_INFO_SIZE",
        IbvLayout.MW_BIND_INFO_SIZE,
        "sizeof(struct ibv_mw_bind_info)");
    row(
        ours,
        c,
        "IbvLayout.MW_BIND_INFO_MR",
        IbvLayout.MW_BIND_INFO_MR,
        "offsetof(struct ibv_mw_bind_info, mr)");
    row(
        ours,
        c,
        "IbvLayout.MW_BIND_INFO_ADDR",
        IbvLayout.MW_BIND_INFO_ADDR,
        "offsetof(struct ibv_mw_bind_info, addr)");
    row(
        ours,
        c,
        "IbvLayout.MW_BIND_INFO_LENGTH",
        IbvLayout.MW_BIND_INFO_LENGTH,
        "offsetof(struct ibv_mw_bind_info, length)");
    row(
        ours,
        c,
        "IbvLayout.MW_BIND_INFO_ACCESS",
        IbvLayout.MW_BIND_INFO_ACCESS,
        "offsetof(struct ibv_mw_bind_info, mw_access_flags)");
    row(ours, c, "IbvLayout.RECV_WR_SIZE", IbvLayout.RECV_WR_SIZE, "sizeof(struct ibv_recv_wr)");
    row(
        ours,
        c,
        "IbvLayout.RECV_WR_WR_ID",
        IbvLayout.RECV_WR_WR_ID,
        "offsetof(struct ibv_recv_wr, wr_id)");
    row(
        ours,
        c,
        "IbvLayout.RECV_WR_NEXT",
        IbvLayout.RECV_WR_NEXT,
        "offsetof(struct ibv_recv_wr, next)");
    row(
        ours,
        c,
        "IbvLayout.RECV_WR_SG_LIST",
        IbvLayout.RECV_WR_SG_LIST,
        "offsetof(struct ibv_recv_wr, sg_list)");
    row(
        ours,
        c,
        "IbvLayout.RECV_WR_NUM_SGE",
        IbvLayout.RECV_WR_NUM_SGE,
        "offsetof(struct ibv_recv_wr, num_sge)");
    row(ours, c, "IbvLayout.WC_SIZE", IbvLayout.WC_SIZE, "sizeof(struct ibv_wc)");
    row(ours, c, "IbvLayout.WC_WR_ID", IbvLayout.WC_WR_ID, "offsetof(struct ibv_wc, wr_id)");
    row(ours, c, "IbvLayout.WC_STATUS", IbvLayout.WC_STATUS, "offsetof(struct ibv_wc, status)");
    row(ours, c, "IbvLayout.WC_OPCODE", IbvLayout.WC_OPCODE, "offsetof(struct ibv_wc, opcode)");
    row(
        ours,
        c,
        "IbvLayout.WC_VENDOR_ERR",
        IbvLayout.WC_VENDOR_ERR,
        "offsetof(struct ibv_wc, vendor_err)");
    row(
        ours,
        c,
        "IbvLayout.WC_BYTE_LEN",
        IbvLayout.WC_BYTE_LEN,
        "offsetof(struct ibv_wc, byte_len)");
    row(
        ours,
        c,
        "IbvLayout.WC_IMM_DATA",
        IbvLayout.WC_IMM_DATA,
        "offsetof(struct ibv_wc, imm_data)");
    row(ours, c, "IbvLayout.WC_QP_NUM", IbvLayout.WC_QP_NUM, "offsetof(struct ibv_wc, qp_num)");
    row(ours, c, "IbvLayout.WC_SRC_QP", IbvLayout.WC_SRC_QP, "offsetof(struct ibv_wc, src_qp)");
    row(
        ours,
        c,
        "IbvLayout.WC_WC_FLAGS",
        IbvLayout.WC_WC_FLAGS,
        "offsetof(struct ibv_wc, wc_flags)");
    row(
        ours,
        c,
        "IbvLayout.WC_IMM_DATA",
        IbvLayout.WC_IMM_DATA,
        "offsetof(struct ibv_wc, invalidated_rkey)");
    row(
        ours,
        c,
        "IbvLayout.QP_INIT_ATTR_SIZE",
        IbvLayout.QP_INIT_ATTR_SIZE,
        "sizeof(struct ibv_qp_init_attr)");
    row(
        ours,
        c,
        "IbvLayout.QP_INIT_ATTR_SEND_CQ",
        IbvLayout.QP_INIT_ATTR_SEND_CQ,
        "offsetof(struct ibv_qp_init_attr, send_cq)");
    row(
        ours,
        c,
        "IbvLayout.QP_INIT_ATTR_RECV_CQ",
        IbvLayout.QP_INIT_ATTR_RECV_CQ,
        "offsetof(struct ibv_qp_init_attr, recv_cq)");
    row(
        ours,
        c,
        "IbvLayout.QP_INIT_ATTR_CAP",
        IbvLayout.QP_INIT_ATTR_CAP,
        "offsetof(struct ibv_qp_init_attr, cap)");
    row(
        ours,
        c,
        "IbvLayout.QP_INIT_ATTR_QP_TYPE",
        IbvLayout.QP_INIT_ATTR_QP_TYPE,
        "offsetof(struct ibv_qp_init_attr, qp_type)");
    row(
        ours,
        c,
        "IbvLayout.QP_INIT_ATTR_SQ_SIG_ALL",
        IbvLayout.QP_INIT_ATTR_SQ_SIG_ALL,
        "offsetof(struct ibv_qp_init_attr, sq_sig_all)");
    row(ours, c, "IbvLayout.QP_CAP_SIZE", IbvLayout.QP_CAP_SIZE, "sizeof(struct ibv_qp_cap)");
    row(
        ours,
        c,
        "IbvLayout.QP_INIT_ATTR_CAP + 4",
        IbvLayout.QP_INIT_ATTR_CAP + 4,
        "offsetof(struct ibv_qp_init_attr, cap.max_recv_wr)");
    row(
        ours,
        c,
        "IbvLayout.QP_INIT_ATTR_CAP + 8",
        IbvLayout.QP_INIT_ATTR_CAP + 8,
        "offsetof(struct ibv_qp_init_attr, cap.max_send_sge)");
    row(
        ours,
        c,
        "IbvLayout.QP_INIT_ATTR_CAP + 12",
        IbvLayout.QP_INIT_ATTR_CAP + 12,
        "offsetof(struct ibv_qp_init_attr, cap.max_recv_sge)");
    row(
        ours,
        c,
        "IbvLayout.QP_INIT_ATTR_CAP + 16",
        IbvLayout.QP_INIT_ATTR_CAP + 16,
        "offsetof(struct ibv_qp_init_attr, cap.max_inline_data)");
    row(ours, c, "IbvLayout.QP_ATTR_SIZE", IbvLayout.QP_ATTR_SIZE, "sizeof(struct ibv_qp_attr)");
    row(
        ours,
        c,
        "IbvLayout.QP_ATTR_QP_STATE",
        IbvLayout.QP_ATTR_QP_STATE,
        "offsetof(struct ibv_qp_attr, qp_state)");
    row(
        ours,
        c,
        "IbvLayout.QP_ATTR_PATH_MTU",
        IbvLayout.QP_ATTR_PATH_MTU,
        "offsetof(struct ibv_qp_attr, path_mtu)");
    row(
        ours,
        c,
        "IbvLayout.QP_ATTR_RQ_PSN",
        IbvLayout.QP_ATTR_RQ_PSN,
        "offsetof(struct ibv_qp_attr, rq_psn)");
    row(
        ours,
        c,
        "IbvLayout.QP_ATTR_SQ_PSN",
        IbvLayout.QP_ATTR_SQ_PSN,
        "offsetof(struct ibv_qp_attr, sq_psn)");
    row(
        ours,
        c,
        "IbvLayout.QP_ATTR_DEST_QP_NUM",
        IbvLayout.QP_ATTR_DEST_QP_NUM,
        "offsetof(struct ibv_qp_attr, dest_qp_num)");
    row(
        ours,
        c,
        "IbvLayout.QP_ATTR_QP_ACCESS_FLAGS",
        IbvLayout.QP_ATTR_QP_ACCESS_FLAGS,
        "offsetof(struct ibv_qp_attr, qp_access_flags)");
    row(
        ours,
        c,
        "IbvLayout.QP_ATTR_CAP",
        IbvLayout.QP_ATTR_CAP,
        "offsetof(struct ibv_qp_attr, cap)");
    row(
        ours,
        c,
        "IbvLayout.QP_ATTR_AH_ATTR",
        IbvLayout.QP_ATTR_AH_ATTR,
        "offsetof(struct ibv_qp_attr, ah_attr)");
    row(
        ours,
        c,
        "IbvLayout.QP_ATTR_PKEY_INDEX",
        IbvLayout.QP_ATTR_PKEY_INDEX,
        "offsetof(struct ibv_qp_attr, pkey_index)");
    row(
        ours,
        c,
        "IbvLayout.QP_ATTR_MAX_RD_ATOMIC",
        IbvLayout.QP_ATTR_MAX_RD_ATOMIC,
        "offsetof(struct ibv_qp_attr, max_rd_atomic)");
    row(
        ours,
        c,
        "IbvLayout.QP_ATTR_MAX_DEST_RD_ATOMIC",
        IbvLayout.QP_ATTR_MAX_DEST_RD_ATOMIC,
        "offsetof(struct ibv_qp_attr, max_dest_rd_atomic)");
    row(
        ours,
        c,
        "IbvLayout.QP_ATTR_MIN_RNR_TIMER",
        IbvLayout.QP_ATTR_MIN_RNR_TIMER,
        "offsetof(struct ibv_qp_attr, min_rnr_timer)");
    row(
        ours,
        c,
        "IbvLayout.QP_ATTR_PORT_NUM",
        IbvLayout.QP_ATTR_PORT_NUM,
        "offsetof(struct ibv_qp_attr, port_num)");
    row(
        ours,
        c,
        "IbvLayout.QP_ATTR_TIMEOUT",
        IbvLayout.QP_ATTR_TIMEOUT,
        "offsetof(struct ibv_qp_attr, timeout)");
    row(
        ours,
        c,
        "IbvLayout.QP_ATTR_RETRY_CNT",
        IbvLayout.QP_ATTR_RETRY_CNT,
        "offsetof(struct ibv_qp_attr, retry_cnt)");
    row(
        ours,
        c,
        "IbvLayout.QP_ATTR_RNR_RETRY",
        IbvLayout.QP_ATTR_RNR_RETRY,
        "offsetof(struct ibv_qp_attr, rnr_retry)");
    row(ours, c, "IbvLayout.AH_ATTR_SIZE", IbvLayout.AH_ATTR_SIZE, "sizeof(struct ibv_ah_attr)");
    row(
        ours,
        c,
        "IbvLayout.AH_ATTR_GRH",
        IbvLayout.AH_ATTR_GRH,
        "offsetof(struct ibv_ah_attr, grh)");
    row(
        ours,
        c,
        "IbvLayout.AH_ATTR_DLID",
        IbvLayout.AH_ATTR_DLID,
        "offsetof(struct ibv_ah_attr, dlid)");
    row(ours, c, "IbvLayout.AH_ATTR_SL", IbvLayout.AH_ATTR_SL, "offsetof(struct ibv_ah_attr, sl)");
    row(
        ours,
        c,
        "IbvLayout.AH_ATTR_IS_GLOBAL",
        IbvLayout.AH_ATTR_IS_GLOBAL,
        "offsetof(struct ibv_ah_attr, is_global)");
    row(
        ours,
        c,
        "IbvLayout.AH_ATTR_PORT_NUM",
        IbvLayout.AH_ATTR_PORT_NUM,
        "offsetof(struct ibv_ah_attr, port_num)");
    row(
        ours,
        c,
        "IbvLayout.GRH_DGID",
        IbvLayout.GRH_DGID,
        "offsetof(struct ibv_global_route, dgid)");
    row(
        ours,
        c,
        "IbvLayout.GRH_FLOW_LABEL",
        IbvLayout.GRH_FLOW_LABEL,
        "offsetof(struct ibv_global_route, flow_label)");
    row(
        ours,
        c,
        "IbvLayout.GRH_SGID_INDEX",
        IbvLayout.GRH_SGID_INDEX,
        "offsetof(struct ibv_global_route, sgid_index)");
    row(
        ours,
        c,
        "IbvLayout.GRH_HOP_LIMIT",
        IbvLayout.GRH_HOP_LIMIT,
        "offsetof(struct ibv_global_route, hop_limit)");
    row(
        ours,
        c,
        "IbvLayout.PORT_ATTR_SIZE",
        IbvLayout.PORT_ATTR_SIZE,
        "sizeof(struct ibv_port_attr)");
    row(
        ours,
        c,
        "IbvLayout.PORT_ATTR_STATE",
        IbvLayout.PORT_ATTR_STATE,
        "offsetof(struct ibv_port_attr, state)");
    row(
        ours,
        c,
        "IbvLayout.PORT_ATTR_MAX_MTU",
        IbvLayout.PORT_ATTR_MAX_MTU,
        "offsetof(struct ibv_port_attr, max_mtu)");
    row(
        ours,
        c,
        "IbvLayout.PORT_ATTR_ACTIVE_MTU",
        IbvLayout.PORT_ATTR_ACTIVE_MTU,
        "offsetof(struct ibv_port_attr, active_mtu)");
    row(
        ours,
        c,
        "IbvLayout.PORT_ATTR_GID_TBL_LEN",
        IbvLayout.PORT_ATTR_GID_TBL_LEN,
        "offsetof(struct ibv_port_attr, gid_tbl_len)");
    row(
        ours,
        c,
        "IbvLayout.PORT_ATTR_LID",
        IbvLayout.PORT_ATTR_LID,
        "offsetof(struct ibv_port_attr, lid)");
    row(
        ours,
        c,
        "IbvLayout.PORT_ATTR_ACTIVE_WIDTH",
        IbvLayout.PORT_ATTR_ACTIVE_WIDTH,
        "offsetof(struct ibv_port_attr, active_width)");
    row(
        ours,
        c,
        "IbvLayout.PORT_ATTR_ACTIVE_SPEED",
        IbvLayout.PORT_ATTR_ACTIVE_SPEED,
        "offsetof(struct ibv_port_attr, active_speed)");
    row(
        ours,
        c,
        "IbvLayout.PORT_ATTR_LINK_LAYER",
        IbvLayout.PORT_ATTR_LINK_LAYER,
        "offsetof(struct ibv_port_attr, link_layer)");
    row(
        ours,
        c,
        "IbvLayout.DEVICE_ATTR_SIZE",
        IbvLayout.DEVICE_ATTR_SIZE,
        "sizeof(struct ibv_device_attr)");
    row(
        ours,
        c,
        "IbvLayout.DEVICE_ATTR_FW_VER",
        IbvLayout.DEVICE_ATTR_FW_VER,
        "offsetof(struct ibv_device_attr, fw_ver)");
    row(
        ours,
        c,
        "IbvLayout.DEVICE_ATTR_NODE_GUID",
        IbvLayout.DEVICE_ATTR_NODE_GUID,
        "offsetof(struct ibv_device_attr, node_guid)");
    row(
        ours,
        c,
        "IbvLayout.DEVICE_ATTR_MAX_MR_SIZE",
        IbvLayout.DEVICE_ATTR_MAX_MR_SIZE,
        "offsetof(struct ibv_device_attr, max_mr_size)");
    row(
        ours,
        c,
        "IbvLayout.DEVICE_ATTR_VENDOR_ID",
        IbvLayout.DEVICE_ATTR_VENDOR_ID,
        "offsetof(struct ibv_device_attr, vendor_id)");
    row(
        ours,
        c,
        "IbvLayout.DEVICE_ATTR_VENDOR_PART_ID",
        IbvLayout.DEVICE_ATTR_VENDOR_PART_ID,
        "offsetof(struct ibv_device_attr, vendor_part_id)");
    row(
        ours,
        c,
        "IbvLayout.DEVICE_ATTR_MAX_QP",
        IbvLayout.DEVICE_ATTR_MAX_QP,
        "offsetof(struct ibv_device_attr, max_qp)");
    row(
        ours,
        c,
        "IbvLayout.DEVICE_ATTR_MAX_QP_WR",
        IbvLayout.DEVICE_ATTR_MAX_QP_WR,
        "offsetof(struct ibv_device_attr, max_qp_wr)");
    row(
        ours,
        c,
        "IbvLayout.DEVICE_ATTR_MAX_SGE",
        IbvLayout.DEVICE_ATTR_MAX_SGE,
        "offsetof(struct ibv_device_attr, max_sge)");
    row(
        ours,
        c,
        "IbvLayout.DEVICE_ATTR_MAX_CQ",
        IbvLayout.DEVICE_ATTR_MAX_CQ,
        "offsetof(struct ibv_device_attr, max_cq)");
    row(
        ours,
        c,
        "IbvLayout.DEVICE_ATTR_MAX_CQE",
        IbvLayout.DEVICE_ATTR_MAX_CQE,
        "offsetof(struct ibv_device_attr, max_cqe)");
    row(
        ours,
        c,
        "IbvLayout.DEVICE_ATTR_MAX_MR",
        IbvLayout.DEVICE_ATTR_MAX_MR,
        "offsetof(struct ibv_device_attr, max_mr)");
    row(
        ours,
        c,
        "IbvLayout.DEVICE_ATTR_MAX_PD",
        IbvLayout.DEVICE_ATTR_MAX_PD,
        "offsetof(struct ibv_device_attr, max_pd)");
    row(
        ours,
        c,
        "IbvLayout.DEVICE_ATTR_MAX_QP_RD_ATOM",
        IbvLayout.DEVICE_ATTR_MAX_QP_RD_ATOM,
        "offsetof(struct ibv_device_attr, max_qp_rd_atom)");
    row(
        ours,
        c,
        "IbvLayout.DEVICE_ATTR_MAX_MW",
        IbvLayout.DEVICE_ATTR_MAX_MW,
        "offsetof(struct ibv_device_attr, max_mw)");
    row(
        ours,
        c,
        "IbvLayout.DEVICE_ATTR_PHYS_PORT_CNT",
        IbvLayout.DEVICE_ATTR_PHYS_PORT_CNT,
        "offsetof(struct ibv_device_attr, phys_port_cnt)");
    row(
        ours,
        c,
        "IbvLayout.DEVICE_ATTR_FW_VER_LENGTH",
        IbvLayout.DEVICE_ATTR_FW_VER_LENGTH,
        "sizeof(((struct ibv_device_attr *)0)->fw_ver)");
    row(ours, c, "IbvLayout.GID_SIZE", IbvLayout.GID_SIZE, "sizeof(union ibv_gid)");
    row(
        ours,
        c,
        "IbvLayout.ASYNC_EVENT_SIZE",
        IbvLayout.ASYNC_EVENT_SIZE,
        "sizeof(struct ibv_async_event)");
    row(
        ours,
        c,
        "IbvLayout.ASYNC_EVENT_ELEMENT",
        IbvLayout.ASYNC_EVENT_ELEMENT,
        "offsetof(struct ibv_async_event, element)");
    row(
        ours,
        c,
        "IbvLayout.ASYNC_EVENT_TYPE",
        IbvLayout.ASYNC_EVENT_TYPE,
        "offsetof(struct ibv_async_event, event_type)");
    row(
        ours,
        c,
        "IbvLayout.CONTEXT_OPS",
        IbvLayout.CONTEXT_OPS,
        "offsetof(struct ibv_context, ops)");
    row(
        ours,
        c,
        "IbvLayout.CONTEXT_ASYNC_FD",
        IbvLayout.CONTEXT_ASYNC_FD,
        "offsetof(struct ibv_context, async_fd)");
    row(
        ours,
        c,
        "IbvLayout.OPS_ALLOC_MW",
        IbvLayout.OPS_ALLOC_MW,
        "offsetof(struct ibv_context_ops, alloc_mw)");
    row(
        ours,
        c,
        "IbvLayout.OPS_DEALLOC_MW",
        IbvLayout.OPS_DEALLOC_MW,
        "offsetof(struct ibv_context_ops, dealloc_mw)");
    row(
        ours,
        c,
        "IbvLayout.OPS_POLL_CQ",
        IbvLayout.OPS_POLL_CQ,
        "offsetof(struct ibv_context_ops, poll_cq)");
    row(
        ours,
        c,
        "IbvLayout.OPS_REQ_NOTIFY_CQ",
        IbvLayout.OPS_REQ_NOTIFY_CQ,
        "offsetof(struct ibv_context_ops, req_notify_cq)");
    row(
        ours,
        c,
        "IbvLayout.OPS_POST_SEND",
        IbvLayout.OPS_POST_SEND,
        "offsetof(struct ibv_context_ops, post_send)");
    row(
        ours,
        c,
        "IbvLayout.OPS_POST_RECV",
        IbvLayout.OPS_POST_RECV,
        "offsetof(struct ibv_context_ops, post_recv)");
    row(
        ours,
        c,
        "IbvLayout.OBJECT_CONTEXT",
        IbvLayout.OBJECT_CONTEXT,
        "offsetof(struct ibv_pd, context)");
    row(
        ours,
        c,
        "IbvLayout.OBJECT_CONTEXT",
        IbvLayout.OBJECT_CONTEXT,
        "offsetof(struct ibv_mr, context)");
    row(
        ours,
        c,
        "IbvLayout.OBJECT_CONTEXT",
        IbvLayout.OBJECT_CONTEXT,
        "offsetof(struct ibv_mw, context)");
    row(
        ours,
        c,
        "IbvLayout.OBJECT_CONTEXT",
        IbvLayout.OBJECT_CONTEXT,
        "offsetof(struct ibv_cq, context)");
    row(
        ours,
        c,
        "IbvLayout.OBJECT_CONTEXT",
        IbvLayout.OBJECT_CONTEXT,
        "offsetof(struct ibv_qp, context)");
    row(
        ours,
        c,
        "IbvLayout.OBJECT_CONTEXT",
        IbvLayout.OBJECT_CONTEXT,
        "offsetof(struct ibv_comp_channel, context)");
    row(ours, c, "IbvLayout.MR_ADDR", IbvLayout.MR_ADDR, "offsetof(struct ibv_mr, addr)");
    row(ours, c, "IbvLayout.MR_LENGTH", IbvLayout.MR_LENGTH, "offsetof(struct ibv_mr, length)");
    row(ours, c, "IbvLayout.MR_LKEY", IbvLayout.MR_LKEY, "offsetof(struct ibv_mr, lkey)");
    row(ours, c, "IbvLayout.MR_RKEY", IbvLayout.MR_RKEY, "offsetof(struct ibv_mr, rkey)");
    row(ours, c, "IbvLayout.MW_RKEY", IbvLayout.MW_RKEY, "offsetof(struct ibv_mw, rkey)");
    row(ours, c, "IbvLayout.MW_TYPE", IbvLayout.MW_TYPE, "offsetof(struct ibv_mw, type)");
    row(
        ours,
        c,
        "IbvLayout.COMP_CHANNEL_FD",
        IbvLayout.COMP_CHANNEL_FD,
        "offsetof(struct ibv_comp_channel, fd)");
    row(ours, c, "IbvLayout.CQ_CQE", IbvLayout.CQ_CQE, "offsetof(struct ibv_cq, cqe)");
    row(ours, c, "IbvLayout.QP_QP_NUM", IbvLayout.QP_QP_NUM, "offsetof(struct ibv_qp, qp_num)");
    row(ours, c, "IbvLayout.QP_STATE", IbvLayout.QP_STATE, "offsetof(struct ibv_qp, state)");
    row(ours, c, "Ibv.ACCESS_LOCAL_WRITE", Ibv.ACCESS_LOCAL_WRITE, "IBV_ACCESS_LOCAL_WRITE");
    row(ours, c, "Ibv.ACCESS_REMOTE_WRITE", Ibv.ACCESS_REMOTE_WRITE, "IBV_ACCESS_REMOTE_WRITE");
    row(ours, c, "Ibv.ACCESS_REMOTE_READ", Ibv.ACCESS_REMOTE_READ, "IBV_ACCESS_REMOTE_READ");
    row(ours, c, "Ibv.ACCESS_REMOTE_ATOMIC", Ibv.ACCESS_REMOTE_ATOMIC, "IBV_ACCESS_REMOTE_ATOMIC");
    row(ours, c, "Ibv.ACCESS_MW_BIND", Ibv.ACCESS_MW_BIND, "IBV_ACCESS_MW_BIND");
    row(ours, c, "Ibv.MW_TYPE_1", Ibv.MW_TYPE_1, "IBV_MW_TYPE_1");
    row(ours, c, "Ibv.MW_TYPE_2", Ibv.MW_TYPE_2, "IBV_MW_TYPE_2");
    row(ours, c, "Ibv.QPT_RC", Ibv.QPT_RC, "IBV_QPT_RC");
    row(ours, c, "Ibv.QPS_RESET", Ibv.QPS_RESET, "IBV_QPS_RESET");
    row(ours, c, "Ibv.QPS_INIT", Ibv.QPS_INIT, "IBV_QPS_INIT");
    row(ours, c, "Ibv.QPS_RTR", Ibv.QPS_RTR, "IBV_QPS_RTR");
    row(ours, c, "Ibv.QPS_RTS", Ibv.QPS_RTS, "IBV_QPS_RTS");
    row(ours, c, "Ibv.QPS_SQD", Ibv.QPS_SQD, "IBV_QPS_SQD");
    row(ours, c, "Ibv.QPS_SQE", Ibv.QPS_SQE, "IBV_QPS_SQE");
    row(ours, c, "Ibv.QPS_ERR", Ibv.QPS_ERR, "IBV_QPS_ERR");
    row(ours, c, "Ibv.QP_STATE", Ibv.QP_STATE, "IBV_QP_STATE");
    row(ours, c, "Ibv.QP_ACCESS_FLAGS", Ibv.QP_ACCESS_FLAGS, "IBV_QP_ACCESS_FLAGS");
    row(ours, c, "Ibv.QP_PKEY_INDEX", Ibv.QP_PKEY_INDEX, "IBV_QP_PKEY_INDEX");
    row(ours, c, "Ibv.QP_PORT", Ibv.QP_PORT, "IBV_QP_PORT");
    row(ours, c, "Ibv.QP_AV", Ibv.QP_AV, "IBV_QP_AV");
    row(ours, c, "Ibv.QP_PATH_MTU", Ibv.QP_PATH_MTU, "IBV_QP_PATH_MTU");
    row(ours, c, "Ibv.QP_TIMEOUT", Ibv.QP_TIMEOUT, "IBV_QP_TIMEOUT");
    row(ours, c, "Ibv.QP_RETRY_CNT", Ibv.QP_RETRY_CNT, "IBV_QP_RETRY_CNT");
    row(ours, c, "Ibv.QP_RNR_RETRY", Ibv.QP_RNR_RETRY, "IBV_QP_RNR_RETRY");
    row(ours, c, "Ibv.QP_RQ_PSN", Ibv.QP_RQ_PSN, "IBV_QP_RQ_PSN");
    row(ours, c, "Ibv.QP_MAX_QP_RD_ATOMIC", Ibv.QP_MAX_QP_RD_ATOMIC, "IBV_QP_MAX_QP_RD_ATOMIC");
    row(ours, c, "Ibv.QP_MIN_RNR_TIMER", Ibv.QP_MIN_RNR_TIMER, "IBV_QP_MIN_RNR_TIMER");
    row(ours, c, "Ibv.QP_SQ_PSN", Ibv.QP_SQ_PSN, "IBV_QP_SQ_PSN");
    row(
        ours,
        c,
        "Ibv.QP_MAX_DEST_RD_ATOMIC",
        Ibv.QP_MAX_DEST_RD_ATOMIC,
        "IBV_QP_MAX_DEST_RD_ATOMIC");
    row(ours, c, "Ibv.QP_CAP", Ibv.QP_CAP, "IBV_QP_CAP");
    row(ours, c, "Ibv.QP_DEST_QPN", Ibv.QP_DEST_QPN, "IBV_QP_DEST_QPN");
    row(ours, c, "Ibv.WR_RDMA_WRITE", Ibv.WR_RDMA_WRITE, "IBV_WR_RDMA_WRITE");
    row(
        ours,
        c,
        "Ibv.WR_RDMA_WRITE_WITH_IMM",
        Ibv.WR_RDMA_WRITE_WITH_IMM,
        "IBV_WR_RDMA_WRITE_WITH_IMM");
    row(ours, c, "Ibv.WR_SEND", Ibv.WR_SEND, "IBV_WR_SEND");
    row(ours, c, "Ibv.WR_SEND_WITH_IMM", Ibv.WR_SEND_WITH_IMM, "IBV_WR_SEND_WITH_IMM");
    row(ours, c, "Ibv.WR_RDMA_READ", Ibv.WR_RDMA_READ, "IBV_WR_RDMA_READ");
    row(ours, c, "Ibv.WR_LOCAL_INV", Ibv.WR_LOCAL_INV, "IBV_WR_LOCAL_INV");
    row(ours, c, "Ibv.WR_BIND_MW", Ibv.WR_BIND_MW, "IBV_WR_BIND_MW");
    row(ours, c, "Ibv.WR_SEND_WITH_INV", Ibv.WR_SEND_WITH_INV, "IBV_WR_SEND_WITH_INV");
    row(ours, c, "Ibv.SEND_FENCE", Ibv.SEND_FENCE, "IBV_SEND_FENCE");
    row(ours, c, "Ibv.SEND_SIGNALED", Ibv.SEND_SIGNALED, "IBV_SEND_SIGNALED");
    row(ours, c, "Ibv.SEND_SOLICITED", Ibv.SEND_SOLICITED, "IBV_SEND_SOLICITED");
    row(ours, c, "Ibv.SEND_INLINE", Ibv.SEND_INLINE, "IBV_SEND_INLINE");
    row(ours, c, "Ibv.WC_SUCCESS", Ibv.WC_SUCCESS, "IBV_WC_SUCCESS");
    row(ours, c, "Ibv.WC_LOC_LEN_ERR", Ibv.WC_LOC_LEN_ERR, "IBV_WC_LOC_LEN_ERR");
    row(ours, c, "Ibv.WC_LOC_QP_OP_ERR", Ibv.WC_LOC_QP_OP_ERR, "IBV_WC_LOC_QP_OP_ERR");
    row(ours, c, "Ibv.WC_LOC_PROT_ERR", Ibv.WC_LOC_PROT_ERR, "IBV_WC_LOC_PROT_ERR");
    row(ours, c, "Ibv.WC_WR_FLUSH_ERR", Ibv.WC_WR_FLUSH_ERR, "IBV_WC_WR_FLUSH_ERR");
    row(ours, c, "Ibv.WC_MW_BIND_ERR", Ibv.WC_MW_BIND_ERR, "IBV_WC_MW_BIND_ERR");
    row(ours, c, "Ibv.WC_BAD_RESP_ERR", Ibv.WC_BAD_RESP_ERR, "IBV_WC_BAD_RESP_ERR");
    row(ours, c, "Ibv.WC_LOC_ACCESS_ERR", Ibv.WC_LOC_ACCESS_ERR, "IBV_WC_LOC_ACCESS_ERR");
    row(ours, c, "Ibv.WC_REM_INV_REQ_ERR", Ibv.WC_REM_INV_REQ_ERR, "IBV_WC_REM_INV_REQ_ERR");
    row(ours, c, "Ibv.WC_REM_ACCESS_ERR", Ibv.WC_REM_ACCESS_ERR, "IBV_WC_REM_ACCESS_ERR");
    row(ours, c, "Ibv.WC_REM_OP_ERR", Ibv.WC_REM_OP_ERR, "IBV_WC_REM_OP_ERR");
    row(ours, c, "Ibv.WC_RETRY_EXC_ERR", Ibv.WC_RETRY_EXC_ERR, "IBV_WC_RETRY_EXC_ERR");
    row(ours, c, "Ibv.WC_RNR_RETRY_EXC_ERR", Ibv.WC_RNR_RETRY_EXC_ERR, "IBV_WC_RNR_RETRY_EXC_ERR");
    row(ours, c, "Ibv.WC_FATAL_ERR", Ibv.WC_FATAL_ERR, "IBV_WC_FATAL_ERR");
    row(ours, c, "Ibv.WC_GENERAL_ERR", Ibv.WC_GENERAL_ERR, "IBV_WC_GENERAL_ERR");
    row(ours, c, "Ibv.WC_SEND", Ibv.WC_SEND, "IBV_WC_SEND");
    row(ours, c, "Ibv.WC_RDMA_WRITE", Ibv.WC_RDMA_WRITE, "IBV_WC_RDMA_WRITE");
    row(ours, c, "Ibv.WC_RDMA_READ", Ibv.WC_RDMA_READ, "IBV_WC_RDMA_READ");
    row(ours, c, "Ibv.WC_BIND_MW", Ibv.WC_BIND_MW, "IBV_WC_BIND_MW");
    row(ours, c, "Ibv.WC_LOCAL_INV", Ibv.WC_LOCAL_INV, "IBV_WC_LOCAL_INV");
    row(ours, c, "Ibv.WC_RECV", Ibv.WC_RECV, "IBV_WC_RECV");
    row(
        ours,
        c,
        "Ibv.WC_RECV_RDMA_WITH_IMM",
        Ibv.WC_RECV_RDMA_WITH_IMM,
        "IBV_WC_RECV_RDMA_WITH_IMM");
    row(ours, c, "Ibv.WC_WITH_IMM", Ibv.WC_WITH_IMM, "IBV_WC_WITH_IMM");
    row(ours, c, "Ibv.WC_WITH_INV", Ibv.WC_WITH_INV, "IBV_WC_WITH_INV");
    row(ours, c, "Ibv.PORT_DOWN", Ibv.PORT_DOWN, "IBV_PORT_DOWN");
    row(ours, c, "Ibv.PORT_INIT", Ibv.PORT_INIT, "IBV_PORT_INIT");
    row(ours, c, "Ibv.PORT_ACTIVE", Ibv.PORT_ACTIVE, "IBV_PORT_ACTIVE");
    row(ours, c, "Ibv.MTU_1024", Ibv.MTU_1024, "IBV_MTU_1024");
    row(ours, c, "Ibv.MTU_4096", Ibv.MTU_4096, "IBV_MTU_4096");
    row(
        ours,
        c,
        "Ibv.LINK_LAYER_INFINIBAND",
        Ibv.LINK_LAYER_INFINIBAND,
        "IBV_LINK_LAYER_INFINIBAND");
    row(ours, c, "Ibv.LINK_LAYER_ETHERNET", Ibv.LINK_LAYER_ETHERNET, "IBV_LINK_LAYER_ETHERNET");
    row(ours, c, "Ibv.EVENT_CQ_ERR", Ibv.EVENT_CQ_ERR, "IBV_EVENT_CQ_ERR");
    row(ours, c, "Ibv.EVENT_QP_FATAL", Ibv.EVENT_QP_FATAL, "IBV_EVENT_QP_FATAL");
    row(ours, c, "Ibv.EVENT_QP_REQ_ERR", Ibv.EVENT_QP_REQ_ERR, "IBV_EVENT_QP_REQ_ERR");
    row(ours, c, "Ibv.EVENT_QP_ACCESS_ERR", Ibv.EVENT_QP_ACCESS_ERR, "IBV_EVENT_QP_ACCESS_ERR");
    row(ours, c, "Ibv.EVENT_PORT_ACTIVE", Ibv.EVENT_PORT_ACTIVE, "IBV_EVENT_PORT_ACTIVE");
    row(ours, c, "Ibv.EVENT_PORT_ERR", Ibv.EVENT_PORT_ERR, "IBV_EVENT_PORT_ERR");
    row(ours, c, "Ibv.EVENT_DEVICE_FATAL", Ibv.EVENT_DEVICE_FATAL, "IBV_EVENT_DEVICE_FATAL");
    Map<String, Long> header = CHeaderProbe.probe(gcc.get(), dir, List.of("infiniband/verbs.h"), c);
    for (Map.Entry<String, Long> e : ours.entrySet()) {
      assertEquals(
          header.get(e.getKey()),
          e.getValue(),
          JAVA_NAMES.get(e.getKey()) + " against " + c.get(e.getKey()));
    }
  }

  @Test
  void theRkeyOfANextBindKeepsTheUpperBitsAndAdvancesTheKeyByte() {
    assertEquals(0x12345601, Ibv.incRkey(0x12345600));
    assertEquals(0x12345600, Ibv.incRkey(0x123456ff));
  }

  private static void row(
      Map<String, Long> ours, Map<String, String> c, String java, long value, String expression) {
    String key = "k" + ours.size();
    ours.put(key, value);
    c.put(key, expression);
    JAVA_NAMES.put(key, java);
  }

  /** Each probe key's Java name, for the failure message. */
  private static final Map<String, String> JAVA_NAMES = new LinkedHashMap<>();
}
