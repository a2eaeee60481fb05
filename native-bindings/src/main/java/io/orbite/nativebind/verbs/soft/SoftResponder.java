package io.orbite.nativebind.verbs.soft;

import io.orbite.nativebind.verbs.Ibv;
import io.orbite.nativebind.verbs.Verbs;
import java.io.BufferedInputStream;
import java.io.BufferedOutputStream;
import java.io.Closeable;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.locks.ReentrantLock;

/**
 * The responder of one device: a {@link ServerSocketChannel} on the device's address, accepted by a
 * daemon thread {@code soft-<device>-accept}; each connection (one per requester QP) is served by a
 * daemon thread {@code soft-<device>-conn-<n>}, one request at a time.
 *
 * <p>The hello names the target QP: it must exist, be RTR or RTS, have the sender as its {@code
 * destQpNum} and {@code dgid}, and its port must be ACTIVE; else the hello is refused and the
 * connection closed. Every request checks that again, then: a WRITE needs its rkey to authorize the
 * whole range for remote write (an MR's rkey, or a type-2 MW bound on this QP, see {@link
 * SoftMemory}); a READ for remote read; a refusal touches nothing, answers {@link
 * SoftWire#NAK_ACCESS} and moves the target QP to ERR with {@code EVENT_QP_ACCESS_ERR}. A SEND (and
 * a WRITE with immediate) consumes the head of the target's receive queue; with none posted it
 * answers {@link SoftWire#NAK_RNR} with the target's {@code minRnrTimer}. A SEND larger than the
 * receive's SGEs completes the receive {@code WC_LOC_LEN_ERR}, writes nothing, answers {@link
 * SoftWire#NAK_INV_REQ} and moves the target to ERR; receive SGEs that do not resolve complete it
 * {@code WC_LOC_PROT_ERR} and answer {@link SoftWire#NAK_OP}. A SEND with invalidate whose rkey is
 * not a type-2 MW bound on the target QP answers {@link SoftWire#NAK_OP} and moves the target to
 * ERR (the receive is flushed); otherwise the MW is unbound as the receive completes with {@code
 * WC_WITH_INV}. The answer goes back only once the bytes are in place and the receive's completion
 * is queued. A target QP that leaves RTR/RTS, or is destroyed, has its connections closed.
 */
final class SoftResponder {
  /** One accepted connection and the QP it serves. */
  final class Connection implements Runnable {
    private final SocketChannel channel;
    private final Thread thread;
    private SoftQp target;
    private boolean replying;
    private int srcQpn;

    Connection(SocketChannel channel, int n) {
      this.channel = channel;
      this.thread =
          Thread.ofPlatform().daemon().name("soft-" + device.name() + "-conn-" + n).unstarted(this);
    }

    /** Closes the connection unless it is answering a request (it closes itself after). */
    void closeUnlessReplying() {
      if (!replying) {
        close();
      }
    }

    void close() {
      try {
        channel.close();
      } catch (IOException e) {
        // closing anyway
      }
    }

    @Override
    public void run() {
      try {
        Socket socket = channel.socket();
        socket.setTcpNoDelay(true);
        DataInputStream in = new DataInputStream(new BufferedInputStream(socket.getInputStream()));
        DataOutputStream out =
            new DataOutputStream(new BufferedOutputStream(socket.getOutputStream()));
        if (!greet(in, out)) {
          return;
        }
        while (true) {
          SoftWire.Request request = SoftWire.readRequest(in);
          SoftWire.Response response;
          lock.lock();
          try {
            replying = true;
            response = serve(request);
          } finally {
            lock.unlock();
          }
          SoftWire.writeResponse(out, response);
          lock.lock();
          try {
            replying = false;
            if (!ready(target)) {
              return;
            }
          } finally {
            lock.unlock();
          }
        }
      } catch (IOException | RuntimeException e) {
        // the connection ends
      } finally {
        lock.lock();
        try {
          if (target != null) {
            target.serving.remove(this);
          }
          connections.remove(this);
        } finally {
          lock.unlock();
        }
        close();
      }
    }

    private boolean greet(DataInputStream in, DataOutputStream out) throws IOException {
      SoftWire.Hello hello = SoftWire.readHello(in);
      boolean ok;
      lock.lock();
      try {
        SoftQp qp = device.qps.get(hello.dstQpn());
        ok =
            ready(qp)
                && qp.destQpNum == hello.srcQpn()
                && qp.av != null
                && hello.srcGid().equals(qp.av.dgid());
        if (ok) {
          target = qp;
          srcQpn = hello.srcQpn();
          qp.serving.add(this);
        }
      } finally {
        lock.unlock();
      }
      SoftWire.writeResponse(out, SoftWire.Response.of(ok ? SoftWire.ACK : SoftWire.NAK_NOT_READY));
      return ok;
    }

    private SoftWire.Response serve(SoftWire.Request r) {
      if (!ready(target)) {
        return SoftWire.Response.of(SoftWire.NAK_NOT_READY);
      }
      return switch (r.op()) {
        case SoftWire.OP_WRITE -> write(r);
        case SoftWire.OP_READ -> read(r);
        default -> send(r);
      };
    }

    private SoftWire.Response write(SoftWire.Request r) {
      boolean imm = (r.flags() & SoftWire.FLAG_IMM) != 0;
      if (imm && target.rq.isEmpty()) {
        return rnr();
      }
      MemorySegment dst =
          device.memory.remote(
              target, r.rkey(), r.remoteAddr(), r.length(), Ibv.ACCESS_REMOTE_WRITE);
      if (dst == null) {
        target.accessError();
        return SoftWire.Response.of(SoftWire.NAK_ACCESS);
      }
      MemorySegment.copy(r.payload(), 0, dst, ValueLayout.JAVA_BYTE, 0, r.payload().length);
      if (imm) {
        target.completeRecv(
            target.rq.poll(),
            Ibv.WC_SUCCESS,
            Ibv.WC_RECV_RDMA_WITH_IMM,
            r.length(),
            r.immOrInv(),
            srcQpn,
            Ibv.WC_WITH_IMM);
      }
      return SoftWire.Response.of(SoftWire.ACK);
    }

    private SoftWire.Response read(SoftWire.Request r) {
      MemorySegment src =
          device.memory.remote(
              target, r.rkey(), r.remoteAddr(), r.length(), Ibv.ACCESS_REMOTE_READ);
      if (src == null) {
        target.accessError();
        return SoftWire.Response.of(SoftWire.NAK_ACCESS);
      }
      return new SoftWire.Response(SoftWire.ACK, 0, src.toArray(ValueLayout.JAVA_BYTE));
    }

    private SoftWire.Response send(SoftWire.Request r) {
      if (target.rq.isEmpty()) {
        return rnr();
      }
      SoftMemory.Window invalidate = null;
      if ((r.flags() & SoftWire.FLAG_INV) != 0) {
        invalidate = device.memory.boundWindow(target.pd, r.immOrInv());
        if (invalidate == null || invalidate.qp != target) {
          target.toError();
          return SoftWire.Response.of(SoftWire.NAK_OP);
        }
      }
      Verbs.RecvWr recv = target.rq.poll();
      List<MemorySegment> parts = target.buffers.targets(recv.sgl());
      if (parts == null) {
        target.completeRecv(recv, Ibv.WC_LOC_PROT_ERR, Ibv.WC_RECV, 0, 0, srcQpn, 0);
        target.toError();
        return SoftWire.Response.of(SoftWire.NAK_OP);
      }
      if (SoftBuffers.capacity(parts) < r.payload().length) {
        target.completeRecv(recv, Ibv.WC_LOC_LEN_ERR, Ibv.WC_RECV, 0, 0, srcQpn, 0);
        target.toError();
        return SoftWire.Response.of(SoftWire.NAK_INV_REQ);
      }
      SoftBuffers.scatter(r.payload(), r.payload().length, parts);
      int flags = 0;
      int immOrInv = 0;
      if ((r.flags() & SoftWire.FLAG_IMM) != 0) {
        flags = Ibv.WC_WITH_IMM;
        immOrInv = r.immOrInv();
      } else if (invalidate != null) {
        invalidate.unbind();
        flags = Ibv.WC_WITH_INV;
        immOrInv = r.immOrInv();
      }
      target.completeRecv(
          recv, Ibv.WC_SUCCESS, Ibv.WC_RECV, r.payload().length, immOrInv, srcQpn, flags);
      return SoftWire.Response.of(SoftWire.ACK);
    }

    private SoftWire.Response rnr() {
      return new SoftWire.Response(SoftWire.NAK_RNR, target.minRnrTimer, SoftWire.Response.NONE);
    }
  }

  private final SoftDevice device;
  private final ReentrantLock lock;
  private final Set<Connection> connections = new LinkedHashSet<>();
  private ServerSocketChannel server;
  private Thread acceptor;
  private int accepted;

  SoftResponder(SoftDevice device, ReentrantLock lock) {
    this.device = device;
    this.lock = lock;
  }

  /** Binds and starts accepting; answers the bound TCP port. Under the lock. */
  int start(int port) throws IOException {
    server = ServerSocketChannel.open();
    try {
      server.bind(new InetSocketAddress(device.address(), port));
    } catch (IOException e) {
      server.close();
      throw e;
    }
    ServerSocketChannel s = server;
    acceptor =
        Thread.ofPlatform()
            .daemon()
            .name("soft-" + device.name() + "-accept")
            .start(() -> accept(s));
    return ((InetSocketAddress) server.getLocalAddress()).getPort();
  }

  private void accept(ServerSocketChannel s) {
    while (true) {
      SocketChannel channel;
      try {
        channel = s.accept();
      } catch (IOException e) {
        return;
      }
      lock.lock();
      try {
        if (!s.isOpen()) {
          closeQuietly(channel);
          return;
        }
        Connection c = new Connection(channel, ++accepted);
        connections.add(c);
        c.thread.start();
      } finally {
        lock.unlock();
      }
    }
  }

  /** Closes the server and every connection (under the lock); the threads to wait for. */
  List<Thread> stop() {
    closeQuietly(server);
    List<Thread> threads = new ArrayList<>();
    threads.add(acceptor);
    for (Connection c : connections) {
      c.close();
      threads.add(c.thread);
    }
    return threads;
  }

  private static boolean ready(SoftQp qp) {
    return qp != null && qp.receiving() && qp.device.portState(qp.port) == Ibv.PORT_ACTIVE;
  }

  private static void closeQuietly(Closeable c) {
    try {
      c.close();
    } catch (IOException e) {
      // closing anyway
    }
  }
}
