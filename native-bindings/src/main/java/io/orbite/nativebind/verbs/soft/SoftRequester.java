package io.orbite.nativebind.verbs.soft;

import io.orbite.nativebind.verbs.Ibv;
import io.orbite.nativebind.verbs.Verbs;
import java.io.BufferedInputStream;
import java.io.BufferedOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * The requester side of one QP: a platform daemon thread {@code soft-qp-<qpn>} that takes the send
 * queue's head, executes it and completes it, strictly one WR at a time in post order.
 *
 * <p>BIND_MW and LOCAL_INV execute locally. READ, WRITE and SEND go to the peer device's responder
 * over this QP's own TCP connection, opened at the first such WR after RTR (bound to the device's
 * address, connecting to the address in the QP's {@code dgid}); a WR completes only when its answer
 * is back, so a WRITE's or SEND's CQE means the bytes are at the target and a READ's that they are
 * in the local SGEs. Answers are awaited for the IB ACK timeout ({@code 4.096 us << timeout}) times
 * {@code retryCnt + 1} ({@code timeout} 0: forever); the connect for that long, at least one second
 * (ten with {@code timeout} 0). A refused or failed connect, a lost connection, a refused hello or
 * an answer that does not come in time complete the WR {@code WC_RETRY_EXC_ERR} and move the QP to
 * ERR. An RNR NAK is retried after the responder's RNR timer ({@code minRnrTimer}, the IB table: 1
 * is 10 us, 0 is 655 ms) up to {@code rnrRetry} times, 7 meaning without end (as in IB), then
 * {@code WC_RNR_RETRY_EXC_ERR}. Under {@link SoftFaults#nullWire} a READ or WRITE completes as soon
 * as its local SGEs resolve, and nothing goes to the wire.
 */
final class SoftRequester implements Runnable {
  private record Link(Socket socket, DataInputStream in, DataOutputStream out) {
    void close() {
      try {
        socket.close();
      } catch (IOException e) {
        // closing anyway
      }
    }
  }

  /** What a remote WR sends and how its answer is applied. */
  private record Plan(SoftWire.Request request, List<MemorySegment> readTargets, int interruptAt) {}

  private static final int WAIT_FOREVER_CONNECT_MILLIS = 10_000;

  private final SoftQp qp;
  private final Thread thread;
  private Link link;
  private boolean dropped;

  SoftRequester(SoftQp qp) {
    this.qp = qp;
    this.thread = Thread.ofPlatform().daemon().name("soft-qp-" + qp.qpNum).unstarted(this);
  }

  void start() {
    thread.start();
  }

  /** Waits up to {@code millis} for the thread to end after the QP was destroyed. */
  void join(long millis) {
    try {
      thread.join(millis);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  /** Closes the connection (under the lock); the WR in flight, if any, fails. */
  void disconnect() {
    if (link != null) {
      link.close();
      link = null;
    }
  }

  /** The fault: the connection is lost; the WR in flight or the next one fails. */
  void drop() {
    dropped = true;
    disconnect();
    qp.changed.signalAll();
  }

  /** After RESET the QP may connect again. */
  void rearm() {
    dropped = false;
  }

  @Override
  public void run() {
    while (true) {
      try {
        if (!step()) {
          return;
        }
      } catch (InterruptedException e) {
        return;
      } catch (RuntimeException | Error e) {
        failHead();
      }
    }
  }

  /** Something unexpected: the head WR fails {@code WC_GENERAL_ERR} and the QP goes to ERR. */
  private void failHead() {
    qp.lock.lock();
    try {
      SoftQp.SendItem head = qp.sq.peek();
      if (!qp.destroyed && head != null) {
        qp.fail(head, Ibv.WC_GENERAL_ERR);
      } else if (!qp.destroyed) {
        qp.toError();
      }
    } finally {
      qp.lock.unlock();
    }
  }

  /** Executes the head WR; false once the QP is destroyed. */
  private boolean step() throws InterruptedException {
    SoftQp.SendItem item;
    Plan plan;
    qp.lock.lock();
    try {
      while (!qp.destroyed && (qp.state != Ibv.QPS_RTS || qp.sq.isEmpty())) {
        qp.changed.await();
      }
      if (qp.destroyed) {
        return false;
      }
      item = qp.sq.peek();
      if (qp.device.portState(qp.port) != Ibv.PORT_ACTIVE || !qp.sourceGidValid()) {
        qp.fail(item, Ibv.WC_RETRY_EXC_ERR);
        return true;
      }
      plan = plan(item);
      if (plan == null) {
        return true;
      }
    } finally {
      qp.lock.unlock();
    }
    int rnrRetries = 0;
    while (true) {
      SoftWire.Response response = exchange(item, plan);
      qp.lock.lock();
      try {
        if (qp.destroyed) {
          return false;
        }
        if (item.done) {
          return true;
        }
        if (response == null) {
          disconnect();
          qp.fail(item, Ibv.WC_RETRY_EXC_ERR);
          return true;
        }
        if (response.code() != SoftWire.NAK_RNR) {
          finish(item, plan, response);
          return true;
        }
        if (qp.rnrRetry != 7 && rnrRetries >= qp.rnrRetry) {
          qp.fail(item, Ibv.WC_RNR_RETRY_EXC_ERR);
          return true;
        }
        rnrRetries++;
        long left = SoftWire.rnrDelayNanos(response.rnrTimer());
        while (left > 0 && !qp.destroyed && !item.done) {
          left = qp.changed.awaitNanos(left);
        }
        if (qp.destroyed) {
          return false;
        }
        if (item.done) {
          return true;
        }
      } finally {
        qp.lock.unlock();
      }
    }
  }

  /**
   * Runs {@code item} at its post, on the posting thread, when it is the only WR on the send queue
   * (so this thread is not executing one) and needs no wire: a BIND_MW, a LOCAL_INV, or a READ or
   * WRITE under {@link SoftFaults#nullWire}. It completes as it would here, in the same order, one
   * thread hand-off sooner. Under the lock.
   *
   * @return whether it ran (else the thread runs it)
   */
  boolean runsAtPost(SoftQp.SendItem item) {
    int op = item.wr.opcode();
    boolean local =
        op == Ibv.WR_BIND_MW
            || op == Ibv.WR_LOCAL_INV
            || ((op == Ibv.WR_RDMA_READ || op == Ibv.WR_RDMA_WRITE) && qp.faults.nullWire());
    if (!local || qp.device.portState(qp.port) != Ibv.PORT_ACTIVE || !qp.sourceGidValid()) {
      return false;
    }
    item.ranAtPost = true;
    if (plan(item) == null) {
      return true;
    }
    item.ranAtPost = false;
    return false;
  }

  /** Runs a local WR or fails a WR (null), or says what to send. Under the lock. */
  private Plan plan(SoftQp.SendItem item) {
    Verbs.SendWr wr = item.wr;
    switch (wr.opcode()) {
      case Ibv.WR_BIND_MW -> {
        SoftMemory.Window w = item.window != null && item.window.live ? item.window : null;
        SoftMemory.Region r = item.region != null && item.region.live ? item.region : null;
        int status = qp.device.memory.bind(qp, wr.bind(), w, r);
        if (status == Ibv.WC_SUCCESS) {
          qp.complete(item, status, 0);
        } else {
          qp.fail(item, status);
        }
        return null;
      }
      case Ibv.WR_LOCAL_INV -> {
        SoftMemory.Window w = qp.device.memory.boundWindow(qp.pd, wr.immOrInvalidate());
        if (w == null) {
          qp.fail(item, Ibv.WC_MW_BIND_ERR);
        } else {
          w.unbind();
          qp.complete(item, Ibv.WC_SUCCESS, 0);
        }
        return null;
      }
      case Ibv.WR_RDMA_READ -> {
        List<MemorySegment> targets = qp.buffers.targets(wr.sgl());
        if (targets == null) {
          qp.fail(item, Ibv.WC_LOC_PROT_ERR);
          return null;
        }
        long length = SoftBuffers.capacity(targets);
        if (length > SoftWire.MAX_PAYLOAD) {
          qp.fail(item, Ibv.WC_LOC_LEN_ERR);
          return null;
        }
        if (qp.faults.nullWire()) {
          qp.complete(item, Ibv.WC_SUCCESS, (int) length);
          return null;
        }
        int interrupt = qp.faults.takeInterrupt(qp.qpNum, wr.wrId());
        SoftWire.Request request =
            new SoftWire.Request(
                SoftWire.OP_READ, wr.remoteAddr(), wr.rkey(), (int) length, 0, 0, new byte[0]);
        return new Plan(request, targets, interrupt);
      }
      default -> {
        if (wr.opcode() == Ibv.WR_RDMA_WRITE && qp.faults.nullWire()) {
          completeNullWrite(item);
          return null;
        }
        byte[] payload = item.inline != null ? item.inline : qp.buffers.gather(wr.sgl());
        if (payload == null) {
          qp.fail(item, Ibv.WC_LOC_PROT_ERR);
          return null;
        }
        boolean write =
            wr.opcode() == Ibv.WR_RDMA_WRITE || wr.opcode() == Ibv.WR_RDMA_WRITE_WITH_IMM;
        int flags = 0;
        if (wr.opcode() == Ibv.WR_RDMA_WRITE_WITH_IMM || wr.opcode() == Ibv.WR_SEND_WITH_IMM) {
          flags |= SoftWire.FLAG_IMM;
        }
        if (wr.opcode() == Ibv.WR_SEND_WITH_INV) {
          flags |= SoftWire.FLAG_INV;
        }
        int interrupt = write ? qp.faults.takeInterrupt(qp.qpNum, wr.wrId()) : -1;
        byte[] sent = payload;
        if (interrupt >= 0 && interrupt < payload.length) {
          sent = new byte[interrupt];
          System.arraycopy(payload, 0, sent, 0, interrupt);
        }
        SoftWire.Request request =
            new SoftWire.Request(
                write ? SoftWire.OP_WRITE : SoftWire.OP_SEND,
                write ? wr.remoteAddr() : 0,
                write ? wr.rkey() : 0,
                payload.length,
                flags,
                wr.immOrInvalidate(),
                sent);
        return new Plan(request, null, interrupt);
      }
    }
  }

  /**
   * A WRITE under {@link SoftFaults#nullWire}: its local SGEs resolve as a gather would, without
   * the copy, then it completes; nothing is sent. Under the lock.
   */
  private void completeNullWrite(SoftQp.SendItem item) {
    long length =
        item.inline != null ? item.inline.length : qp.buffers.readableLength(item.wr.sgl());
    if (length < 0) {
      qp.fail(item, Ibv.WC_LOC_PROT_ERR);
    } else {
      qp.complete(item, Ibv.WC_SUCCESS, (int) length);
    }
  }

  /** Applies a non-RNR answer to the head WR. Under the lock. */
  private void finish(SoftQp.SendItem item, Plan plan, SoftWire.Response response) {
    switch (response.code()) {
      case SoftWire.ACK -> {
        SoftWire.Request request = plan.request();
        if (request.op() == SoftWire.OP_READ) {
          List<MemorySegment> targets = qp.buffers.targets(item.wr.sgl());
          if (targets == null) {
            qp.fail(item, Ibv.WC_LOC_PROT_ERR);
            return;
          }
          if (response.payload().length != request.length()) {
            qp.fail(item, Ibv.WC_BAD_RESP_ERR);
            return;
          }
          int count =
              plan.interruptAt() >= 0
                  ? Math.min(plan.interruptAt(), request.length())
                  : request.length();
          SoftBuffers.scatter(response.payload(), count, targets);
          qp.device.payloadBytes.add(count);
        } else if (request.op() == SoftWire.OP_WRITE) {
          qp.device.payloadBytes.add(request.payload().length);
        }
        if (plan.interruptAt() >= 0) {
          qp.toError();
        } else {
          qp.complete(item, Ibv.WC_SUCCESS, request.length());
        }
      }
      case SoftWire.NAK_ACCESS -> qp.fail(item, Ibv.WC_REM_ACCESS_ERR);
      case SoftWire.NAK_INV_REQ -> qp.fail(item, Ibv.WC_REM_INV_REQ_ERR);
      case SoftWire.NAK_OP -> qp.fail(item, Ibv.WC_REM_OP_ERR);
      case SoftWire.NAK_NOT_READY -> {
        disconnect();
        qp.fail(item, Ibv.WC_RETRY_EXC_ERR);
      }
      default -> qp.fail(item, Ibv.WC_BAD_RESP_ERR);
    }
  }

  /** Sends the request and reads its answer, connecting first if need be; null when lost. */
  private SoftWire.Response exchange(SoftQp.SendItem item, Plan plan) throws InterruptedException {
    Link current;
    int timeoutMillis;
    InetSocketAddress peer;
    SoftWire.Hello hello;
    qp.lock.lock();
    try {
      while (qp.faults.stalled(qp.qpNum) && !qp.destroyed && !item.done && !dropped) {
        qp.changed.await(100, TimeUnit.MILLISECONDS);
      }
      if (qp.destroyed || item.done || dropped) {
        return null;
      }
      current = link;
      timeoutMillis = SoftWire.responseTimeoutMillis(qp.timeout, qp.retryCnt);
      peer = SoftGid.decode(qp.av.dgid()).orElse(null);
      hello = new SoftWire.Hello(qp.qpNum, qp.destQpNum, qp.sourceGid());
    } finally {
      qp.lock.unlock();
    }
    try {
      if (current == null) {
        if (peer == null) {
          return null;
        }
        current = connect(peer, timeoutMillis, hello);
        if (current == null) {
          return null;
        }
        qp.lock.lock();
        try {
          if (qp.destroyed || item.done || dropped || link != null) {
            current.close();
            return null;
          }
          link = current;
        } finally {
          qp.lock.unlock();
        }
      }
      SoftWire.writeRequest(current.out(), plan.request());
      return SoftWire.readResponse(current.in());
    } catch (IOException e) {
      return null;
    }
  }

  private Link connect(InetSocketAddress peer, int timeoutMillis, SoftWire.Hello hello)
      throws IOException {
    Socket socket = new Socket();
    try {
      socket.setTcpNoDelay(true);
      socket.bind(new InetSocketAddress(qp.device.address(), 0));
      int connectMillis =
          timeoutMillis == 0 ? WAIT_FOREVER_CONNECT_MILLIS : Math.max(timeoutMillis, 1000);
      socket.connect(peer, connectMillis);
      socket.setSoTimeout(timeoutMillis);
      Link l =
          new Link(
              socket,
              new DataInputStream(new BufferedInputStream(socket.getInputStream())),
              new DataOutputStream(new BufferedOutputStream(socket.getOutputStream())));
      SoftWire.writeHello(l.out(), hello);
      SoftWire.Response answer = SoftWire.readResponse(l.in());
      if (answer.code() != SoftWire.ACK) {
        l.close();
        return null;
      }
      return l;
    } catch (IOException e) {
      socket.close();
      throw e;
    }
  }
}
