/*
 * A fake verbs provider for NativeVerbsOpsBridgeTest, compiled at test time against the installed
 * <infiniband/verbs.h>: a context whose ops table holds post_send, post_recv, poll_cq,
 * req_notify_cq, alloc_mw and dealloc_mw entries that record what they were handed (read back with
 * seen()) and answer fixed completions. It checks NativeVerbs' marshalling and its inline-ops
 * bridge against the header's own struct definitions, with no RDMA device.
 */
#include <errno.h>
#include <string.h>
#include <infiniband/verbs.h>

#define MAX_WR 8
#define MAX_SGE 4

static struct ibv_context ctx;
static struct ibv_pd pd;
static struct ibv_qp qp;
static struct ibv_cq cq;
static struct ibv_mw mw;

static struct ibv_send_wr sends[MAX_WR];
static struct ibv_sge send_sges[MAX_WR][MAX_SGE];
static int sends_seen;
static struct ibv_recv_wr recvs[MAX_WR];
static struct ibv_sge recv_sges[MAX_WR][MAX_SGE];
static int recvs_seen;
static int last_solicited = -1;
static int poll_asked;

static int fake_post_send(struct ibv_qp *q, struct ibv_send_wr *wr, struct ibv_send_wr **bad) {
  int i = 0;
  sends_seen = 0;
  if (q != &qp) return EINVAL;
  for (; wr != NULL; wr = wr->next, i++) {
    if (wr->wr_id == 666 || i >= MAX_WR || wr->num_sge > MAX_SGE) { *bad = wr; return ENOMEM; }
    sends[i] = *wr;
    for (int s = 0; s < wr->num_sge; s++) send_sges[i][s] = wr->sg_list[s];
    sends_seen = i + 1;
  }
  return 0;
}

static int fake_post_recv(struct ibv_qp *q, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad) {
  int i = 0;
  recvs_seen = 0;
  if (q != &qp) return EINVAL;
  for (; wr != NULL; wr = wr->next, i++) {
    if (wr->wr_id == 666 || i >= MAX_WR || wr->num_sge > MAX_SGE) { *bad = wr; return ENOMEM; }
    recvs[i] = *wr;
    for (int s = 0; s < wr->num_sge; s++) recv_sges[i][s] = wr->sg_list[s];
    recvs_seen = i + 1;
  }
  return 0;
}

static int fake_poll_cq(struct ibv_cq *c, int n, struct ibv_wc *wc) {
  if (c != &cq) return -EINVAL;
  poll_asked = n;
  int k = n < 2 ? n : 2;
  for (int i = 0; i < k; i++) {
    memset(&wc[i], 0, sizeof wc[i]);
    wc[i].wr_id = 0x1000 + i;
    wc[i].status = i == 0 ? IBV_WC_SUCCESS : IBV_WC_REM_ACCESS_ERR;
    wc[i].opcode = i == 0 ? IBV_WC_RDMA_WRITE : IBV_WC_RECV;
    wc[i].vendor_err = 0x51 * i;
    wc[i].byte_len = 4096 + i;
    wc[i].invalidated_rkey = 0xabcd0000u + i;
    wc[i].qp_num = qp.qp_num;
    wc[i].src_qp = 0x99;
    wc[i].wc_flags = i == 0 ? 0 : IBV_WC_WITH_INV;
  }
  return k;
}

static int fake_req_notify_cq(struct ibv_cq *c, int solicited_only) {
  if (c != &cq) return EINVAL;
  last_solicited = solicited_only;
  return 0;
}

static struct ibv_mw *fake_alloc_mw(struct ibv_pd *p, enum ibv_mw_type type) {
  if (p != &pd || type != IBV_MW_TYPE_2) { errno = EINVAL; return NULL; }
  mw.context = &ctx;
  mw.pd = p;
  mw.rkey = 0x12345600u;
  mw.type = type;
  return &mw;
}

static int fake_dealloc_mw(struct ibv_mw *m) { return m == &mw ? 0 : EINVAL; }

/* Sets up the fake objects; with_mw 0 leaves alloc_mw empty, as a provider without windows. */
void fake_setup(int with_mw) {
  memset(&ctx, 0, sizeof ctx);
  ctx.ops.post_send = fake_post_send;
  ctx.ops.post_recv = fake_post_recv;
  ctx.ops.poll_cq = fake_poll_cq;
  ctx.ops.req_notify_cq = fake_req_notify_cq;
  ctx.ops.alloc_mw = with_mw ? fake_alloc_mw : NULL;
  ctx.ops.dealloc_mw = fake_dealloc_mw;
  pd.context = &ctx;
  qp.context = &ctx;
  qp.pd = &pd;
  qp.qp_num = 0x77;
  cq.context = &ctx;
  cq.cqe = 16;
  sends_seen = recvs_seen = poll_asked = 0;
  last_solicited = -1;
}

void *fake_pd(void) { return &pd; }
void *fake_qp(void) { return &qp; }
void *fake_cq(void) { return &cq; }

/* What the entries were handed: a field of send/recv WR i (and its SGE j), by name. */
long long seen(const char *what, int i, int j) {
  const struct ibv_send_wr *w = &sends[i];
  if (!strcmp(what, "sends")) return sends_seen;
  if (!strcmp(what, "recvs")) return recvs_seen;
  if (!strcmp(what, "solicited")) return last_solicited;
  if (!strcmp(what, "poll_asked")) return poll_asked;
  if (!strcmp(what, "send.wr_id")) return (long long) w->wr_id;
  if (!strcmp(what, "send.opcode")) return w->opcode;
  if (!strcmp(what, "send.flags")) return w->send_flags;
  if (!strcmp(what, "send.imm")) return w->imm_data;
  if (!strcmp(what, "send.num_sge")) return w->num_sge;
  if (!strcmp(what, "send.remote_addr")) return (long long) w->wr.rdma.remote_addr;
  if (!strcmp(what, "send.rkey")) return w->wr.rdma.rkey;
  if (!strcmp(what, "send.sge.addr")) return (long long) send_sges[i][j].addr;
  if (!strcmp(what, "send.sge.length")) return send_sges[i][j].length;
  if (!strcmp(what, "send.sge.lkey")) return send_sges[i][j].lkey;
  if (!strcmp(what, "bind.mw")) return (long long) (unsigned long) w->bind_mw.mw;
  if (!strcmp(what, "bind.rkey")) return w->bind_mw.rkey;
  if (!strcmp(what, "bind.mr")) return (long long) (unsigned long) w->bind_mw.bind_info.mr;
  if (!strcmp(what, "bind.addr")) return (long long) w->bind_mw.bind_info.addr;
  if (!strcmp(what, "bind.length")) return (long long) w->bind_mw.bind_info.length;
  if (!strcmp(what, "bind.access")) return w->bind_mw.bind_info.mw_access_flags;
  if (!strcmp(what, "recv.wr_id")) return (long long) recvs[i].wr_id;
  if (!strcmp(what, "recv.num_sge")) return recvs[i].num_sge;
  if (!strcmp(what, "recv.sge.addr")) return (long long) recv_sges[i][j].addr;
  if (!strcmp(what, "recv.sge.length")) return recv_sges[i][j].length;
  if (!strcmp(what, "recv.sge.lkey")) return recv_sges[i][j].lkey;
  return -1;
}
