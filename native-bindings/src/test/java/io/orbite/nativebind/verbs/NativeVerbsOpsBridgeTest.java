package io.orbite.nativebind.verbs;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;

import io.orbite.nativebind.CHeaderProbe;
import io.orbite.nativebind.Errno;
import io.orbite.nativebind.testkit.Prerequisite;
import java.io.InputStream;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.lang.invoke.MethodHandle;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@link NativeVerbs}' inline-ops bridge and its work-request marshalling, with no RDMA device: a
 * fake provider ({@code fake_provider.c}, compiled here with gcc against the installed {@code
 * <infiniband/verbs.h>}) fills a context's {@code ops} table with entries that record what they are
 * handed. The table must find {@code qp->context->ops.post_send} (and the others) as the header's
 * inline functions do, hand over every field of each send WR (the rdma and bind_mw unions
 * included), receive WR and SGE where the header puts it, map {@code bad_wr} back to its index, and
 * read completions the provider wrote.
 */
class NativeVerbsOpsBridgeTest {
  @TempDir static Path dir;
  private static MethodHandle setup;
  private static MethodHandle pd;
  private static MethodHandle qp;
  private static MethodHandle cq;
  private static MethodHandle seen;
  private static final NativeVerbs VERBS = NativeVerbs.system();

  @BeforeAll
  static void buildTheFakeProvider() throws Exception {
    var gcc = CHeaderProbe.gcc();
    Prerequisite.require(gcc.isPresent(), CHeaderProbe.gccAbsentMessage("the verbs ops bridge"));
    Prerequisite.require(
        Files.exists(Path.of("/usr/include/infiniband/verbs.h")),
        "<infiniband/verbs.h> is missing (apt-get install libibverbs-dev; .ci/run installs it)");
    Prerequisite.require(VERBS.availability().isAvailable(), VERBS.availability().toString());
    Path source = dir.resolve("fake_provider.c");
    try (InputStream in = NativeVerbsOpsBridgeTest.class.getResourceAsStream("fake_provider.c")) {
      Files.write(source, in.readAllBytes());
    }
    Path so = dir.resolve("fake_provider.so");
    Process p =
        new ProcessBuilder(
                gcc.get().toString(),
                "-shared",
                "-fPIC",
                "-Wall",
                "-o",
                so.toString(),
                source.toString())
            .redirectErrorStream(true)
            .start();
    String out = new String(p.getInputStream().readAllBytes());
    p.waitFor(60, TimeUnit.SECONDS);
    assertEquals(0, p.exitValue(), out);
    SymbolLookup lib = SymbolLookup.libraryLookup(so, Arena.global());
    Linker linker = Linker.nativeLinker();
    setup =
        linker.downcallHandle(
            lib.find("fake_setup").orElseThrow(), FunctionDescriptor.ofVoid(JAVA_INT));
    pd = linker.downcallHandle(lib.find("fake_pd").orElseThrow(), FunctionDescriptor.of(ADDRESS));
    qp = linker.downcallHandle(lib.find("fake_qp").orElseThrow(), FunctionDescriptor.of(ADDRESS));
    cq = linker.downcallHandle(lib.find("fake_cq").orElseThrow(), FunctionDescriptor.of(ADDRESS));
    seen =
        linker.downcallHandle(
            lib.find("seen").orElseThrow(),
            FunctionDescriptor.of(JAVA_LONG, ADDRESS, JAVA_INT, JAVA_INT));
  }

  @BeforeEach
  void reset() throws Throwable {
    setup.invokeExact(1);
  }

  private static long seen(String what, int i, int j) throws Throwable {
    try (Arena arena = Arena.ofConfined()) {
      return (long) seen.invokeExact(arena.allocateFrom(what), i, j);
    }
  }

  private static Verbs.Context context() {
    return new Verbs.Context(0, "fake");
  }

  private static Verbs.Pd fakePd() throws Throwable {
    return new Verbs.Pd(((MemorySegment) pd.invokeExact()).address(), context());
  }

  private static Verbs.Qp fakeQp() throws Throwable {
    return new Verbs.Qp(((MemorySegment) qp.invokeExact()).address(), fakePd(), 0x77);
  }

  private static Verbs.Cq fakeCq() throws Throwable {
    return new Verbs.Cq(((MemorySegment) cq.invokeExact()).address(), context(), 16);
  }

  @Test
  void everySendWorkRequestFieldReachesTheProviderWhereTheHeaderPutsIt() throws Throwable {
    Verbs.Qp q = fakeQp();
    Verbs.Pd p = q.pd();
    Verbs.Mr mr = new Verbs.Mr(0xfeed0000L, p, 0x7000_0000L, 1 << 20, 0x11, 0x22, 0);
    Verbs.Mw mw = new Verbs.Mw(0xbeef0000L, p, Ibv.MW_TYPE_2, 0x12345600);
    List<Verbs.SendWr> wrs =
        List.of(
            Verbs.SendWr.rdma(
                0x0102030405060708L,
                Ibv.WR_RDMA_WRITE,
                Ibv.SEND_SIGNALED | Ibv.SEND_FENCE,
                List.of(
                    new Verbs.Sge(0x7000_0010L, 4096, 0x11), new Verbs.Sge(0x7000_2000L, 8, 0x11)),
                0x0000_7fff_0000_1000L,
                0xcafe),
            new Verbs.SendWr(
                2,
                Ibv.WR_SEND_WITH_INV,
                0,
                List.of(new Verbs.Sge(0x7000_0000L, 64, 0x11)),
                0,
                0,
                0x5555,
                null),
            Verbs.SendWr.bindMw(
                3,
                Ibv.SEND_SIGNALED,
                new Verbs.MwBind(mw, 0x12345601, mr, 0x7000_0100L, 300, Ibv.ACCESS_REMOTE_READ)));
    assertEquals(Verbs.PostResult.ALL, VERBS.postSend(q, wrs));
    assertEquals(3, seen("sends", 0, 0));
    assertEquals(0x0102030405060708L, seen("send.wr_id", 0, 0));
    assertEquals(Ibv.WR_RDMA_WRITE, seen("send.opcode", 0, 0));
    assertEquals(Ibv.SEND_SIGNALED | Ibv.SEND_FENCE, seen("send.flags", 0, 0));
    assertEquals(2, seen("send.num_sge", 0, 0));
    assertEquals(0x0000_7fff_0000_1000L, seen("send.remote_addr", 0, 0));
    assertEquals(0xcafe, seen("send.rkey", 0, 0));
    assertEquals(0x7000_0010L, seen("send.sge.addr", 0, 0));
    assertEquals(4096, seen("send.sge.length", 0, 0));
    assertEquals(0x11, seen("send.sge.lkey", 0, 0));
    assertEquals(0x7000_2000L, seen("send.sge.addr", 0, 1));
    assertEquals(8, seen("send.sge.length", 0, 1));
    assertEquals(Ibv.WR_SEND_WITH_INV, seen("send.opcode", 1, 0));
    assertEquals(0x5555, seen("send.imm", 1, 0)); // the invalidate_rkey half of the union
    assertEquals(Ibv.WR_BIND_MW, seen("send.opcode", 2, 0));
    assertEquals(0, seen("send.num_sge", 2, 0));
    assertEquals(0xbeef0000L, seen("bind.mw", 2, 0));
    assertEquals(0x12345601, seen("bind.rkey", 2, 0));
    assertEquals(0xfeed0000L, seen("bind.mr", 2, 0));
    assertEquals(0x7000_0100L, seen("bind.addr", 2, 0));
    assertEquals(300, seen("bind.length", 2, 0));
    assertEquals(Ibv.ACCESS_REMOTE_READ, seen("bind.access", 2, 0));
  }

  @Test
  void aRefusedWorkRequestIsReportedByItsIndexAndNothingAfterItIsHandedOver() throws Throwable {
    Verbs.Qp q = fakeQp();
    List<Verbs.SendWr> wrs =
        List.of(
            Verbs.SendWr.send(1, 0, List.of()),
            Verbs.SendWr.send(2, 0, List.of()),
            Verbs.SendWr.send(666, 0, List.of()), // the fake refuses this one
            Verbs.SendWr.send(4, 0, List.of()));
    assertEquals(new Verbs.PostResult(Errno.ENOMEM.number(), 2), VERBS.postSend(q, wrs));
    assertEquals(2, seen("sends", 0, 0));
    List<Verbs.RecvWr> recvs =
        List.of(
            new Verbs.RecvWr(9, List.of(new Verbs.Sge(0x6000_0000L, 256, 0x33))),
            new Verbs.RecvWr(666, List.of()));
    assertEquals(new Verbs.PostResult(Errno.ENOMEM.number(), 1), VERBS.postRecv(q, recvs));
    assertEquals(1, seen("recvs", 0, 0));
    assertEquals(9, seen("recv.wr_id", 0, 0));
    assertEquals(1, seen("recv.num_sge", 0, 0));
    assertEquals(0x6000_0000L, seen("recv.sge.addr", 0, 0));
    assertEquals(256, seen("recv.sge.length", 0, 0));
    assertEquals(0x33, seen("recv.sge.lkey", 0, 0));
  }

  @Test
  void completionsTheProviderWroteAreReadFieldByField() throws Throwable {
    Verbs.Cq c = fakeCq();
    Verbs.Wc[] out = new Verbs.Wc[8];
    assertEquals(2, VERBS.pollCq(c, out));
    assertEquals(8, seen("poll_asked", 0, 0));
    assertEquals(
        new Verbs.Wc(0x1000, Ibv.WC_SUCCESS, Ibv.WC_RDMA_WRITE, 0, 4096, 0xabcd0000, 0x77, 0x99, 0),
        out[0]);
    assertEquals(
        new Verbs.Wc(
            0x1001,
            Ibv.WC_REM_ACCESS_ERR,
            Ibv.WC_RECV,
            0x51,
            4097,
            0xabcd0001,
            0x77,
            0x99,
            Ibv.WC_WITH_INV),
        out[1]);
    assertNull(out[2]);
    assertEquals(0, VERBS.reqNotifyCq(c, true));
    assertEquals(1, seen("solicited", 0, 0));
    assertEquals(0, VERBS.reqNotifyCq(c, false));
    assertEquals(0, seen("solicited", 0, 0));
  }

  @Test
  void memoryWindowsGoThroughTheOpsTableAndAProviderWithoutThemIsEopnotsupp() throws Throwable {
    Verbs.Pd p = fakePd();
    VerbsResult<Verbs.Mw> mw = VERBS.allocMw(p, Ibv.MW_TYPE_2);
    assertEquals(new Verbs.Mw(mw.value().handle(), p, Ibv.MW_TYPE_2, 0x12345600), mw.value());
    assertEquals(Errno.EINVAL.number(), VERBS.allocMw(p, Ibv.MW_TYPE_1).errno());
    assertEquals(0, VERBS.deallocMw(mw.value()));
    setup.invokeExact(0);
    VerbsResult<Verbs.Mw> none = VERBS.allocMw(p, Ibv.MW_TYPE_2);
    assertEquals(Errno.EOPNOTSUPP.number(), none.errno());
    assertEquals(
        "ibv_alloc_mw: the provider has no memory windows: EOPNOTSUPP (95)", none.describe());
  }
}
