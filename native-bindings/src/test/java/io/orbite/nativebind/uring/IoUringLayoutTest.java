package io.orbite.nativebind.uring;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.orbite.nativebind.CHeaderProbe;
import io.orbite.nativebind.testkit.Prerequisite;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The io_uring struct layouts and constants against {@code <linux/io_uring.h>}, compiled with gcc.
 */
class IoUringLayoutTest {

  @Test
  void layoutsAreTheLinuxX86_64Ones() {
    assertEquals(64, Sqe.SIZE);
    assertEquals(32, Sqe.OFFSET_USER_DATA);
    assertEquals(16, Cqe.SIZE);
    assertEquals(8, Cqe.OFFSET_RES);
    assertEquals(120, IoUringParams.SIZE);
    assertEquals(40, IoUringParams.OFFSET_SQ_OFF);
    assertEquals(80, IoUringParams.OFFSET_CQ_OFF);
    assertEquals(24, GeteventsArg.SIZE);
    assertEquals(16, GeteventsArg.TIMESPEC_SIZE);
    assertEquals(16, ProbeLayout.HEADER_SIZE);
    assertEquals(8, ProbeLayout.OP_SIZE);
  }

  @Test
  void layoutsMatchTheKernelHeaderWhenGccIsPresent(@TempDir Path dir) throws Exception {
    Optional<Path> gcc = CHeaderProbe.gcc();
    Prerequisite.require(gcc.isPresent(), CHeaderProbe.gccAbsentMessage("io_uring structs"));
    Map<String, Long> ours = new LinkedHashMap<>();
    Map<String, String> c = new LinkedHashMap<>();
    expect(ours, c, "sqe_size", Sqe.SIZE, "sizeof(struct io_uring_sqe)");
    for (String f :
        List.of(
            "opcode",
            "flags",
            "ioprio",
            "fd",
            "off",
            "addr",
            "len",
            "rw_flags",
            "user_data",
            "buf_index",
            "personality",
            "splice_fd_in",
            "addr3")) {
      expect(
          ours,
          c,
          "sqe_" + f,
          Sqe.LAYOUT.byteOffset(java.lang.foreign.MemoryLayout.PathElement.groupElement(f)),
          "offsetof(struct io_uring_sqe, " + f + ")");
    }
    expect(ours, c, "cqe_size", Cqe.SIZE, "sizeof(struct io_uring_cqe)");
    expect(
        ours, c, "cqe_user_data", Cqe.OFFSET_USER_DATA, "offsetof(struct io_uring_cqe, user_data)");
    expect(ours, c, "cqe_res", Cqe.OFFSET_RES, "offsetof(struct io_uring_cqe, res)");
    expect(ours, c, "cqe_flags", Cqe.OFFSET_FLAGS, "offsetof(struct io_uring_cqe, flags)");
    expect(ours, c, "params_size", IoUringParams.SIZE, "sizeof(struct io_uring_params)");
    expect(
        ours,
        c,
        "params_sq_entries",
        IoUringParams.OFFSET_SQ_ENTRIES,
        "offsetof(struct io_uring_params, sq_entries)");
    expect(
        ours,
        c,
        "params_cq_entries",
        IoUringParams.OFFSET_CQ_ENTRIES,
        "offsetof(struct io_uring_params, cq_entries)");
    expect(
        ours,
        c,
        "params_flags",
        IoUringParams.OFFSET_FLAGS,
        "offsetof(struct io_uring_params, flags)");
    expect(
        ours,
        c,
        "params_features",
        IoUringParams.OFFSET_FEATURES,
        "offsetof(struct io_uring_params, features)");
    expect(
        ours,
        c,
        "params_sq_off",
        IoUringParams.OFFSET_SQ_OFF,
        "offsetof(struct io_uring_params, sq_off)");
    expect(
        ours,
        c,
        "params_cq_off",
        IoUringParams.OFFSET_CQ_OFF,
        "offsetof(struct io_uring_params, cq_off)");
    for (String f :
        List.of("head", "tail", "ring_mask", "ring_entries", "flags", "dropped", "array")) {
      expect(
          ours,
          c,
          "sq_off_" + f,
          IoUringParams.sqOffsetField(f),
          "offsetof(struct io_uring_params, sq_off." + f + ")");
    }
    for (String f :
        List.of("head", "tail", "ring_mask", "ring_entries", "overflow", "cqes", "flags")) {
      expect(
          ours,
          c,
          "cq_off_" + f,
          IoUringParams.cqOffsetField(f),
          "offsetof(struct io_uring_params, cq_off." + f + ")");
    }
    expect(
        ours,
        c,
        "sq_off_size",
        IoUringParams.SQ_OFFSETS.byteSize(),
        "sizeof(struct io_sqring_offsets)");
    expect(
        ours,
        c,
        "cq_off_size",
        IoUringParams.CQ_OFFSETS.byteSize(),
        "sizeof(struct io_cqring_offsets)");
    expect(ours, c, "getevents_size", GeteventsArg.SIZE, "sizeof(struct io_uring_getevents_arg)");
    expect(
        ours,
        c,
        "getevents_sigmask",
        GeteventsArg.OFFSET_SIGMASK,
        "offsetof(struct io_uring_getevents_arg, sigmask)");
    expect(
        ours,
        c,
        "getevents_sigmask_sz",
        GeteventsArg.OFFSET_SIGMASK_SZ,
        "offsetof(struct io_uring_getevents_arg, sigmask_sz)");
    expect(
        ours,
        c,
        "getevents_ts",
        GeteventsArg.OFFSET_TS,
        "offsetof(struct io_uring_getevents_arg, ts)");
    expect(
        ours, c, "timespec_size", GeteventsArg.TIMESPEC_SIZE, "sizeof(struct __kernel_timespec)");
    expect(
        ours,
        c,
        "timespec_nsec",
        GeteventsArg.OFFSET_TV_NSEC,
        "offsetof(struct __kernel_timespec, tv_nsec)");
    expect(ours, c, "probe_size", ProbeLayout.HEADER_SIZE, "sizeof(struct io_uring_probe)");
    expect(
        ours,
        c,
        "probe_ops_len",
        ProbeLayout.OFFSET_OPS_LEN,
        "offsetof(struct io_uring_probe, ops_len)");
    expect(ours, c, "probe_op_size", ProbeLayout.OP_SIZE, "sizeof(struct io_uring_probe_op)");
    expect(
        ours,
        c,
        "probe_op_flags",
        ProbeLayout.OP_OFFSET_FLAGS,
        "offsetof(struct io_uring_probe_op, flags)");

    Map<String, Long> values =
        CHeaderProbe.probe(gcc.get(), dir, List.of("linux/io_uring.h", "linux/time_types.h"), c);
    ours.forEach((name, value) -> assertEquals(values.get(name), value, name));
  }

  @Test
  void constantsMatchTheKernelHeadersWhenGccIsPresent(@TempDir Path dir) throws Exception {
    Optional<Path> gcc = CHeaderProbe.gcc();
    Prerequisite.require(gcc.isPresent(), CHeaderProbe.gccAbsentMessage("io_uring constants"));
    Map<String, Long> ours = new LinkedHashMap<>();
    ours.put("__NR_io_uring_setup", (long) IoUring.NR_IO_URING_SETUP);
    ours.put("__NR_io_uring_enter", (long) IoUring.NR_IO_URING_ENTER);
    ours.put("__NR_io_uring_register", (long) IoUring.NR_IO_URING_REGISTER);
    ours.put("IORING_OP_NOP", (long) IoUring.IORING_OP_NOP);
    ours.put("IORING_OP_ASYNC_CANCEL", (long) IoUring.IORING_OP_ASYNC_CANCEL);
    ours.put("IORING_OP_READ", (long) IoUring.IORING_OP_READ);
    ours.put("IORING_OP_WRITE", (long) IoUring.IORING_OP_WRITE);
    ours.put("IORING_OFF_SQ_RING", IoUring.IORING_OFF_SQ_RING);
    ours.put("IORING_OFF_CQ_RING", IoUring.IORING_OFF_CQ_RING);
    ours.put("IORING_OFF_SQES", IoUring.IORING_OFF_SQES);
    ours.put("IORING_ENTER_GETEVENTS", (long) IoUring.IORING_ENTER_GETEVENTS);
    ours.put("IORING_ENTER_EXT_ARG", (long) IoUring.IORING_ENTER_EXT_ARG);
    ours.put("IORING_FEAT_SINGLE_MMAP", (long) IoUring.IORING_FEAT_SINGLE_MMAP);
    ours.put("IORING_FEAT_NODROP", (long) IoUring.IORING_FEAT_NODROP);
    ours.put("IORING_FEAT_EXT_ARG", (long) IoUring.IORING_FEAT_EXT_ARG);
    ours.put("IORING_REGISTER_PROBE", (long) IoUring.IORING_REGISTER_PROBE);
    ours.put("IORING_REGISTER_ENABLE_RINGS", (long) IoUring.IORING_REGISTER_ENABLE_RINGS);
    ours.put("IORING_SETUP_R_DISABLED", (long) IoUring.IORING_SETUP_R_DISABLED);
    ours.put("IORING_SETUP_SINGLE_ISSUER", (long) IoUring.IORING_SETUP_SINGLE_ISSUER);
    ours.put("IORING_SETUP_DEFER_TASKRUN", (long) IoUring.IORING_SETUP_DEFER_TASKRUN);
    ours.put("IO_URING_OP_SUPPORTED", (long) IoUring.IO_URING_OP_SUPPORTED);
    Map<String, String> e = new LinkedHashMap<>();
    ours.keySet().forEach(k -> e.put(k, k));
    Map<String, Long> c =
        CHeaderProbe.probe(gcc.get(), dir, List.of("linux/io_uring.h", "sys/syscall.h"), e);
    ours.forEach((name, value) -> assertEquals(c.get(name), value, name));
  }

  private static void expect(
      Map<String, Long> ours, Map<String, String> c, String name, long value, String expr) {
    ours.put(name, value);
    c.put(name, expr);
  }
}
